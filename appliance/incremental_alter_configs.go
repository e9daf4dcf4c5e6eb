package appliance

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
// topic UNKNOWN_TOPIC_OR_PARTITION (3). Broker resources (type 4) answer
// INVALID_REQUEST: broker configs are static and live in server.properties.
// Group resources (type 32) take SET and DELETE (share.Config.Changes).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var incrementalAlterConfigsAPI = apiDef{key: 44, min: 0, max: 1, handle: handleIncrementalAlterConfigs}

func handleIncrementalAlterConfigs(b *Broker, r *wire.Request) any {
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
			} else if err = b.configResourceAuthzErr(r, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); err == nil {
				err = b.incrementalAlterResource(rr, req.ValidateOnly)
			}
			res.ErrorCode = wire.ErrCode(err)
			res.ErrorMessage = wire.ErrMessage(err)
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	})
}

// incrementalAlterResource applies one IncrementalAlterConfigs resource.
func (b *Broker) incrementalAlterResource(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
		return b.alterGroupConfigs(rr.ResourceName, rr.Configs, validateOnly)
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
	return b.alterTopicConfigsWith(rr.ResourceName, func(t *TopicImage) ([]ConfigChange, error) {
		return incrementalConfigChanges(rr.Configs, b.effectiveTopicConfigs(t))
	}, false, validateOnly)
}

// incrementalConfigChanges turns IncrementalAlterConfigs operations into
// ConfigChanges against a topic's effective configs. Values are validated
// later, by alterTopicConfigs.
func incrementalConfigChanges(ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, effective map[string]string) ([]ConfigChange, error) {
	changes := make([]ConfigChange, 0, len(ops))
	for _, c := range ops {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			changes = append(changes, ConfigChange{Key: c.Name, Value: c.Value})
		case kmsg.IncrementalAlterConfigOpDelete:
			changes = append(changes, ConfigChange{Key: c.Name})
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			d, ok := topicConfigDefFor(c.Name)
			if !ok {
				return nil, fmt.Errorf("%w: unknown topic config %q", kerr.InvalidConfig, c.Name)
			}
			cur, ok := effective[c.Name]
			if !ok {
				cur = d.def
			}
			v, err := applyListOp(d, c.Op, cur, *c.Value)
			if err != nil {
				return nil, err
			}
			changes = append(changes, ConfigChange{Key: c.Name, Value: &v})
		default:
			return nil, fmt.Errorf("%w: unknown operation %d for config %q", kerr.InvalidRequest, c.Op, c.Name)
		}
	}
	return changes, nil
}

// applyListOp computes APPEND or SUBTRACT of the comma-separated elements
// of operand to cur, for a LIST config, as Kafka's controller does.
func applyListOp(d topicConfigDef, op kmsg.IncrementalAlterConfigOp, cur, operand string) (string, error) {
	if d.kind != "list" {
		return "", fmt.Errorf("%w: cannot %s to key %s because its type is not LIST", kerr.InvalidConfig, listOpName(op), d.name)
	}
	have := splitConfigList(cur)
	switch op {
	case kmsg.IncrementalAlterConfigOpAppend:
		for _, v := range splitConfigList(operand) {
			if !slices.Contains(have, v) {
				have = append(have, v)
			}
		}
	case kmsg.IncrementalAlterConfigOpSubtract:
		drop := splitConfigList(operand)
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

func listOpName(op kmsg.IncrementalAlterConfigOp) string {
	if op == kmsg.IncrementalAlterConfigOpAppend {
		return "APPEND"
	}
	return "SUBTRACT"
}

// splitConfigList splits a LIST config value on commas, trimming spaces and
// dropping empty elements.
func splitConfigList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
