package metadata

// ElectLeaders (key 43), v0-v2 (KIP-460).
//
// This node leads every partition and is every partition's only (and so
// preferred) replica, so no election is ever needed. Each named partition
// answers ELECTION_NOT_NEEDED (84), as Kafka does for a partition whose
// preferred replica already leads, and unknown topics or partitions
// UNKNOWN_TOPIC_OR_PARTITION; the top-level error (v1+) is NONE. A null
// topic list (every partition) answers no partitions: Kafka lists only the
// partitions it elected. v0 is preferred election; v1+ election type 0
// (preferred) or 1 (unclean) both find the leader alive; other types
// answer INVALID_REQUEST at the top level.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) electLeadersAPI() wire.API {
	return wire.API{Key: 43, Min: 0, Max: 2, Handle: h.handleElectLeaders}
}

func (h *handlers) handleElectLeaders(r *wire.Request) any {
	req := r.Req.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if r.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if !r.AllowedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	im := h.h.Image()
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		ti := im.Topics[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			var err error
			if ti == nil || p < 0 || int(p) >= len(ti.Partitions) {
				err = fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, t.Topic, p)
			} else {
				err = fmt.Errorf("%w: leader %d is the preferred replica of %s-%d", kerr.ElectionNotNeeded, h.h.Settings().NodeID, t.Topic, p)
			}
			rp.ErrorCode = wire.ErrCode(err)
			rp.ErrorMessage = wire.ErrMessage(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
