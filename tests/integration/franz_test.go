package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// codecRecords is how many records each codec's topic gets. RB_CODEC_RECORDS
// overrides it for quick local runs.
const codecRecords = 200_000

const codecPartitions = 8

// TestFranzCodecs produces 200,000 records per codec to an 8-partition topic
// with franz-go, reads them back with a direct consumer (offsets 0..n-1 per
// partition, byte-identical key, value and headers, the batch codec as
// produced), restarts the broker with SIGTERM and reads them again.
func TestFranzCodecs(t *testing.T) {
	total := codecRecords
	if v := os.Getenv("RB_CODEC_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("RB_CODEC_RECORDS=%q: want a positive integer", v)
		}
		total = n
	}
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  uint8 // record batch attributes bits 0-2
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	for ci, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b := startBroker(t, "")
			topic := "codec-" + c.name
			seed := uint64(ci + 1)
			createTopic(t, t.Context(), b, topic, codecPartitions)

			start := time.Now()
			batches := produceCodec(t, b, topic, seed, total, c.codec)
			t.Logf("produced %d records (%s) in %v", total, c.name, time.Since(start).Round(time.Millisecond))
			var withCodec int64
			for p := range codecPartitions {
				withCodec += batches.records[p][c.attr]
			}
			t.Logf("batches written per codec id %v; %d of %d records with %s", batches.batches, withCodec, total, c.name)
			if withCodec < int64(total)/2 {
				t.Fatalf("only %d of %d records were sent in %s batches; the records should compress", withCodec, total, c.name)
			}

			start = time.Now()
			checkCodecTopic(t, b, topic, seed, total, batches)
			t.Logf("consumed and checked %d records in %v", total, time.Since(start).Round(time.Millisecond))

			// A clean stop marks every partition; the next start loads
			// the active segments from their indexes and drops the marks.
			b.Stop()
			checkCleanShutdownMarks(t, b, topic, codecPartitions, true)
			b.Start()
			checkCleanShutdownMarks(t, b, topic, codecPartitions, false)
			start = time.Now()
			checkCodecTopic(t, b, topic, seed, total, batches)
			t.Logf("after restart: consumed and checked %d records in %v", total, time.Since(start).Round(time.Millisecond))
		})
	}
}

// checkCleanShutdownMarks checks that each partition directory of topic
// holds the clean-shutdown marker (want) or not.
func checkCleanShutdownMarks(t *testing.T, b *Broker, topic string, partitions int, want bool) {
	t.Helper()
	for p := range partitions {
		path := filepath.Join(b.DataDir, fmt.Sprintf("%s-%d", topic, p), ".clean_shutdown") // nvme.CleanShutdownFile
		if _, err := os.Stat(path); (err == nil) != want {
			t.Fatalf("%s: present %v, want %v (%v)", path, err == nil, want, err)
		}
	}
}

// produceCodec produces records 0..total-1 of the stream, record i to
// partition i%codecPartitions, and checks each acknowledged offset is
// i/codecPartitions (one request in flight keeps per-partition order).
func produceCodec(t *testing.T, b *Broker, topic string, seed uint64, total int, codec kgo.CompressionCodec) *batchLog {
	t.Helper()
	batches := &batchLog{}
	cl := newClient(t, b,
		kgo.WithHooks(batches),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxProduceRequestsInflightPerBroker(1),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.RequiredAcks(kgo.LeaderAck()),
	)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	var (
		wg       sync.WaitGroup
		failures atomic.Int64
		errMu    sync.Mutex
		errs     []string
	)
	fail := func(format string, args ...any) {
		failures.Add(1)
		errMu.Lock()
		defer errMu.Unlock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	for i := range total {
		if failures.Load() > 0 || ctx.Err() != nil {
			break
		}
		p := int32(i % codecPartitions)
		wantOffset := int64(i / codecPartitions)
		wg.Add(1)
		cl.Produce(ctx, genRecord(seed, topic, p, i), func(r *kgo.Record, err error) {
			defer wg.Done()
			switch {
			case err != nil:
				fail("record %d to partition %d: %v", i, p, err)
			case r.Offset != wantOffset:
				fail("record %d acknowledged at %d/%d, want offset %d", i, r.Partition, r.Offset, wantOffset)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		fail("flush: %v", err)
	}
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d produce failures, first ones:\n%v", n, errs)
	}
	waitFor(t, 10*time.Second, "franz-go's batch hooks to account for every record", func() bool {
		return batches.written() >= int64(total)
	})
	return batches
}

// batchLog counts, per partition and codec, the records in the batches
// franz-go wrote. franz-go sends a batch uncompressed when compressing does
// not make it smaller (small batches), and calls the hook from a goroutine
// per request, so only these counts, not the batch order, are known.
type batchLog struct {
	mu      sync.Mutex
	records [codecPartitions][8]int64
	batches [8]int64
	total   int64
}

var _ kgo.HookProduceBatchWritten = (*batchLog)(nil)

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (l *batchLog) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, p int32, m kgo.ProduceBatchMetrics) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p < 0 || p >= codecPartitions || m.CompressionType > 7 {
		return
	}
	l.records[p][m.CompressionType] += int64(m.NumRecords)
	l.batches[m.CompressionType]++
	l.total += int64(m.NumRecords)
}

func (l *batchLog) written() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// checkCodecTopic reads the whole topic with a direct consumer and checks
// that partition p holds exactly records p, p+8, p+16, ... at offsets 0, 1,
// 2, ..., each in a batch with the codec its producer batch had.
func checkCodecTopic(t *testing.T, b *Broker, topic string, seed uint64, total int, batches *batchLog) {
	t.Helper()
	cl := newClient(t, b,
		kgo.ConsumePartitions(startOffsets(topic, codecPartitions)),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	defer cl.Close()
	recs := consumeN(t, t.Context(), cl, total, 3*time.Minute)

	next := make([]int64, codecPartitions)
	var codecs [codecPartitions][8]int64 // records read per batch codec
	bad := 0
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, r := range recs {
		if r.Topic != topic || r.Partition < 0 || r.Partition >= codecPartitions {
			report("record from %s/%d, want %s/0..%d", r.Topic, r.Partition, topic, codecPartitions-1)
			continue
		}
		p := r.Partition
		if r.Offset != next[p] {
			report("partition %d: offset %d, want %d (offsets must be 0..n-1 in order)", p, r.Offset, next[p])
		}
		next[p] = r.Offset + 1
		i := int(r.Offset)*codecPartitions + int(p)
		if r.Offset < 0 || i >= total {
			report("partition %d: offset %d beyond the %d records produced", p, r.Offset, total)
			continue
		}
		if err := sameRecord(r, genRecord(seed, topic, p, i)); err != nil {
			report("partition %d offset %d (record %d): %v", p, r.Offset, i, err)
		}
		codecs[p][r.Attrs.CompressionType()&7]++
	}
	for p := range codecPartitions {
		want := int64(total / codecPartitions)
		if p < total%codecPartitions {
			want++
		}
		if next[p] != want {
			report("partition %d: read up to offset %d, want %d records", p, next[p], want)
		}
		if codecs[p] != batches.records[p] {
			report("partition %d: records per batch codec id %v, want %v as produced", p, codecs[p], batches.records[p])
		}
	}
	if bad > 10 {
		t.Errorf("... %d mismatches in all", bad)
	}
}
