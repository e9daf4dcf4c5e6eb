package metadata

// AlterConfigs (key 33), v0-v2.
//
// The legacy, replacing form: for a topic resource (type 2) the configs
// named become the topic's overrides and every other override is removed,
// committed as one metadata batch (validate_only checks without
// committing). Checks follow Kafka's ConfigAdminManager: a resource named
// twice answers INVALID_REQUEST (42) for each occurrence, as do duplicate
// config keys and null values in one resource; an unknown or invalid
// config answers INVALID_CONFIG (40), an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION (3), an illegal name INVALID_TOPIC_EXCEPTION
// (17). Broker resources (type 4), "" for the cluster default or this
// node's id, replace that resource's dynamic broker configs
// (broker_configs.go). Any other resource type answers INVALID_REQUEST.
// Errors carry a message.

import (
	"fmt"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) alterConfigsAPI() wire.API {
	return wire.API{Key: 33, Min: 0, Max: 2, Handle: h.handleAlterConfigs}
}

func (h *handlers) handleAlterConfigs(r *wire.Request) any {
	req := r.Req.(*kmsg.AlterConfigsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		seen := countResources(req.Resources, func(rr kmsg.AlterConfigsRequestResource) configResource {
			return configResource{rr.ResourceType, rr.ResourceName}
		})
		for _, rr := range req.Resources {
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType = rr.ResourceType
			res.ResourceName = rr.ResourceName
			var err error
			if seen[configResource{rr.ResourceType, rr.ResourceName}] > 1 {
				err = fmt.Errorf("%w: each resource must appear at most once", kerr.InvalidRequest)
			} else if err = configResourceAuthzErr(r, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); err == nil {
				err = h.alterConfigsResource(rr, req.ValidateOnly)
			}
			res.ErrorCode = wire.ErrCode(err)
			res.ErrorMessage = wire.ErrMessage(err)
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	})
}

// alterConfigsResource applies one legacy AlterConfigs resource.
func (h *handlers) alterConfigsResource(rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	keys := make([]string, 0, len(rr.Configs))
	var nulls []string
	changes := make([]ConfigChange, 0, len(rr.Configs))
	for _, c := range rr.Configs {
		keys = append(keys, c.Name)
		if c.Value == nil {
			nulls = append(nulls, c.Name)
		}
		changes = append(changes, ConfigChange{Key: c.Name, Value: c.Value})
	}
	if err := checkConfigResource(rr.ResourceType, rr.ResourceName, keys, nulls); err != nil {
		return err
	}
	if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
		return h.ctl.alterBrokerConfigsWith(rr.ResourceName, func(func(string) string) ([]ConfigChange, error) { return changes, nil }, true, validateOnly)
	}
	return h.ctl.AlterTopicConfigs(rr.ResourceName, changes, true, validateOnly)
}

// checkConfigResource applies the checks AlterConfigs and
// IncrementalAlterConfigs share before touching a resource: duplicate
// keys, null values (named in nulls), the resource type and the topic name.
func checkConfigResource(typ kmsg.ConfigResourceType, name string, keys, nulls []string) error {
	dup := map[string]bool{}
	for _, k := range keys {
		if dup[k] {
			return fmt.Errorf("%w: config key %q appears more than once", kerr.InvalidRequest, k)
		}
		dup[k] = true
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: null value not supported for: %s", kerr.InvalidRequest, strings.Join(nulls, ", "))
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if name == "" {
			return fmt.Errorf("%w: default topic resources are not allowed", kerr.InvalidRequest)
		}
		return ValidTopicName(name)
	case kmsg.ConfigResourceTypeBroker:
		return nil // the name and keys are checked by Controller.alterBrokerConfigsWith
	}
	return fmt.Errorf("%w: resource type %d cannot be altered (2 topic)", kerr.InvalidRequest, typ)
}

// configResource names one config resource of an alter request.
type configResource struct {
	t    kmsg.ConfigResourceType
	name string
}

// countResources counts how often each resource appears in an alter
// request: a resource named twice gets INVALID_REQUEST in both alter APIs.
func countResources[R any](rs []R, key func(R) configResource) map[configResource]int {
	seen := make(map[configResource]int, len(rs))
	for _, r := range rs {
		seen[key(r)]++
	}
	return seen
}
