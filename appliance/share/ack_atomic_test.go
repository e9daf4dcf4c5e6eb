package share

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
