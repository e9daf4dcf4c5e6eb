package share

// AlterShareGroupOffsets (key 91), v0 (KIP-932, "Share group
// administration").
//
// Sets share-partition start offsets of a share group that has no members,
// creating the group (and its share-partitions) when it does not exist.
// The new SPSOs are persisted (acks=-1) with their state epoch moved on,
// and live share-partitions forget their in-flight records and restart
// from them. Group errors (top level): NON_EMPTY_GROUP with members,
// GROUP_ID_NOT_FOUND when the id names a classic group, INVALID_GROUP_ID
// for an empty id, GROUP_AUTHORIZATION_FAILED without READ on the group.
// Partition errors: UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED,
// INVALID_REQUEST for a negative offset.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) alterShareGroupOffsetsAPI() wire.API {
	return wire.API{Key: 91, Min: 0, Max: 0, Handle: h.handleAlterShareGroupOffsets}
}

func (h *handlers) handleAlterShareGroupOffsets(r *wire.Request) any {
	req := r.Req.(*kmsg.AlterShareGroupOffsetsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		im := h.host.Image()
		s := h.host.Store()
		fail := func(err *kerr.Error) any {
			resp.ErrorCode = err.Code
			resp.ErrorMessage = kmsg.StringPtr(err.Message)
			return resp
		}
		if err := h.groupRefusal(r, kmsg.ACLOperationRead, req.GroupID); err != nil {
			return fail(err)
		}
		starts := map[shareTP]int64{}
		type ref struct{ ti, pi int }
		refs := map[shareTP]ref{}
		for _, qt := range req.Topics {
			t := topicByName(im, qt.Topic)
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = qt.Topic
			if t != nil {
				rt.TopicID = t.ID
			}
			for _, qp := range qt.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition = qp.Partition
				switch {
				case !t.has(qp.Partition):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case h.topicDenied(r, kmsg.ACLOperationRead, t.Name):
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case qp.StartOffset < 0:
					rp.ErrorCode = kerr.InvalidRequest.Code
				default:
					tp := shareTP{t.ID, qp.Partition}
					starts[tp] = qp.StartOffset
					refs[tp] = ref{len(resp.Topics), len(rt.Partitions)}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(starts) == 0 {
			return resp
		}
		type answer struct {
			err *kerr.Error
			out map[shareTP]shareStart
		}
		ans, ok := askShare(s, req.GroupID, func(sm *Manager, reply func(answer)) {
			sm.alterStarts(req.GroupID, starts, func(err *kerr.Error, out map[shareTP]shareStart) { reply(answer{err, out}) })
		}).Wait()
		if !ok {
			return fail(kerr.CoordinatorNotAvailable)
		}
		if ans.err != nil {
			for tp, rf := range refs {
				_ = tp
				resp.Topics[rf.ti].Partitions[rf.pi].ErrorCode = ans.err.Code
			}
			return fail(ans.err)
		}
		s.resetStarts(req.GroupID, ans.out)
		return resp
	})
}
