package group

// OffsetDelete (key 47), v0 (KIP-496).
//
// Deletes committed offsets of a group (tombstones, acks=-1). A partition
// of a topic that an active member subscribes to (read from the consumer
// protocol's subscription metadata) answers GROUP_SUBSCRIBED_TO_TOPIC; an
// unknown topic UNKNOWN_TOPIC_OR_PARTITION; an unknown group
// GROUP_ID_NOT_FOUND; a non-empty group that does not use the consumer
// protocol NON_EMPTY_GROUP.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var offsetDeleteAPI = apiDef{key: 47, min: 0, max: 0, handle: handleOffsetDelete}

type offsetDeleteAnswer struct {
	top *kerr.Error
	per []*kerr.Error
}

func handleOffsetDelete(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	im := h.image()
	type slot struct{ ti, pi int }
	var slots []slot
	var tps []groupTP
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		_, partitions, known := im.Topic(t.Topic)
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if !known || p.Partition < 0 || p.Partition >= partitions {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				slots = append(slots, slot{ti, pi})
				tps = append(tps, groupTP{t.Topic, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if h.groupDenied(r, kmsg.ACLOperationDelete, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.Topics = nil
		return resp
	}
	ch := ask(h, req.Group, func(m *Manager, reply func(offsetDeleteAnswer)) {
		m.deleteOffsets(req.Group, tps, func(top *kerr.Error, per []*kerr.Error) { reply(offsetDeleteAnswer{top, per}) })
	})
	if !ch.Posted() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	return wire.Deferred(func() any {
		a, ok := ch.Wait()
		if !ok {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		if a.top != nil {
			resp.ErrorCode = a.top.Code
			resp.Topics = nil
			return resp
		}
		for i, s := range slots {
			if i < len(a.per) && a.per[i] != nil {
				resp.Topics[s.ti].Partitions[s.pi].ErrorCode = a.per[i].Code
			}
		}
		return resp
	})
}
