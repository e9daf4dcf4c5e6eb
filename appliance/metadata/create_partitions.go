package metadata

// CreatePartitions (key 37), v0-v3.
//
// Grows each topic to count partitions through the controller: the new
// partitions are placed on the least loaded shards, committed as one
// metadata batch and opened before the answer. validate_only checks without
// creating. Errors are per topic, with a message: UNKNOWN_TOPIC_OR_PARTITION
// (3) for an unknown topic, INVALID_PARTITIONS (37) when count is not above
// the current number. A topic named twice in one request answers one
// INVALID_REQUEST (42) entry and is not changed, as in Kafka's controller.
// A manual assignment is accepted only where it is what placement would do
// anyway: one entry per new partition, each naming this broker alone;
// otherwise INVALID_REPLICA_ASSIGNMENT (39), as Kafka answers an assignment
// with an unknown broker or a different replication factor. timeout_ms is
// not needed: the partitions are open when the answer is sent.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) createPartitionsAPI() wire.API {
	return wire.API{Key: 37, Min: 0, Max: 3, Handle: h.handleCreatePartitions}
}

func (h *handlers) handleCreatePartitions(r *wire.Request) any {
	req := r.Req.(*kmsg.CreatePartitionsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		seen := map[string]int{}
		for _, t := range req.Topics {
			seen[t.Topic]++
		}
		answered := map[string]bool{}
		for _, t := range req.Topics {
			if answered[t.Topic] {
				continue
			}
			answered[t.Topic] = true
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			var err error
			if seen[t.Topic] > 1 {
				err = fmt.Errorf("%w: duplicate topic name %q", kerr.InvalidRequest, t.Topic)
			} else if err = topicAuthzErr(r, kmsg.ACLOperationAlter, t.Topic); err == nil {
				err = h.createPartitionsTopic(t, req.ValidateOnly)
			}
			rt.ErrorCode = wire.ErrCode(err)
			rt.ErrorMessage = wire.ErrMessage(err)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	})
}

// createPartitionsTopic grows one topic as a CreatePartitions entry asks.
func (h *handlers) createPartitionsTopic(t kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	if t.Assignment != nil {
		ti := h.h.Image().Topics[t.Topic]
		if ti == nil {
			return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, t.Topic)
		}
		if have := int32(len(ti.Partitions)); t.Count > have {
			if err := checkPartitionAssignment(t.Assignment, t.Count-have, h.h.Settings().NodeID); err != nil {
				return err
			}
		}
	}
	return h.ctl.CreatePartitions(t.Topic, t.Count, validateOnly)
}

// checkPartitionAssignment accepts a manual assignment of added new
// partitions only if every one names nodeID alone.
func checkPartitionAssignment(as []kmsg.CreatePartitionsRequestTopicAssignment, added int32, nodeID int32) error {
	if int32(len(as)) != added {
		return fmt.Errorf("%w: attempted to add %d additional partitions, but %d assignments were specified", kerr.InvalidReplicaAssignment, added, len(as))
	}
	for i, a := range as {
		if len(a.Replicas) != 1 {
			return fmt.Errorf("%w: assignment %d has %d replicas; partitions of this single-broker cluster have 1 replica", kerr.InvalidReplicaAssignment, i, len(a.Replicas))
		}
		if a.Replicas[0] != nodeID {
			return fmt.Errorf("%w: assignment %d includes broker %d, but no such broker is registered (this broker is %d)", kerr.InvalidReplicaAssignment, i, a.Replicas[0], nodeID)
		}
	}
	return nil
}
