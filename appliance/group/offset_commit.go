package group

// OffsetCommit (key 8), v0-v9.
//
// Commits are appended to the group's __consumer_offsets partition as
// OffsetCommitKey v1 / OffsetCommitValue v3 records with acks=-1 and
// answered after the fdatasync. A commit from a group member is checked
// against the group (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// REBALANCE_IN_PROGRESS while completing a rebalance, FENCED_INSTANCE_ID for
// a replaced static member, v7+); generation -1 with an empty member id is a
// standalone commit, allowed while the group is Empty or does not exist.
// For a KIP-848 consumer-protocol group the generation is the member epoch
// (any version): an unknown member answers UNKNOWN_MEMBER_ID, an epoch above
// the member's STALE_MEMBER_EPOCH, and an older one STALE_MEMBER_EPOCH for
// each partition the member did not already hold at that epoch (KIP-1251;
// group.cgCheckCommit).
// Partitions of unknown topics answer UNKNOWN_TOPIC_OR_PARTITION, metadata
// over offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE. v1's per
// partition timestamp and v2-v4's retention_time set an explicit expiry.

import (
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var offsetCommitAPI = apiDef{key: 8, min: 0, max: 9, handle: handleOffsetCommit}

func handleOffsetCommit(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	im := h.image()
	a := offsetCommitArgs{group: req.Group, memberID: req.MemberID, generation: req.Generation}
	if r.Version == 0 {
		a.generation, a.memberID = -1, ""
	}
	if req.InstanceID != nil {
		a.instanceID = *req.InstanceID
	}
	now := time.Now().UnixMilli()
	type slot struct{ ti, pi int }
	var slots []slot
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		_, partitions, known := im.Topic(t.Topic)
		groupDenied := h.groupDenied(r, kmsg.ACLOperationRead, req.Group)
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if groupDenied {
				rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			} else if h.topicDenied(r, kmsg.ACLOperationRead, t.Topic) {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if !known || p.Partition < 0 || p.Partition >= partitions {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				it := offsetCommitItem{topic: t.Topic, partition: p.Partition, offset: p.Offset, leaderEpoch: -1, expireTime: -1}
				if r.Version >= 6 {
					it.leaderEpoch = p.LeaderEpoch
				}
				if p.Metadata != nil {
					it.metadata = *p.Metadata
				}
				if c := h.coord(); c != nil && r.Version == 1 && p.Timestamp > 0 {
					it.expireTime = p.Timestamp + c.cfg.offsetsRetention.Milliseconds()
				}
				if r.Version >= 2 && r.Version <= 4 && req.RetentionTimeMillis > 0 {
					it.expireTime = now + req.RetentionTimeMillis
				}
				a.items = append(a.items, it)
				slots = append(slots, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setAll := func(errs []*kerr.Error) kmsg.Response {
		for i, s := range slots {
			if i < len(errs) && errs[i] != nil {
				resp.Topics[s.ti].Partitions[s.pi].ErrorCode = errs[i].Code
			}
		}
		return resp
	}
	failAll := func(err *kerr.Error) kmsg.Response {
		errs := make([]*kerr.Error, len(slots))
		for i := range errs {
			errs[i] = err
		}
		return setAll(errs)
	}
	if len(a.items) == 0 {
		return resp
	}
	ch := ask(h, req.Group, func(m *Manager, reply func([]*kerr.Error)) {
		m.commitOffsets(a, reply)
	})
	if !ch.Posted() {
		return failAll(kerr.CoordinatorNotAvailable)
	}
	return wire.Deferred(func() any {
		v, ok := ch.Wait()
		if !ok {
			return failAll(kerr.CoordinatorNotAvailable)
		}
		return setAll(v)
	})
}
