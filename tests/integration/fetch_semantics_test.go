package integration

import (
	"context"
	crand "crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFetch sends one sessionless Fetch v12 for topic/0 at offset.
func rawFetch(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, offset int64, maxWait, minBytes, partMax int32) (kmsg.FetchResponseTopicPartition, time.Duration) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWait
	req.MinBytes = minBytes
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	// kgo sends the highest version both sides support: from v13 topics
	// are named by id.
	md, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || md[topic].Err != nil {
		t.Fatalf("metadata: %v %v", err, md[topic].Err)
	}
	rt.TopicID = md[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = partMax
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response shape: %+v", resp)
	}
	return resp.Topics[0].Partitions[0], time.Since(start)
}

// batchesIn returns (base offset, records) of each batch in raw.
func batchesIn(t *testing.T, raw []byte) [][2]int64 {
	t.Helper()
	var out [][2]int64
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			t.Fatalf("batch: %v", err)
		}
		out = append(out, [2]int64{b.FirstOffset, int64(b.NumRecords)})
		raw = raw[12+int(b.Length):]
	}
	return out
}

func produceSync(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, values ...string) {
	t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// TestFetchSemantics covers long polls woken by appends, min_bytes
// accumulation, KIP-74, fetch offsets inside a batch, and the bounds of
// OFFSET_OUT_OF_RANGE.
func TestFetchSemantics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := startBroker(t, "")
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	createTopic(t, ctx, b, "fs", 1)

	// A long poll on an empty partition is woken by an append.
	go func() {
		time.Sleep(300 * time.Millisecond) // let the fetch park first
		produceSync(ctx, t, cl, "fs", "a", "b", "c")
	}()
	p, took := rawFetch(ctx, t, cl, "fs", 0, 10000, 1, 1<<20)
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || took > 5*time.Second {
		t.Fatalf("long poll: code %d, %d bytes after %v", p.ErrorCode, len(p.RecordBatches), took)
	}

	// min_bytes: the fetch waits until enough bytes accumulated, then returns
	// well before max_wait.
	go func() {
		time.Sleep(200 * time.Millisecond)
		// Random bytes: franz-go compresses, and zeros would shrink to nothing.
		raw := make([]byte, 600)
		_, _ = crand.Read(raw)
		big := string(raw)
		produceSync(ctx, t, cl, "fs", big)
		time.Sleep(200 * time.Millisecond)
		produceSync(ctx, t, cl, "fs", big)
	}()
	p, took = rawFetch(ctx, t, cl, "fs", 3, 15000, 1000, 1<<20)
	if p.ErrorCode != 0 || len(p.RecordBatches) < 1000 || took > 10*time.Second {
		t.Fatalf("min_bytes: code %d, %d bytes after %v", p.ErrorCode, len(p.RecordBatches), took)
	}

	// KIP-74: a partition limit smaller than the first batch still returns it whole.
	p, _ = rawFetch(ctx, t, cl, "fs", 0, 0, 1, 10)
	if bs := batchesIn(t, p.RecordBatches); len(bs) != 1 || bs[0] != [2]int64{0, 3} {
		t.Fatalf("KIP-74: batches %v", bs)
	}
	// An offset inside a batch returns that whole batch.
	p, _ = rawFetch(ctx, t, cl, "fs", 1, 0, 1, 1<<20)
	if bs := batchesIn(t, p.RecordBatches); len(bs) == 0 || bs[0] != [2]int64{0, 3} {
		t.Fatalf("offset inside a batch: batches %v", bs)
	}
	// At the log end: empty, no error. Past it: OFFSET_OUT_OF_RANGE.
	p, _ = rawFetch(ctx, t, cl, "fs", 5, 0, 1, 1<<20)
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 5 {
		t.Fatalf("at LEO: code %d, %d bytes, hw %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	p, _ = rawFetch(ctx, t, cl, "fs", 6, 0, 1, 1<<20)
	if p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("past LEO: code %d", p.ErrorCode)
	}
	// Below the log start offset after DeleteRecords: OFFSET_OUT_OF_RANGE.
	adm := newAdmin(t, b)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "fs", Partition: 0, At: 4})
	dr, err := adm.DeleteRecords(ctx, offs)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	if r, ok := dr.Lookup("fs", 0); !ok || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords low watermark: %+v", r)
	}
	p, _ = rawFetch(ctx, t, cl, "fs", 3, 0, 1, 1<<20)
	if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 4 {
		t.Fatalf("below log start: code %d, log start %d", p.ErrorCode, p.LogStartOffset)
	}
	p, _ = rawFetch(ctx, t, cl, "fs", 4, 0, 1, 1<<20)
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("at log start: code %d", p.ErrorCode)
	}
}
