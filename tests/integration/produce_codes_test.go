package integration

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceErrorCodes sends malformed record sets in Produce v9 and
// checks the partition error codes against Kafka's validation: checksum
// and framing failures are CORRUPT_MESSAGE, everything its
// ProduceRequest.validateRecords and LogValidator refuse as
// InvalidRecordException is INVALID_RECORD. The partition still takes a
// good batch afterwards, and nothing refused was stored.
func TestProduceErrorCodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := startBroker(t, "")
	cl := newClient(t, b)
	createTopic(t, ctx, b, "codes", 1)

	batch := func(n int, mutate func([]byte) []byte) []byte {
		rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1),
			FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n)}
		for i := range n {
			rec := kmsg.Record{OffsetDelta: int32(i), Value: []byte("value")}
			body := rec.AppendTo(nil)[1:]
			rb.Records = append(appendVarint(rb.Records, int64(len(body))), body...)
		}
		raw := rb.AppendTo(nil)
		fixBatch(raw)
		if mutate != nil {
			raw = mutate(raw)
		}
		return raw
	}
	produce := func(records []byte) int16 {
		t.Helper()
		return produceRaw(t, ctx, cl, "codes", records).ErrorCode
	}
	for _, c := range []struct {
		name    string
		records []byte
		want    *kerr.Error
	}{
		{"no records", []byte{}, kerr.InvalidRecord},
		{"CRC mismatch", batch(2, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), kerr.CorruptMessage},
		{"batch length past the bytes", batch(2, func(b []byte) []byte { return b[:len(b)-3] }), kerr.CorruptMessage},
		{"magic 1", batch(2, func(b []byte) []byte { b[16] = 1; return b }), kerr.InvalidRecord},
		{"record count larger than the records", batch(2, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 3)
			binary.BigEndian.PutUint32(b[23:], 2)
			fixBatch(b)
			return b
		}), kerr.InvalidRecord},
		{"lastOffsetDelta off the record count", batch(2, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 4)
			fixBatch(b)
			return b
		}), kerr.InvalidRecord},
		{"records short of the batch end", batch(2, func(b []byte) []byte {
			b = append(b, 0, 0)
			fixBatch(b)
			return b
		}), kerr.InvalidRecord},
		// Produce v3+ carries exactly one batch per partition (Kafka's
		// ProduceRequest.validateRecords), idempotent or not.
		{"two batches", append(batch(2, nil), batch(1, nil)...), kerr.InvalidRecord},
	} {
		if got := produce(c.records); got != c.want.Code {
			t.Errorf("%s: error code %d (%v), want %d (%s)", c.name, got, kerr.ErrorForCode(got), c.want.Code, c.want.Message)
		}
	}
	if got := produce(batch(3, nil)); got != 0 {
		t.Fatalf("good batch after the refusals: error code %d", got)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "codes"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	resp, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if end := resp.Topics[0].Partitions[0].Offset; end != 3 {
		t.Fatalf("log end offset %d after the refusals and one 3-record batch, want 3", end)
	}
}
