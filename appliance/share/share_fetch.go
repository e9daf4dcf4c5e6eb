package share

// ShareFetch (key 78), v1-v2 (KIP-932; v2 adds ShareAcquireMode and
// IsRenewAck, KIP-1206 and KIP-1222).
//
// A share consumer's fetch: it carries the acknowledgements of records it
// was given before (piggybacked, processed first) and acquires Available
// records of its share session's partitions for the member: at most
// MaxRecords records (in both acquire modes the limit is exact) and
// MaxBytes bytes, each partition at most partition_max_bytes, the first
// batch whole (KIP-74); BatchSize does not split AcquiredRecords, which
// come as runs of equal delivery count. MinBytes is read as 1: the answer
// goes out as soon as anything is acquired. The response carries the batches holding the
// acquired offsets and the AcquiredRecords ranges with their delivery
// count; the records stay Acquired by the member for
// AcquisitionLockTimeoutMillis (share.record.lock.duration.ms). With
// nothing to acquire it waits up to MaxWaitMs for an append or for records
// to become Available (a release, an acquisition lock expiry).
//
// The MemberId must be a Uuid string (base64url of 16 bytes, as Kafka's
// Uuid.fromString reads it; else INVALID_REQUEST) of a member of the share
// group (joined with ShareGroupHeartbeat, not left or expired; else
// UNKNOWN_MEMBER_ID): others acquire and acknowledge nothing. ShareAcquireMode
// other than 0 (batch_optimized) or 1 (record_limit) and negative
// MaxRecords, BatchSize or MaxBytes are INVALID_REQUEST; 0 means the default.
//
// Share sessions: ShareSessionEpoch 0 opens the member's session (a
// request that also acknowledges answers INVALID_REQUEST), -1 closes it
// after its acknowledgements without fetching, releasing what the member
// still holds in it; any other epoch must be the one expected
// (INVALID_SHARE_SESSION_EPOCH) of an open session (SHARE_SESSION_NOT_FOUND).
// Listed partitions join the session, ForgottenTopicsData leave it; the
// fetch covers every partition in the session. Unknown topic ids answer
// UNKNOWN_TOPIC_ID, acknowledgements of records not Acquired by the member
// INVALID_RECORD_STATE (AcknowledgeErrorCode). read_committed
// (share.isolation.level) stops at the last stable offset and archives the
// records of aborted transactions.

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareDefaultMaxRecords is the MaxRecords of a request that sets none
// (v0 had none; Kafka's share.max.fetch.records default).
const shareDefaultMaxRecords = 500

func (h *handlers) shareFetchAPI() wire.API {
	return wire.API{Key: 78, Min: 1, Max: 2, Handle: h.handleShareFetch}
}

func (h *handlers) handleShareFetch(r *wire.Request) any {
	req := r.Req.(*kmsg.ShareFetchRequest)
	return wire.Deferred(func() any { return h.shareFetch(r, req) })
}

func (h *handlers) shareFetch(r *wire.Request, req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
	start := time.Now()
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(code int16) *kmsg.ShareFetchResponse {
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
	case req.ShareAcquireMode != 0 && req.ShareAcquireMode != 1:
		return fail(kerr.InvalidRequest.Code)
	case req.MaxRecords < 0 || req.BatchSize < 0 || req.MaxBytes < 0:
		return fail(kerr.InvalidRequest.Code)
	case h.groupDenied(r, kmsg.ACLOperationRead, group):
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	if code := s.memberCheck(group, member); code != 0 {
		return fail(code)
	}
	im := h.host.Image()
	settings := s.cfg.settings(im.GroupConfigs(group))
	resp.AcquisitionLockTimeoutMillis = int32(settings.part.lockMs)

	items := map[tpKey]*shareItem{}
	var bad []*shareItem // answered with an error, never in the session
	add := map[tpKey]int32{}
	hasAcks := false
	for _, t := range req.Topics {
		topic := topicByID(im, t.TopicID)
		for _, p := range t.Partitions {
			tp := tpKey{t.TopicID, p.Partition}
			it := &shareItem{topic: topic, tp: tp, maxBytes: p.PartitionMaxBytes}
			for _, a := range p.AcknowledgementBatches {
				it.acks = append(it.acks, shareAck{a.FirstOffset, a.LastOffset, a.AcknowledgeTypes})
			}
			it.hadAcks = len(it.acks) > 0
			hasAcks = hasAcks || it.hadAcks
			switch {
			case topic == nil:
				it.errCode = kerr.UnknownTopicID.Code
			case !topic.has(p.Partition):
				it.errCode = kerr.UnknownTopicOrPartition.Code
			case h.topicDenied(r, kmsg.ACLOperationRead, topic.Name):
				it.errCode = kerr.TopicAuthorizationFailed.Code
			}
			if it.errCode != 0 {
				if it.hadAcks {
					it.ackErr = kerr.ErrorForCode(it.errCode)
				}
				bad = append(bad, it)
				continue
			}
			if it.hadAcks {
				// Checked up front, as Kafka's request validation does: a
				// malformed list answers INVALID_REQUEST and changes nothing.
				it.ackErr = validateShareAcks(it.acks, req.IsRenewAck)
			}
			items[tp] = it
			add[tp] = p.PartitionMaxBytes
		}
	}
	if req.ShareSessionEpoch == 0 && hasAcks {
		return fail(kerr.InvalidRequest.Code)
	}
	var forget []tpKey
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			forget = append(forget, tpKey{f.TopicID, p})
		}
	}
	parts, next, released, code := s.openSession(r.Conn, group, member, req.ShareSessionEpoch, add, forget)
	if code != 0 {
		return fail(code)
	}
	if released != nil {
		s.releaseMemberWait(group, member, released)
	}
	final := req.ShareSessionEpoch == -1
	fetch := !final && !req.IsRenewAck
	for tp, mb := range parts {
		it := items[tp]
		if it == nil {
			topic := topicByID(im, tp.id)
			if topic == nil || tp.p >= topic.Partitions {
				continue // deleted since it joined the session
			}
			it = &shareItem{topic: topic, tp: tp, maxBytes: mb}
			items[tp] = it
		}
		it.fetch = fetch
	}
	list := make([]*shareItem, 0, len(items))
	for _, it := range items {
		list = append(list, it)
	}
	list = shareItemsOrder(list, next)

	pass := &sharePass{s: s, group: group, member: member, settings: settings, renew: req.IsRenewAck,
		maxRecords: int(req.MaxRecords), maxBytes: req.MaxBytes, first: true}
	if pass.maxRecords <= 0 {
		pass.maxRecords = shareDefaultMaxRecords
	}
	if pass.maxBytes <= 0 {
		pass.maxBytes = 52428800
	}
	wait := fetch && req.MaxWaitMillis > 0
	var w *Waiter
	if wait {
		w = NewWaiter()
		defer w.done.Store(true)
		pass.parked = w
	}
	if !pass.run(list, true) {
		return fail(kerr.UnknownServerError.Code)
	}
	if final {
		s.releaseMemberWait(group, member, parts)
	}
	if fetch {
		var init []*shareItem
		for _, it := range list {
			if it.needsInit {
				init = append(init, it)
			}
		}
		if len(init) > 0 {
			s.initParts(group, init, settings)
			if !pass.run(init, false) {
				return fail(kerr.UnknownServerError.Code)
			}
		}
	}
	if wait && pass.acquiredAny == 0 {
		deadline := start.Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		for pass.acquiredAny == 0 && time.Now().Before(deadline) {
			timer := time.NewTimer(time.Until(deadline))
			select {
			case <-w.notify:
				timer.Stop()
			case <-timer.C:
			case <-connClosed(r):
				timer.Stop()
				return fail(kerr.UnknownServerError.Code)
			case <-h.host.Closing():
				timer.Stop()
				return fail(kerr.UnknownServerError.Code)
			}
			if !pass.run(list, false) {
				return fail(kerr.UnknownServerError.Code)
			}
		}
	}
	list = append(list, bad...)
	byTopic := map[TopicID]int{}
	for _, it := range list {
		if !it.hadAcks && it.errCode == 0 && len(it.acquired) == 0 {
			continue
		}
		ti, ok := byTopic[it.tp.id]
		if !ok {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = it.tp.id
			resp.Topics = append(resp.Topics, rt)
			ti = len(resp.Topics) - 1
			byTopic[it.tp.id] = ti
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = it.tp.p
		rp.ErrorCode = it.errCode
		if it.hadAcks {
			rp.AcknowledgeErrorCode = wire.ErrCode(it.ackErr)
			rp.AcknowledgeErrorMessage = wire.ErrMessage(it.ackErr)
		}
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = shareLeader(im, it.topic, it.tp.p)
		if len(it.acquired) > 0 {
			rp.Records = it.records
			for _, a := range it.acquired {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.first, a.last, a.deliveries
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
			}
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
	}
	return resp
}

// validShareMemberID reports whether id is a member id Kafka accepts in
// ShareFetch and ShareAcknowledge: a Uuid string (Uuid.fromString),
// base64url of 16 bytes, with or without padding (franz-go pads).
func validShareMemberID(id string) bool {
	if id == "" || len(id) > 24 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(id, "="))
	if err != nil || len(raw) != 16 {
		return false
	}
	// Padding, when present, must be exactly what 16 bytes take.
	return len(id) == 22 || id[22:] == "=="
}

// memberCheck answers UNKNOWN_MEMBER_ID (0 when fine) for a member
// that is not in the share group (it never joined with
// ShareGroupHeartbeat, left, or expired): such a member acquires and
// acknowledges nothing.
func (s *Store) memberCheck(group, member string) int16 {
	isMember, ok := askShare(s, group, func(sm *Manager, reply func(bool)) {
		g := sm.groups[group]
		reply(g != nil && g.members[member] != nil)
	}).Wait()
	if !ok {
		return kerr.CoordinatorNotAvailable.Code
	}
	if !isMember {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// topicByID is the topic with id in im, nil when there is none.
func topicByID(im Image, id TopicID) *Topic {
	t, ok := im.TopicByID(id)
	if !ok {
		return nil
	}
	return &t
}

// topicByName is the topic named name in im, nil when there is none.
func topicByName(im Image, name string) *Topic {
	t, ok := im.TopicByName(name)
	if !ok {
		return nil
	}
	return &t
}
