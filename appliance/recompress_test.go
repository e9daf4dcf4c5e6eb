package appliance

// A topic's compression.type other than producer rewrites produced batches
// to its codec, as Kafka's LogValidator does (issue 43, item 2; KIP-390
// for the levels): a franz-go producer's snappy batches are read back by
// raw Fetch with the topic's codec bits, and by a franz-go consumer with
// every record intact.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchedBatches splits a fetch's record bytes into batch headers.
func fetchedBatches(t *testing.T, raw []byte) []nvme.BatchHeader {
	t.Helper()
	var out []nvme.BatchHeader
	for len(raw) >= nvme.BatchHeaderSize {
		h, err := nvme.ParseBatchHeader(raw)
		if err != nil {
			t.Fatalf("fetched batch: %v", err)
		}
		if h.Size() > int64(len(raw)) {
			break // a partial batch at the end of the fetch
		}
		if got := nvme.CRC32C(raw[21:h.Size()]); got != h.CRC {
			t.Fatalf("fetched batch at %d: CRC %#x, header says %#x", h.BaseOffset, got, h.CRC)
		}
		out = append(out, h)
		raw = raw[h.Size():]
	}
	return out
}

func TestTopicCompressionTypeRecompresses(t *testing.T) {
	topics := map[string]map[string]string{
		"to-zstd":  {"compression.type": "zstd", "compression.zstd.level": "9"},
		"to-gzip":  {"compression.type": "gzip", "compression.gzip.level": "1"},
		"to-lz4":   {"compression.type": "lz4", "compression.lz4.level": "17"},
		"to-none":  {"compression.type": "uncompressed"},
		"producer": {"compression.type": "producer"},
		"snappy":   {"compression.type": "snappy"},
	}
	b, k := startCompressionBroker(t, topics)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ProducerBatchCompression(kgo.SnappyCompression()),
		kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 40
	value := func(topic string, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("%s record %d; ", topic, i)), 10)
	}
	want := map[string]int{"to-zstd": nvme.CompressionZstd, "to-gzip": nvme.CompressionGzip, "to-lz4": nvme.CompressionLZ4,
		"to-none": nvme.CompressionNone, "producer": nvme.CompressionSnappy, "snappy": nvme.CompressionSnappy}
	for topic := range topics {
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: value(topic, i),
				Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}, Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	for topic, codec := range want {
		p := kFetch(k, topic, 1, 12) // offset 0 is the uncompressed batch that opened the partition
		if p.ErrorCode != 0 {
			t.Fatalf("fetch %s: error %d", topic, p.ErrorCode)
		}
		hs := fetchedBatches(t, p.RecordBatches)
		if len(hs) == 0 {
			t.Fatalf("fetch %s: no batches", topic)
		}
		records := 0
		for _, h := range hs {
			if h.Compression() != codec {
				t.Errorf("%s: batch at %d has codec %d, want %d", topic, h.BaseOffset, h.Compression(), codec)
			}
			// franz-go is idempotent by default: the producer's fields
			// survive the rewrite.
			if h.ProducerID < 0 || h.BaseSequence != int32(records) || h.IsLogAppendTime() || h.IsTransactional() {
				t.Errorf("%s: batch at %d: producer %d epoch %d sequence %d attrs %#x", topic, h.BaseOffset, h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.Attributes)
			}
			if h.BaseOffset != int64(1+records) || h.MaxTimestamp != 1_700_000_000_000+int64(records)+int64(h.LastOffsetDelta) {
				t.Errorf("%s: batch at %d (after %d records), max timestamp %d", topic, h.BaseOffset, records, h.MaxTimestamp)
			}
			records += int(h.RecordCount)
		}
		if records != n {
			t.Errorf("%s: %d records fetched, want %d", topic, records, n)
		}
	}
	// A consumer decompresses with its own decoders and finds every record
	// as it was produced.
	for topic := range topics {
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(1)}}))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < n {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: %d of %d records read back", topic, got, n)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: consume: %v", topic, err) })
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != int64(1+got) || string(r.Key) != fmt.Sprint(got) || !bytes.Equal(r.Value, value(topic, got)) ||
					len(r.Headers) != 1 || string(r.Headers[0].Value) != fmt.Sprint(got) || r.Timestamp.UnixMilli() != 1_700_000_000_000+int64(got) {
					t.Errorf("%s: record %d came back as offset %d key %q value %q headers %v at %v", topic, got, r.Offset, r.Key, r.Value, r.Headers, r.Timestamp)
				}
				got++
			})
		}
		c.Close()
	}
}

// TestRecompressKeepsTransactionalAndLogAppendTime: a transactional zstd
// batch on a gzip topic keeps its transactional bit and producer fields;
// on a LogAppendTime topic the rewritten batch carries the append time
// and the timestamp-type bit; a batch already in the topic's codec is
// stored byte for byte as sent.
func TestRecompressKeepsTransactionalAndLogAppendTime(t *testing.T) {
	b, k := startCompressionBroker(t, map[string]map[string]string{
		"gz":      {"compression.type": "gzip"},
		"lat":     {"compression.type": "lz4", "message.timestamp.type": "LogAppendTime"},
		"same":    {"compression.type": "zstd"},
		"compact": {"compression.type": "snappy", "cleanup.policy": "compact"},
	})
	// A transactional batch through a raw transaction: InitProducerID,
	// AddPartitionsToTxn, Produce.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.TransactionalID("recompress-txn"),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.DefaultProduceTopic("gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: bytes.Repeat([]byte("txn "), 50)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	p := kFetch(k, "gz", 1, 12)
	hs := fetchedBatches(t, p.RecordBatches)
	if len(hs) != 2 || hs[0].Compression() != nvme.CompressionGzip || !hs[0].IsTransactional() || hs[0].ProducerID < 0 ||
		!hs[1].IsControl() || hs[1].Compression() != nvme.CompressionNone || hs[1].ProducerID != hs[0].ProducerID {
		t.Fatalf("transactional batch and its marker on a gzip topic: %+v", hs)
	}

	before := time.Now().UnixMilli()
	batch := testBatch(t, nvme.CompressionSnappy, 5, 0)
	if got := kProduce(k, "lat", batch, 9); got.ErrorCode != 0 || got.LogAppendTime < before {
		t.Fatalf("produce to a LogAppendTime lz4 topic: error %d, log append time %d", got.ErrorCode, got.LogAppendTime)
	}
	hs = fetchedBatches(t, kFetch(k, "lat", 1, 12).RecordBatches)
	if len(hs) != 1 || hs[0].Compression() != nvme.CompressionLZ4 || !hs[0].IsLogAppendTime() || hs[0].MaxTimestamp < before || hs[0].RecordCount != 5 {
		t.Fatalf("LogAppendTime lz4 topic holds %+v", hs)
	}

	zb := testBatch(t, nvme.CompressionZstd, 5, 0)
	if got := kProduce(k, "same", zb, 9); got.ErrorCode != 0 {
		t.Fatalf("produce zstd to a zstd topic: error %d", got.ErrorCode)
	}
	raw := kFetch(k, "same", 1, 12).RecordBatches
	if len(raw) != len(zb) || !bytes.Equal(raw[nvme.BatchHeaderSize:], zb[nvme.BatchHeaderSize:]) ||
		!bytes.Equal(raw[16:21], zb[16:21]) || binary.BigEndian.Uint64(raw) != 1 {
		t.Fatalf("a zstd batch on a zstd topic was not kept as sent (%d bytes fetched, %d sent)", len(raw), len(zb))
	}

	// Validation still refuses what it refused: keyless records on a
	// compacted topic, with their record errors, and a corrupt batch.
	recs := testRecords(3)
	recs[1].Key = nil
	keyless := nvme.AppendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
	if got := kProduce(k, "compact", keyless, 9); got.ErrorCode != kerr.InvalidRecord.Code || len(got.ErrorRecords) != 1 || got.ErrorRecords[0].RelativeOffset != 1 {
		t.Fatalf("keyless record on a compacted snappy topic: error %d, record errors %+v", got.ErrorCode, got.ErrorRecords)
	}
	corrupt := testBatch(t, nvme.CompressionGzip, 3, 0)
	corrupt[len(corrupt)-3] ^= 0xff
	if got := kProduce(k, "compact", corrupt, 9); got.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("corrupt gzip batch on a snappy topic: error %d, want %d", got.ErrorCode, kerr.CorruptMessage.Code)
	}
}

// TestCompressionLevelConfigsValidated: the KIP-390 level configs take
// Kafka's ranges, at topic creation and when altered, and refuse the rest
// with INVALID_CONFIG.
func TestCompressionLevelConfigsValidated(t *testing.T) {
	_, k := startCompressionBroker(t, map[string]map[string]string{"lv": nil})
	for _, c := range []struct {
		name, value string
		code        int16
	}{
		{"compression.gzip.level", "-1", 0}, {"compression.gzip.level", "9", 0}, {"compression.gzip.level", "0", kerr.InvalidConfig.Code},
		{"compression.gzip.level", "10", kerr.InvalidConfig.Code}, {"compression.lz4.level", "1", 0}, {"compression.lz4.level", "18", kerr.InvalidConfig.Code},
		{"compression.zstd.level", "-131072", 0}, {"compression.zstd.level", "22", 0}, {"compression.zstd.level", "23", kerr.InvalidConfig.Code},
		{"compression.zstd.level", "x", kerr.InvalidConfig.Code},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "lv"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = c.name, kmsg.StringPtr(c.value)
		r.Configs = append(r.Configs, cfg)
		req.Resources = append(req.Resources, r)
		resp := k.do(req, 1).(*kmsg.IncrementalAlterConfigsResponse)
		if got := resp.Resources[0].ErrorCode; got != c.code {
			t.Errorf("%s=%s: error %d, want %d (%v)", c.name, c.value, got, c.code, resp.Resources[0].ErrorMessage)
		}
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bad-level", 1, 1
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "compression.lz4.level", kmsg.StringPtr("0")
	rt.Configs = append(rt.Configs, c)
	ct.Topics = append(ct.Topics, rt)
	if resp := k.do(ct, 7).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("create with compression.lz4.level=0: error %d, want %d", resp.Topics[0].ErrorCode, kerr.InvalidConfig.Code)
	}
}
