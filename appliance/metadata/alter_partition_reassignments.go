package metadata

// AlterPartitionReassignments (key 45), v0-v1 (KIP-455, KIP-860).
//
// Every partition lives on this node alone, so the only valid target is
// [node.id], which is where the partition already is: it answers NONE
// at once and nothing moves. A target naming any other broker, the same
// broker twice or no broker answers INVALID_REPLICA_ASSIGNMENT (39), as
// Kafka does for brokers that are not live; a null target (cancel)
// NO_REASSIGNMENT_IN_PROGRESS (85); unknown topics or partitions
// UNKNOWN_TOPIC_OR_PARTITION. v1's allow_replication_factor_change is
// echoed; the replication factor cannot change here anyway.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) alterPartitionReassignmentsAPI() wire.API {
	return wire.API{Key: 45, Min: 0, Max: 1, Handle: h.handleAlterPartitionReassignments}
}

func (h *handlers) handleAlterPartitionReassignments(r *wire.Request) any {
	req := r.Req.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	if !r.AllowedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	im := h.h.Image()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		ti := im.Topics[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			var err error
			switch {
			case ti == nil || p.Partition < 0 || int(p.Partition) >= len(ti.Partitions):
				err = fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, t.Topic, p.Partition)
			case p.Replicas == nil:
				err = fmt.Errorf("%w: %s-%d", kerr.NoReassignmentInProgress, t.Topic, p.Partition)
			case len(p.Replicas) != 1 || p.Replicas[0] != h.h.Settings().NodeID:
				err = fmt.Errorf("%w: replicas %v for %s-%d: the only live broker is node %d", kerr.InvalidReplicaAssignment, p.Replicas, t.Topic, p.Partition, h.h.Settings().NodeID)
			}
			rp.ErrorCode = wire.ErrCode(err)
			rp.ErrorMessage = wire.ErrMessage(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
