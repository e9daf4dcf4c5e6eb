package appliance

// CreateTopics (key 19), v0-v7.
//
// Each topic is validated (name, partitions, replication factor, configs)
// and created through the controller; errors are per topic with Kafka's
// codes (TOPIC_ALREADY_EXISTS 36, INVALID_PARTITIONS 37,
// INVALID_REPLICATION_FACTOR 38, INVALID_CONFIG 40, INVALID_TOPIC_EXCEPTION
// 17) and, from v1, a message. Manual replica assignments are refused
// (INVALID_REQUEST): placement is the broker's. validate_only (v1+) checks
// without creating. v5+ returns the resulting partition count, replication
// factor and configs; v7 the topic id. A topic named twice in one request
// gets INVALID_REQUEST for each occurrence.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiDef{key: 19, min: 0, max: 7, handle: handleCreateTopics})
}

func handleCreateTopics(b *Broker, r *request) any {
	req := r.req.(*kmsg.CreateTopicsRequest)
	return deferred(func() any {
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		seen := map[string]int{}
		for _, t := range req.Topics {
			seen[t.Topic]++
		}
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.NumPartitions = -1
			rt.ReplicationFactor = -1
			fail := func(err error) {
				rt.ErrorCode = errCode(err)
				msg := err.Error()
				rt.ErrorMessage = &msg
			}
			switch {
			case seen[t.Topic] > 1:
				fail(fmt.Errorf("%w: topic %q is named more than once", kerr.InvalidRequest, t.Topic))
			case len(t.ReplicaAssignment) > 0:
				fail(fmt.Errorf("%w: manual replica assignment is not supported; placement is chosen by the broker", kerr.InvalidRequest))
			default:
				cfgs := map[string]string{}
				var cfgErr error
				for _, c := range t.Configs {
					if c.Value == nil {
						continue
					}
					if _, ok := topicConfigDefFor(c.Name); !ok {
						cfgErr = fmt.Errorf("%w: unknown topic config %q", kerr.InvalidConfig, c.Name)
						break
					}
					cfgs[c.Name] = *c.Value
				}
				if cfgErr != nil {
					fail(cfgErr)
					break
				}
				ti, err := b.createTopic(TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, Configs: cfgs}, req.ValidateOnly)
				if err != nil {
					fail(err)
					break
				}
				rt.TopicID = ti.ID
				rt.NumPartitions = int32(len(ti.Partitions))
				rt.ReplicationFactor = 1
				eff := b.effectiveTopicConfigs(ti)
				for _, name := range topicConfigNames() {
					c := kmsg.NewCreateTopicsResponseTopicConfig()
					c.Name = name
					v := eff[name]
					c.Value = &v
					c.Source = 5 // DEFAULT_CONFIG
					if _, ok := ti.Configs[name]; ok {
						c.Source = 1 // DYNAMIC_TOPIC_CONFIG
					}
					rt.Configs = append(rt.Configs, c)
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}
