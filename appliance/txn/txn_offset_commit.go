package txn

// TxnOffsetCommit (key 28), v0-v5.
//
// Sent to the group coordinator: the offsets are appended to the group's
// __consumer_offsets partition as a transactional batch of the producer and
// stay pending until the transaction's marker on that partition (see
// group.Manager.TxnCommitOffsets and group.Manager.CompleteTxn): visible to
// OffsetFetch after a commit, dropped after an abort. v3+ carries the member id, generation and instance id, checked as
// OffsetCommit checks them (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// FENCED_INSTANCE_ID; for a KIP-848 consumer-protocol group the generation
// is the member epoch, checked as OffsetCommit checks it: STALE_MEMBER_EPOCH); an old producer epoch answers INVALID_PRODUCER_EPOCH;
// unknown partitions UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) txnOffsetCommitAPI() wire.API {
	return wire.API{Key: 28, Min: 0, Max: 5, Handle: h.handleTxnOffsetCommit}
}

func (h *handlers) handleTxnOffsetCommit(r *wire.Request) any {
	req := r.Req.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	a := OffsetCommit{Group: req.Group, Generation: -1, PID: req.ProducerID, Epoch: req.ProducerEpoch}
	if r.Version >= 3 {
		a.MemberID, a.Generation = req.MemberID, req.Generation
		if req.InstanceID != nil {
			a.InstanceID = *req.InstanceID
		}
	}
	type slot struct{ ti, pi int }
	var slots []slot
	for ti, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		n := h.b.PartitionCount(t.Topic)
		denied := h.txnOffsetCommitDenied(r, req)
		for pi, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if denied != 0 {
				rp.ErrorCode = denied
			} else if !h.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic) {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if p.Partition < 0 || p.Partition >= n {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				it := OffsetItem{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: -1}
				if r.Version >= 2 {
					it.LeaderEpoch = p.LeaderEpoch
				}
				if p.Metadata != nil {
					it.Metadata = *p.Metadata
				}
				a.Items = append(a.Items, it)
				slots = append(slots, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setAll := func(errs []*kerr.Error) kmsg.Response {
		for i, s := range slots {
			if i < len(errs) && errs[i] != nil {
				resp.Topics[s.ti].Partitions[s.pi].ErrorCode = FencedCode(errs[i], r.Version >= 3)
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
	if len(a.Items) == 0 {
		return resp
	}
	ch := h.groups.CommitOffsets(a)
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
