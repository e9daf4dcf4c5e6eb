package share

// ShareAcknowledge (key 79), v1-v2 (KIP-932; v2 adds IsRenewAck and
// AcquisitionLockTimeoutMillis, KIP-1222).
//
// Acknowledges records a share consumer was given, outside a ShareFetch:
// per partition, batches of [FirstOffset, LastOffset] with one
// acknowledge type for the batch or one per offset: 0 gap (archived), 1
// accept (Acknowledged), 2 release (Available again, or Archived at
// share.delivery.count.limit), 3 reject (Archived), 4 renew (the
// acquisition lock starts again; only with IsRenewAck). A partition's
// batches are checked up front as Kafka's request validation does
// (FirstOffset <= LastOffset, increasing and non-overlapping, valid types):
// a malformed list answers INVALID_REQUEST. They are then applied all or
// nothing: every offset of every batch must be in flight and Acquired by
// the member, else the partition answers INVALID_RECORD_STATE and nothing
// changes. The MemberId must be a Uuid string of a member of the group, as
// for ShareFetch (INVALID_REQUEST, UNKNOWN_MEMBER_ID). ShareSessionEpoch
// must be that of the member's
// open share session (INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND;
// 0 cannot open one); -1 closes the session after the acknowledgements and
// releases the records the member still holds in it.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) shareAcknowledgeAPI() wire.API {
	return wire.API{Key: 79, Min: 1, Max: 2, Handle: h.handleShareAcknowledge}
}

func (h *handlers) handleShareAcknowledge(r *wire.Request) any {
	req := r.Req.(*kmsg.ShareAcknowledgeRequest)
	return wire.Deferred(func() any { return h.shareAcknowledge(r, req) })
}

func (h *handlers) shareAcknowledge(r *wire.Request, req *kmsg.ShareAcknowledgeRequest) *kmsg.ShareAcknowledgeResponse {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(code int16) *kmsg.ShareAcknowledgeResponse {
		resp.ErrorCode = code
		return resp
	}
	s := h.host.Store()
	if s == nil {
		return fail(kerr.UnknownServerError.Code)
	}
	group, member := deref(req.GroupID), deref(req.MemberID)
	switch {
	case group == "" || !validShareMemberID(member):
		return fail(kerr.InvalidRequest.Code)
	case h.groupDenied(r, kmsg.ACLOperationRead, group):
		return fail(kerr.GroupAuthorizationFailed.Code)
	case req.ShareSessionEpoch == 0:
		return fail(kerr.InvalidShareSessionEpoch.Code)
	}
	if code := s.memberCheck(group, member); code != 0 {
		return fail(code)
	}
	im := h.host.Image()
	settings := s.cfg.settings(im.GroupConfigs(group))
	resp.AcquisitionLockTimeoutMillis = int32(settings.part.lockMs)
	parts, _, _, code := s.openSession(r.Conn, group, member, req.ShareSessionEpoch, nil, nil)
	if code != 0 {
		return fail(code)
	}
	var list, all []*shareItem
	for _, t := range req.Topics {
		topic := topicByID(im, t.TopicID)
		for _, p := range t.Partitions {
			it := &shareItem{topic: topic, tp: tpKey{t.TopicID, p.Partition}, hadAcks: true}
			for _, a := range p.AcknowledgementBatches {
				it.acks = append(it.acks, shareAck{a.FirstOffset, a.LastOffset, a.AcknowledgeTypes})
			}
			switch {
			case topic == nil:
				it.ackErr = kerr.UnknownTopicID
			case !topic.has(p.Partition):
				it.ackErr = kerr.UnknownTopicOrPartition
			case h.topicDenied(r, kmsg.ACLOperationRead, topic.Name):
				it.ackErr = kerr.TopicAuthorizationFailed
			case validateShareAcks(it.acks, req.IsRenewAck) != nil:
				it.ackErr = validateShareAcks(it.acks, req.IsRenewAck)
			default:
				list = append(list, it)
			}
			all = append(all, it)
		}
	}
	pass := &sharePass{s: s, group: group, member: member, settings: settings, renew: req.IsRenewAck}
	if !pass.run(list, true) {
		return fail(kerr.UnknownServerError.Code)
	}
	if req.ShareSessionEpoch == -1 {
		s.releaseMemberWait(group, member, parts)
	}
	byTopic := map[TopicID]int{}
	for _, it := range all {
		ti, ok := byTopic[it.tp.id]
		if !ok {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = it.tp.id
			resp.Topics = append(resp.Topics, rt)
			ti = len(resp.Topics) - 1
			byTopic[it.tp.id] = ti
		}
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition = it.tp.p
		rp.ErrorCode = wire.ErrCode(it.ackErr)
		rp.ErrorMessage = wire.ErrMessage(it.ackErr)
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = shareLeader(im, it.topic, it.tp.p)
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
	}
	return resp
}
