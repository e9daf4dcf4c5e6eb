package share

// DeleteShareGroupOffsets (key 92), v0 (KIP-932, "Share group
// administration").
//
// Deletes the share-partition states of whole topics of a share group that
// has no members: tombstones are persisted (acks=-1) and the live
// share-partitions are dropped, so the next fetch starts again from
// share.auto.offset.reset. Group errors (top level): NON_EMPTY_GROUP with
// members, GROUP_ID_NOT_FOUND for an id that is no share group,
// INVALID_GROUP_ID for an empty one, GROUP_AUTHORIZATION_FAILED without
// DELETE on the group. Topic errors: UNKNOWN_TOPIC_OR_PARTITION,
// TOPIC_AUTHORIZATION_FAILED.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) deleteShareGroupOffsetsAPI() wire.API {
	return wire.API{Key: 92, Min: 0, Max: 0, Handle: h.handleDeleteShareGroupOffsets}
}

func (h *handlers) handleDeleteShareGroupOffsets(r *wire.Request) any {
	req := r.Req.(*kmsg.DeleteShareGroupOffsetsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		im := h.host.Image()
		s := h.host.Store()
		fail := func(err *kerr.Error) any {
			resp.ErrorCode = err.Code
			resp.ErrorMessage = kmsg.StringPtr(err.Message)
			return resp
		}
		if err := h.groupRefusal(r, kmsg.ACLOperationDelete, req.GroupID); err != nil {
			return fail(err)
		}
		topics := map[TopicID]bool{}
		for _, qt := range req.Topics {
			t := topicByName(im, qt.Topic)
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic = qt.Topic
			switch {
			case t == nil:
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case h.topicDenied(r, kmsg.ACLOperationRead, t.Name):
				rt.TopicID = t.ID
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				rt.TopicID = t.ID
				topics[t.ID] = true
			}
			resp.Topics = append(resp.Topics, rt)
		}
		err, ok := askShare(s, req.GroupID, func(sm *Manager, reply func(*kerr.Error)) {
			sm.deleteStarts(req.GroupID, topics, reply)
		}).Wait()
		if !ok {
			return fail(kerr.CoordinatorNotAvailable)
		}
		if err != nil {
			return fail(err)
		}
		if len(topics) > 0 {
			s.dropGroup(req.GroupID, topics)
		}
		return resp
	})
}
