package appliance

import (
	"bytes"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEncodeFetchAbortedTransactions: the aborted-transaction list of a
// read_committed partition decodes with kmsg at every version we serve.
func TestEncodeFetchAbortedTransactions(t *testing.T) {
	aborted := []nvme.AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 8}, {ProducerID: 9, FirstOffset: 11, LastOffset: 20}}
	topics := []fetchTopicOut{{name: "t", id: TopicID{1}, parts: []fetchPartOut{
		{partition: 0, hw: 30, lso: 25, logStart: 0, hasRecords: true, readCommitted: true, aborted: aborted},
		{partition: 1, hw: 3, lso: 3, hasRecords: true, readCommitted: true},
	}}}
	for v := int16(4); v <= 16; v++ {
		raw := encodeFetchResponse(v, 0, 0, topics)
		var body bytes.Buffer
		for _, p := range raw.parts {
			body.Write(p.b)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		if err := resp.ReadFrom(body.Bytes()); err != nil {
			t.Fatalf("v%d: kmsg cannot decode: %v", v, err)
		}
		p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
		if len(p0.AbortedTransactions) != 2 || p0.AbortedTransactions[1].ProducerID != 9 || p0.AbortedTransactions[1].FirstOffset != 11 ||
			p0.LastStableOffset != 25 || p0.HighWatermark != 30 {
			t.Fatalf("v%d: partition 0 %+v", v, p0)
		}
		if p1.AbortedTransactions == nil || len(p1.AbortedTransactions) != 0 {
			t.Fatalf("v%d: partition 1 aborted %v", v, p1.AbortedTransactions)
		}
	}
}
