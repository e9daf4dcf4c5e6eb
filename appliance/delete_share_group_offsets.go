package appliance

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

var deleteShareGroupOffsetsAPI = apiDef{key: 92, min: 0, max: 0, handle: handleDeleteShareGroupOffsets}

func handleDeleteShareGroupOffsets(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.DeleteShareGroupOffsetsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		im := b.currentImage()
		fail := func(err *kerr.Error) any {
			resp.ErrorCode = err.Code
			resp.ErrorMessage = strPtr(err.Message)
			return resp
		}
		if err := b.groupRefusal(r, kmsg.ACLOperationDelete, req.GroupID); err != nil {
			return fail(err)
		}
		topics := map[TopicID]bool{}
		for _, qt := range req.Topics {
			t := im.Topics[qt.Topic]
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic = qt.Topic
			switch {
			case t == nil:
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.topicDenied(r, kmsg.ACLOperationRead, t.Name):
				rt.TopicID = t.ID
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				rt.TopicID = t.ID
				topics[t.ID] = true
			}
			resp.Topics = append(resp.Topics, rt)
		}
		err, ok := askShare(b, req.GroupID, func(sm *shareManager, reply func(*kerr.Error)) {
			sm.deleteStarts(req.GroupID, topics, reply)
		}).Wait()
		if !ok {
			return fail(kerr.CoordinatorNotAvailable)
		}
		if err != nil {
			return fail(err)
		}
		if len(topics) > 0 {
			b.coord.groups.share.dropGroup(req.GroupID, topics)
		}
		return resp
	})
}
