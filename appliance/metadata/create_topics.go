package metadata

// CreateTopics (key 19), v0-v7.
//
// Each topic is validated (name, partitions, replication factor, configs)
// and created through the controller; errors are per topic with Kafka's
// codes (TOPIC_ALREADY_EXISTS 36, INVALID_PARTITIONS 37,
// INVALID_REPLICATION_FACTOR 38, INVALID_CONFIG 40, INVALID_TOPIC_EXCEPTION
// 17) and, from v1, a message. A manual replica assignment is accepted when
// it names partitions 0..n-1 once each, every one on this node alone (with
// num_partitions and replication_factor -1, else INVALID_REQUEST; other
// brokers or replicas INVALID_REPLICA_ASSIGNMENT 39), as Kafka's
// single-broker answer would be; placement on shards stays the broker's.
// validate_only (v1+) checks
// without creating. v5+ returns the resulting partition count, replication
// factor and configs; v7 the topic id. A topic named twice in one request
// gets INVALID_REQUEST for each occurrence.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) createTopicsAPI() wire.API {
	return wire.API{Key: 19, Min: 0, Max: 7, Handle: h.handleCreateTopics}
}

func (h *handlers) handleCreateTopics(r *wire.Request) any {
	req := r.Req.(*kmsg.CreateTopicsRequest)
	return wire.Deferred(func() any {
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
				rt.ErrorCode = wire.ErrCode(err)
				msg := err.Error()
				rt.ErrorMessage = &msg
			}
			switch {
			case seen[t.Topic] > 1:
				fail(fmt.Errorf("%w: topic %q is named more than once", kerr.InvalidRequest, t.Topic))
			case createTopicAuthzErr(r, t.Topic) != nil:
				fail(createTopicAuthzErr(r, t.Topic))
			default:
				if len(t.ReplicaAssignment) > 0 {
					n, err := manualAssignmentPartitions(t.ReplicaAssignment, t.NumPartitions, t.ReplicationFactor, h.h.Settings().NodeID)
					if err != nil {
						fail(err)
						break
					}
					t.NumPartitions, t.ReplicationFactor = n, 1
				}
				cfgs := map[string]string{}
				var cfgErr error
				for _, c := range t.Configs {
					if c.Value == nil {
						continue
					}
					if _, ok := h.h.TopicConfig(c.Name); !ok {
						cfgErr = fmt.Errorf("%w: unknown topic config %q", kerr.InvalidConfig, c.Name)
						break
					}
					cfgs[c.Name] = *c.Value
				}
				if cfgErr != nil {
					fail(cfgErr)
					break
				}
				ti, err := h.ctl.CreateTopic(TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, Configs: cfgs}, req.ValidateOnly)
				if err != nil {
					fail(err)
					break
				}
				rt.TopicID = ti.ID
				rt.NumPartitions = int32(len(ti.Partitions))
				rt.ReplicationFactor = 1
				eff := h.h.EffectiveTopicConfigs(ti)
				for _, name := range h.h.TopicConfigNames() {
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

// manualAssignmentPartitions checks a CreateTopics replica assignment on a
// single-node cluster and returns its partition count. Kafka's rules: the
// assignment excludes num_partitions and replication_factor (both -1), names
// partitions 0..n-1 each once, and every replica is a live broker, named
// once; here the only live broker is nodeID, so each partition's replicas
// must be exactly [nodeID].
func manualAssignmentPartitions(as []kmsg.CreateTopicsRequestTopicReplicaAssignment, numPartitions int32, rf int16, nodeID int32) (int32, error) {
	if numPartitions != -1 || rf != -1 {
		return 0, fmt.Errorf("%w: both num_partitions or replication_factor and a replica assignment were set; both cannot be used at the same time", kerr.InvalidRequest)
	}
	seen := make([]bool, len(as))
	for _, a := range as {
		if a.Partition < 0 || int(a.Partition) >= len(as) || seen[a.Partition] {
			return 0, fmt.Errorf("%w: partitions must be numbered 0 to %d, each once; got partition %d", kerr.InvalidReplicaAssignment, len(as)-1, a.Partition)
		}
		seen[a.Partition] = true
		if len(a.Replicas) != 1 || a.Replicas[0] != nodeID {
			return 0, fmt.Errorf("%w: partition %d replicas %v: the only broker is node %d", kerr.InvalidReplicaAssignment, a.Partition, a.Replicas, nodeID)
		}
	}
	return int32(len(as)), nil
}
