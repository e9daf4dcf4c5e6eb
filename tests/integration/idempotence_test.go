package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// idempotentProduce sends one ProduceRequest v9 with one batch from
// producer (pid, epoch) starting at sequence seq, and returns the
// partition's error code and base offset.
func idempotentProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, pid int64, epoch int16, seq int32, values ...string) (int16, int64) {
	t.Helper()
	recs := make([]kmsg.Record, len(values))
	for i, v := range values {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(values)),
	}
	for i := range recs {
		rec := recs[i]
		body := rec.AppendTo(nil)[1:] // Length 0 encodes as one byte
		rb.Records = append(appendVarint(rb.Records, int64(len(body))), body...)
	}
	raw := rb.AppendTo(nil)
	// AppendTo leaves Length and CRC as given: fix them.
	fixBatch(raw)
	p := produceRaw(t, ctx, cl, topic, raw)
	return p.ErrorCode, p.BaseOffset
}

// produceRaw sends records as they are to partition 0 of topic in one
// ProduceRequest v9 with acks=all and returns the partition's answer.
func produceRaw(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = records
	pt.Partitions = append(pt.Partitions, pp)
	req.Topics = append(req.Topics, pt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestIdempotentProduceRaw sends the same idempotent batch twice: it is
// stored once and both answers carry the same base offset; a sequence gap
// is refused with OUT_OF_ORDER_SEQUENCE_NUMBER; an old epoch with
// INVALID_PRODUCER_EPOCH. The state survives a restart.
func TestIdempotentProduceRaw(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := startBroker(t, "")
	cl := newClient(t, b)
	createTopic(t, ctx, b, "idem", 1)

	ipr := kmsg.NewPtrInitProducerIDRequest()
	iresp, err := ipr.RequestWith(ctx, cl)
	if err != nil || iresp.ErrorCode != 0 || iresp.ProducerID < 0 {
		t.Fatalf("InitProducerId: %v %+v", err, iresp)
	}
	pid, epoch := iresp.ProducerID, iresp.ProducerEpoch
	again, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || again.ProducerID == pid {
		t.Fatalf("second InitProducerId reused id %d: %v", pid, err)
	}

	code, off := idempotentProduce(t, ctx, cl, "idem", pid, epoch, 0, "a", "b", "c")
	if code != 0 || off != 0 {
		t.Fatalf("first produce: code %d offset %d", code, off)
	}
	code, off = idempotentProduce(t, ctx, cl, "idem", pid, epoch, 0, "a", "b", "c")
	if code != 0 || off != 0 {
		t.Fatalf("duplicate produce: code %d offset %d, want 0 and 0", code, off)
	}
	code, _ = idempotentProduce(t, ctx, cl, "idem", pid, epoch, 7, "gap")
	if code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: code %d, want %d", code, kerr.OutOfOrderSequenceNumber.Code)
	}
	code, off = idempotentProduce(t, ctx, cl, "idem", pid, epoch, 3, "d")
	if code != 0 || off != 3 {
		t.Fatalf("next in sequence: code %d offset %d", code, off)
	}

	b.Restart() // SIGTERM: a clean shutdown, the state comes from the snapshot
	cl2 := newClient(t, b)
	code, off = idempotentProduce(t, ctx, cl2, "idem", pid, epoch, 3, "d")
	if code != 0 || off != 3 {
		t.Fatalf("duplicate after restart: code %d offset %d, want 0 and 3", code, off)
	}
	// Not only the last batch: a request appended but unanswered when the
	// broker stopped may be any of the producer's last five.
	code, off = idempotentProduce(t, ctx, cl2, "idem", pid, epoch, 0, "a", "b", "c")
	if code != 0 || off != 0 {
		t.Fatalf("retry of the batch before the last after restart: code %d offset %d, want 0 and 0", code, off)
	}
	code, _ = idempotentProduce(t, ctx, cl2, "idem", pid, epoch, 9, "gap")
	if code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: code %d", code)
	}
	code, off = idempotentProduce(t, ctx, cl2, "idem", pid, epoch+1, 0, "e")
	if code != 0 || off != 4 {
		t.Fatalf("epoch bump: code %d offset %d", code, off)
	}
	code, _ = idempotentProduce(t, ctx, cl2, "idem", pid, epoch, 5, "zombie")
	if code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: code %d, want %d", code, kerr.InvalidProducerEpoch.Code)
	}

	// Exactly a, b, c, d, e are stored.
	cons := newClient(t, b, kgo.ConsumePartitions(startOffsets("idem", 1)))
	got := consumeN(t, ctx, cons, 5, 30*time.Second)
	var vals string
	for _, r := range got {
		vals += string(r.Value)
	}
	if vals != "abcde" {
		t.Fatalf("stored %q, want \"abcde\"", vals)
	}
}

// TestIdempotentFranzGo produces with franz-go's defaults (idempotent) and
// reads every record back once, in order.
func TestIdempotentFranzGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := startBroker(t, "")
	createTopic(t, ctx, b, "idem-fg", 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("idem-fg"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 30000
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%06d", i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, b, kgo.ConsumePartitions(startOffsets("idem-fg", 3)))
	got := consumeN(t, ctx, cons, n, 60*time.Second)
	seen := make(map[string]bool, n)
	last := map[int32]string{}
	for _, r := range got {
		v := string(r.Value)
		if seen[v] {
			t.Fatalf("record %s twice", v)
		}
		seen[v] = true
		if v <= last[r.Partition] {
			t.Fatalf("partition %d: %s after %s", r.Partition, v, last[r.Partition])
		}
		last[r.Partition] = v
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records, want %d", len(seen), n)
	}
}

func appendVarint(dst []byte, v int64) []byte {
	return binary.AppendVarint(dst, v)
}

// fixBatch sets a record batch's length and CRC32C from its bytes.
func fixBatch(b []byte) {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}
