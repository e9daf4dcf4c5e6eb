package appliance

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A partition's acknowledgements are validated up front and applied all or
// nothing: an answer with an error has changed nothing.
func TestShareAckAllOrNothingPartition(t *testing.T) {
	acquired := func() *sharePartition {
		sp := testSharePart(0)
		sp.acquire(sp.candidates(50, 50), "m", 0)
		return sp
	}
	allAcquired := func(t *testing.T, sp *sharePartition) {
		t.Helper()
		for i, r := range sp.recs {
			if r.state != recAcquired || r.member != "m" {
				t.Fatalf("offset %d is %s after a refused acknowledgement", i, r.state)
			}
		}
		if sp.startOffset != 0 {
			t.Fatalf("SPSO moved to %d", sp.startOffset)
		}
	}
	many := make([]shareAck, 200000)
	for i := range many {
		many[i] = shareAck{int64(i), int64(i), []int8{ackAccept}}
	}
	for _, tc := range []struct {
		name string
		acks []shareAck
		want error
	}{
		{"reject then out of window", []shareAck{{0, 9, []int8{ackReject}}, {200, 200, []int8{ackAccept}}}, kerr.InvalidRecordState},
		{"overlapping", []shareAck{{0, 9, []int8{ackReject}}, {5, 5, []int8{ackAccept}}}, kerr.InvalidRequest},
		{"touching", []shareAck{{0, 9, []int8{ackReject}}, {9, 9, []int8{ackAccept}}}, kerr.InvalidRequest},
		{"out of order", []shareAck{{1, 49, []int8{ackAccept}}, {0, 0, []int8{ackAccept}}}, kerr.InvalidRequest},
		{"first > last later", []shareAck{{0, 1, []int8{ackAccept}}, {5, 4, []int8{ackAccept}}}, kerr.InvalidRequest},
		{"bad type later", []shareAck{{0, 1, []int8{ackAccept}}, {3, 4, []int8{ackAccept, 7}}}, kerr.InvalidRequest},
		{"types length later", []shareAck{{0, 1, []int8{ackAccept}}, {3, 5, []int8{ackAccept, ackAccept}}}, kerr.InvalidRequest},
		{"renew without renew", []shareAck{{0, 1, []int8{ackAccept}}, {3, 3, []int8{ackRenew}}}, kerr.InvalidRequest},
		{"200000 single offsets", many, kerr.InvalidRecordState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := acquired()
			if _, err := sp.acknowledgeAll("m", tc.acks, false, 1); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			allAcquired(t, sp)
		})
	}
	// Another member's record in a later batch: nothing changes either.
	sp := acquired()
	sp.recs[30].member = "other"
	if _, err := sp.acknowledgeAll("m", []shareAck{{0, 9, []int8{ackAccept}}, {30, 30, []int8{ackAccept}}}, false, 1); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("another member's offset: %v", err)
	}
	sp.recs[30].member = "m"
	allAcquired(t, sp)
	// A valid list applies every batch.
	if _, err := sp.acknowledgeAll("m", []shareAck{{0, 9, []int8{ackReject}}, {10, 10, []int8{ackAccept}}, {12, 49, []int8{ackAccept}}}, false, 1); err != nil {
		t.Fatal(err)
	}
	if sp.startOffset != 11 || sp.recs[0].state != recAcquired || sp.recs[1].state != recAcknowledged {
		t.Fatalf("after a valid list: SPSO %d, states %v", sp.startOffset, states(sp)[:2])
	}
}

// The same through ShareAcknowledge and piggybacked on ShareFetch: the
// partition answers INVALID_REQUEST or INVALID_RECORD_STATE and its records
// stay Acquired.
func TestShareAckAllOrNothingHandlers(t *testing.T) {
	_, cl, tid := shareTestClient(t)
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
	for i := int64(0); i < 200000; i++ {
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
