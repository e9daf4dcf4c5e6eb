package metadata

// IncrementalAlterConfigs (key 44), v0-v1 (KIP-339).
//
// For a topic resource (type 2) each config carries an operation: SET (0)
// makes the value the topic's override, DELETE (1) removes the override
// (the broker default applies again), APPEND (2) and SUBTRACT (3) add or
// remove comma-separated elements of a LIST config (cleanup.policy),
// computed against the topic's effective value (its override, else the
// broker default); APPEND skips elements already present, SUBTRACT removes
// every occurrence. Overrides not named are left alone. The changes of one
// resource are committed as one metadata batch; validate_only checks
// without committing.
//
// Errors follow Kafka's ConfigAdminManager and controller: a resource named
// twice answers INVALID_REQUEST (42) for each occurrence, as do duplicate
// config keys, a null value for an operation other than DELETE, and an
// unknown operation; APPEND/SUBTRACT on a config that is not a list, an
// unknown config or an invalid value answer INVALID_CONFIG (40); an unknown
// topic UNKNOWN_TOPIC_OR_PARTITION (3). Broker resources (type 4), "" for
// the cluster default or this node's id, take the same operations on the
// broker properties that may change without a restart (broker_configs.go).
// Group resources (type 32) take SET and DELETE (Host.AlterGroupConfigs).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) incrementalAlterConfigsAPI() wire.API {
	return wire.API{Key: 44, Min: 0, Max: 1, Handle: h.handleIncrementalAlterConfigs}
}

func (h *handlers) handleIncrementalAlterConfigs(r *wire.Request) any {
	req := r.Req.(*kmsg.IncrementalAlterConfigsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		seen := countResources(req.Resources, func(rr kmsg.IncrementalAlterConfigsRequestResource) configResource {
			return configResource{rr.ResourceType, rr.ResourceName}
		})
		for _, rr := range req.Resources {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType = rr.ResourceType
			res.ResourceName = rr.ResourceName
			var err error
			if seen[configResource{rr.ResourceType, rr.ResourceName}] > 1 {
				err = fmt.Errorf("%w: each resource must appear at most once", kerr.InvalidRequest)
			} else if err = configResourceAuthzErr(r, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); err == nil {
				err = h.incrementalAlterResource(rr, req.ValidateOnly)
			}
			res.ErrorCode = wire.ErrCode(err)
			res.ErrorMessage = wire.ErrMessage(err)
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	})
}

// incrementalAlterResource applies one IncrementalAlterConfigs resource.
func (h *handlers) incrementalAlterResource(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
		return h.h.AlterGroupConfigs(rr.ResourceName, rr.Configs, validateOnly)
	}
	keys := make([]string, 0, len(rr.Configs))
	var nulls []string
	for _, c := range rr.Configs {
		keys = append(keys, c.Name)
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if err := checkConfigResource(rr.ResourceType, rr.ResourceName, keys, nulls); err != nil {
		return err
	}
	if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
		return h.ctl.alterBrokerConfigsWith(rr.ResourceName, func(effective func(string) string) ([]ConfigChange, error) {
			return incrementalBrokerChanges(h.h, rr.Configs, effective)
		}, false, validateOnly)
	}
	return h.ctl.alterTopicConfigsWith(rr.ResourceName, func(t *TopicImage) ([]ConfigChange, error) {
		return IncrementalConfigChanges(h.h, rr.Configs, h.h.EffectiveTopicConfigs(t))
	}, false, validateOnly)
}

// IncrementalConfigChanges turns IncrementalAlterConfigs operations into
// ConfigChanges against a topic's effective configs, with the registry c.
// Values are validated later, by Controller.AlterTopicConfigs.
func IncrementalConfigChanges(c Configs, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, effective map[string]string) ([]ConfigChange, error) {
	changes := make([]ConfigChange, 0, len(ops))
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			changes = append(changes, ConfigChange{Key: op.Name, Value: op.Value})
		case kmsg.IncrementalAlterConfigOpDelete:
			changes = append(changes, ConfigChange{Key: op.Name})
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			d, ok := c.TopicConfig(op.Name)
			if !ok {
				return nil, fmt.Errorf("%w: unknown topic config %q", kerr.InvalidConfig, op.Name)
			}
			cur, ok := effective[op.Name]
			if !ok {
				cur = d.Default
			}
			v, err := ApplyListOp(d, op.Op, cur, *op.Value)
			if err != nil {
				return nil, err
			}
			changes = append(changes, ConfigChange{Key: op.Name, Value: &v})
		default:
			return nil, fmt.Errorf("%w: unknown operation %d for config %q", kerr.InvalidRequest, op.Op, op.Name)
		}
	}
	return changes, nil
}

// ApplyListOp computes APPEND or SUBTRACT of the comma-separated elements
// of operand to cur, for a LIST config, as Kafka's controller does.
func ApplyListOp(d TopicConfigDef, op kmsg.IncrementalAlterConfigOp, cur, operand string) (string, error) {
	if d.Kind != "list" {
		return "", fmt.Errorf("%w: cannot %s to key %s because its type is not LIST", kerr.InvalidConfig, ListOpName(op), d.Name)
	}
	have := SplitConfigList(cur)
	switch op {
	case kmsg.IncrementalAlterConfigOpAppend:
		for _, v := range SplitConfigList(operand) {
			if !slices.Contains(have, v) {
				have = append(have, v)
			}
		}
	case kmsg.IncrementalAlterConfigOpSubtract:
		drop := SplitConfigList(operand)
		kept := have[:0]
		for _, v := range have {
			if !slices.Contains(drop, v) {
				kept = append(kept, v)
			}
		}
		have = kept
	}
	return strings.Join(have, ","), nil
}

// ListOpName is the name of an APPEND or SUBTRACT operation in messages.
func ListOpName(op kmsg.IncrementalAlterConfigOp) string {
	if op == kmsg.IncrementalAlterConfigOpAppend {
		return "APPEND"
	}
	return "SUBTRACT"
}

// SplitConfigList splits a LIST config value on commas, trimming spaces and
// dropping empty elements.
func SplitConfigList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
