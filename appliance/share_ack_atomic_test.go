package appliance

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A partition's acknowledgements are validated up front and applied all or
// nothing (appliance/share's TestShareAckAllOrNothingPartition drives the
// share-partition directly).
// The same through ShareAcknowledge and piggybacked on ShareFetch: the
// partition answers INVALID_REQUEST or INVALID_RECORD_STATE and its records
// stay Acquired.
func TestShareAckAllOrNothingHandlers(t *testing.T) {
	// The member heartbeats once: a session of 10 minutes, not 45 s, so a
	// slow machine (200,000 batches, as this test once sent, took 52 s under -race on a loaded 2-core
	// one) does not remove it midway (UNKNOWN_MEMBER_ID).
	_, cl, tid := shareTestClientWith(t, map[string]string{
		"group.share.session.timeout.ms": "600000", "group.share.max.session.timeout.ms": "600000"})
	const group, member = "atomic", "AAAAAAAAAAAAAAAAAAAAAQ"
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, member, []string{"st"}
	if r := shareReq(t, cl, hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("join: %d", r.ErrorCode)
	}
	setShareEarliestRaw(t, cl, group)

	type batch = kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	fetch := func(epoch int32, acks []batch) *kmsg.ShareFetchResponseTopicPartition {
		req := newShareFetch(group, member, tid)
		req.ShareSessionEpoch = epoch
		req.Topics[0].Partitions[0].AcknowledgementBatches = acks
		f := shareReq(t, cl, req).(*kmsg.ShareFetchResponse)
		if f.ErrorCode != 0 || len(f.Topics) != 1 {
			t.Fatalf("fetch: %+v", f)
		}
		return &f.Topics[0].Partitions[0]
	}
	ack := func(epoch int32, acks []batch) int16 {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		for _, a := range acks {
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, AcknowledgeTypes: a.AcknowledgeTypes})
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := shareReq(t, cl, req).(*kmsg.ShareAcknowledgeResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("ShareAcknowledge: %d", r.ErrorCode)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	p := fetch(0, nil)
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].LastOffset != 4 {
		t.Fatalf("acquired %+v", p.AcquiredRecords)
	}
	var many []batch
	for i := int64(0); i < 20000; i++ { // a long list; 200,000 took 52 s under -race on a loaded machine
		many = append(many, batch{FirstOffset: i, LastOffset: i, AcknowledgeTypes: []int8{1}})
	}
	epoch := int32(1)
	for _, tc := range []struct {
		acks []batch
		want int16
	}{
		{[]batch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{3}}, {FirstOffset: 200, LastOffset: 200, AcknowledgeTypes: []int8{1}}}, kerr.InvalidRecordState.Code},
		{[]batch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{3}}, {FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: []int8{1}}}, kerr.InvalidRequest.Code},
		{[]batch{{FirstOffset: 1, LastOffset: 4, AcknowledgeTypes: []int8{1}}, {FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}, kerr.InvalidRequest.Code},
		{many, kerr.InvalidRecordState.Code},
	} {
		if got := ack(epoch, tc.acks); got != tc.want {
			t.Errorf("ShareAcknowledge %d batches from [%d, %d]: %d, want %d", len(tc.acks), tc.acks[0].FirstOffset, tc.acks[0].LastOffset, got, tc.want)
		}
		epoch++
		if p := fetch(epoch, tc.acks); p.AcknowledgeErrorCode != tc.want {
			t.Errorf("ShareFetch %d batches from [%d, %d]: %d, want %d", len(tc.acks), tc.acks[0].FirstOffset, tc.acks[0].LastOffset, p.AcknowledgeErrorCode, tc.want)
		}
		epoch++
	}
	// Nothing changed: 0-4 are still Acquired by the member.
	if got := ack(epoch, []batch{{FirstOffset: 0, LastOffset: 4, AcknowledgeTypes: []int8{1}}}); got != 0 {
		t.Fatalf("accept 0-4 after the refused lists: %d", got)
	}
}
