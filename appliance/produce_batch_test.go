package appliance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUringDirectRingWrites produces to 8 partitions over 2 uring shards
// with direct I/O, with io.uring.direct.write.batch on and off, and reads
// every record back: on, the shards' segment writes went in rounds
// through their rings; off, none did.
func TestUringDirectRingWrites(t *testing.T) {
	for _, batch := range []string{"true", "false"} {
		t.Run("batch="+batch, func(t *testing.T) {
			b := uringDirectBroker(t, map[string]string{"num.partitions": "8", "io.uring.direct.write.batch": batch})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const n = 4000
			value := func(i int) string { return strconv.Itoa(i) + ":" + fmt.Sprint(make([]byte, i%300)) }
			produceAll(ctx, t, b, "wb", n, func(i int) *kgo.Record { return &kgo.Record{Value: []byte(value(i))} })
			consumeAll(ctx, t, b, "wb", n, func(r *kgo.Record) int {
				var i int
				var rest string
				if _, err := fmt.Sscanf(string(r.Value), "%d:%s", &i, &rest); err != nil || i < 0 || i >= n || string(r.Value) != value(i) {
					t.Fatalf("record %q at %d/%d: bad", r.Value, r.Partition, r.Offset)
				}
				return i
			})
			var st nvme.WriteStats
			for _, s := range b.shards {
				var x nvme.WriteStats
				s.loop.Call(func() { x = s.cache.WriteStats() })
				st.Rounds += x.Rounds
				st.Ranges += x.Ranges
				st.RingWrites += x.RingWrites
			}
			if batch == "true" && (st.Rounds == 0 || st.RingWrites == 0) {
				t.Fatalf("ring write stats %+v: want rounds through the ring", st)
			}
			if batch == "false" && st.Rounds != 0 {
				t.Fatalf("ring write stats %+v with io.uring.direct.write.batch=false", st)
			}
			var scrape bytes.Buffer
			b.metrics.WriteShardMetrics(&scrape)
			for _, name := range []string{"ringbroker_log_ring_writes_total", "ringbroker_log_zero_fills_total", "ringbroker_log_zero_fill_bytes_total", "ringbroker_log_zero_fill_waits_total"} {
				if n := strings.Count(scrape.String(), name+"{"); n != len(b.shards) {
					t.Fatalf("%d %s series, want one per shard (%d)", n, name, len(b.shards))
				}
			}
			if batch == "true" && !strings.Contains(scrape.String(), fmt.Sprintf("ringbroker_log_ring_write_rounds_total{shard=\"0\"} %d\n", func() uint64 {
				var x nvme.WriteStats
				b.shards[0].loop.Call(func() { x = b.shards[0].cache.WriteStats() })
				return x.Rounds
			}())) {
				t.Fatalf("scrape does not show shard 0's rounds:\n%s", scrape.String())
			}
			t.Logf("ring write stats %+v", st)
		})
	}
}

// uringDirectBroker starts a test broker with io.engine=uring,
// log.io.mode=direct and props (one partition for the internal topics, no
// metrics listener), or skips the test where io_uring or O_DIRECT is
// unavailable.
func uringDirectBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	if ok, why := ioring.Available(); !ok {
		t.Skipf("io_uring unavailable: %s", why)
	}
	p := map[string]string{"io.engine": "uring", "log.io.mode": "direct", "metrics.listener": "none",
		"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
	for k, v := range props {
		p[k] = v
	}
	b := startTestBroker(t, p)
	if b.shards[0].cache == nil {
		t.Skip("O_DIRECT refused here: the broker runs buffered")
	}
	return b
}

// produceAll produces the records rec makes for 0..n-1 to topic (created
// on first use, partitions round robin, uncompressed) and waits for every
// acknowledgement.
func produceAll(ctx context.Context, t *testing.T, b *Broker, topic string, n int, rec func(i int) *kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errs := make(chan error, n)
	for i := range n {
		cl.Produce(ctx, rec(i), func(_ *kgo.Record, err error) { errs <- err })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// consumeAll reads topic from the start until it has seen n records:
// check verifies each and returns its index in 0..n-1, and none may come
// twice.
func consumeAll(ctx context.Context, t *testing.T, b *Broker, topic string, n int, check func(r *kgo.Record) int) {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := make([]bool, n)
	for got := 0; got < n; {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records read back: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			i := check(r)
			if seen[i] {
				t.Fatalf("record %d at %d/%d seen twice", i, r.Partition, r.Offset)
			}
			seen[i] = true
			got++
		})
	}
}

// TestUringDirectAckIsOnDisk produces one record at a time with acks=1 to
// a uring broker with direct I/O (segment writes through the shards'
// rings, answered when they complete) and, after each acknowledgement,
// finds the record in the segment file as read from the disk, so nothing
// is acknowledged before its write completed; a consumer then reads them
// all back in order.
func TestUringDirectAckIsOnDisk(t *testing.T) {
	b := uringDirectBroker(t, map[string]string{"num.partitions": "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("ack"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 150
	seg := filepath.Join(b.partitionDir("ack", 0), "00000000000000000000.log")
	for i := range n {
		v := []byte(fmt.Sprintf("acked-%04d-%s", i, strings.Repeat("x", i*37%3000)))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		// O_DIRECT writes bypass (and invalidate) the page cache, so this
		// read sees what the device holds. Only the head of the segment:
		// the records fill ~230 KB of its preallocated 16 MiB, and reading
		// it whole 150 times under -race on a loaded machine outlasted the
		// deadline.
		disk, err := readHead(seg, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(disk, v) {
			t.Fatalf("record %d acknowledged but not in %s on disk", i, seg)
		}
	}
	next := 0
	consumeAll(ctx, t, b, "ack", n, func(r *kgo.Record) int {
		want := fmt.Sprintf("acked-%04d-", next)
		if !strings.HasPrefix(string(r.Value), want) {
			t.Fatalf("record at offset %d is %.20q, want prefix %q", r.Offset, r.Value, want)
		}
		next++
		return next - 1
	})
}

// TestUringDirectCloseAnswersPendingAppends: an acks=-1 append whose ring
// write has not completed when its partition closes (a topic deleted, the
// broker stopping) is answered once Close has written and fdatasynced it,
// without a crash (the committer used to get the closed log's nil file).
func TestUringDirectCloseAnswersPendingAppends(t *testing.T) {
	b := uringDirectBroker(t, map[string]string{"num.partitions": "1"})
	ti, err := b.createTopic(TopicSpec{Name: "closing", Partitions: 1, ReplicationFactor: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	st := b.shardFor(ti, 0)
	got := make(chan produceResult, 2)
	st.loop.Call(func() {
		part := st.parts[tpKey{ti.ID, 0}]
		for _, acks := range []int16{-1, 1} {
			batch := appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, []kmsg.Record{{Value: []byte("x")}})
			part.append(batch, acks, func(r produceResult) { got <- r })
		}
		if len(part.writes) != 2 {
			t.Errorf("%d appends waiting for their writes, want 2", len(part.writes))
		}
		if err := part.close(); err != nil {
			t.Error(err)
		}
	})
	for i := range 2 {
		select {
		case r := <-got:
			if r.err != nil || r.baseOffset != int64(i) {
				t.Fatalf("answer %d: %+v, want offset %d written by Close", i, r, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("answer %d never came", i)
		}
	}
}

// TestDirectBlockBuffersRecycled produces ~36 MB to 4 partitions of a
// direct-mode broker with 4 MiB block caches while a consumer reads them
// back at the same time, on both engines: every record arrives intact (a
// block buffer reused while a response still sent from it would show
// another record's bytes), the shards reused block buffers rather than
// allocating new ones, and no buffer was released more often than held.
func TestDirectBlockBuffersRecycled(t *testing.T) {
	for _, engine := range []string{"netpoll", "uring"} {
		t.Run(engine, func(t *testing.T) {
			if ok, why := ioring.Available(); engine == "uring" && !ok {
				t.Skipf("io_uring unavailable: %s", why)
			}
			b := startTestBroker(t, map[string]string{"io.engine": engine, "log.io.mode": "direct", "metrics.listener": "none",
				"log.io.cache.bytes": strconv.Itoa(4 << 20), "num.partitions": "4",
				"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})
			if b.shards[0].cache == nil {
				t.Skip("O_DIRECT refused here: the broker runs buffered")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			const n = 20000
			value := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%08d|", i)), 200) }
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("recycle"),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			// Create the topic first, so the consumer starts on it.
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(0)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, n)
			go func() {
				for i := 1; i < n; i++ {
					cl.Produce(ctx, &kgo.Record{Value: value(i)}, func(_ *kgo.Record, err error) { errs <- err })
				}
			}()
			consumeAll(ctx, t, b, "recycle", n, func(r *kgo.Record) int {
				var i int
				if _, err := fmt.Sscanf(string(r.Value), "%08d|", &i); err != nil || i < 0 || i >= n || !bytes.Equal(r.Value, value(i)) {
					t.Fatalf("record at %d/%d is not one produced: %.40q", r.Partition, r.Offset, r.Value)
				}
				return i
			})
			for range n - 1 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			st := cacheStats(b)
			if st.BufReuses == 0 || st.BufBadReleases != 0 {
				t.Fatalf("block buffers: %d allocated, %d reused, %d bad releases; want reuse and no bad release", st.BufAllocs, st.BufReuses, st.BufBadReleases)
			}
			var scrape bytes.Buffer
			b.metrics.WriteShardMetrics(&scrape)
			if !strings.Contains(scrape.String(), "ringbroker_log_cache_buffer_reuses_total{shard=\"0\"}") {
				t.Fatalf("scrape lacks the buffer reuse series:\n%s", scrape.String())
			}
			t.Logf("~%d MB through %d shards: %d block buffers allocated, %d reused", n*1800/1000000, len(b.shards), st.BufAllocs, st.BufReuses)
		})
	}
}

// TestCachePrefaultAtStart: with log.io.cache.prefault each direct-mode
// shard starts with its cache's free list full (4 MiB cache: 4 blocks and
// 8 more), without it with none, on both engines; ~2 MB produced and read
// back through franz-go comes back intact and, prefaulted, allocates no
// further block buffer.
func TestCachePrefaultAtStart(t *testing.T) {
	for _, engine := range []string{"netpoll", "uring"} {
		for _, prefault := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/prefault=%v", engine, prefault), func(t *testing.T) {
				if ok, why := ioring.Available(); engine == "uring" && !ok {
					t.Skipf("io_uring unavailable: %s", why)
				}
				b := startTestBroker(t, map[string]string{"io.engine": engine, "log.io.mode": "direct", "metrics.listener": "none",
					"log.io.cache.bytes": strconv.Itoa(4 << 20), "log.io.cache.prefault": strconv.FormatBool(prefault),
					"num.partitions": "2", "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})
				if b.shards[0].cache == nil {
					t.Skip("O_DIRECT refused here: the broker runs buffered")
				}
				want := uint64(0)
				if prefault {
					want = 12
				}
				for _, s := range b.shards {
					var st nvme.CacheStats
					s.loop.Call(func() { st = s.cache.Stats() })
					if st.BufAllocs != want {
						t.Fatalf("shard %d started with %d block buffers allocated, want %d", s.id, st.BufAllocs, want)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				const n = 1000
				value := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%08d|", i)), 220) }
				produceAll(ctx, t, b, "pf", n, func(i int) *kgo.Record { return &kgo.Record{Value: value(i)} })
				consumeAll(ctx, t, b, "pf", n, func(r *kgo.Record) int {
					var i int
					if _, err := fmt.Sscanf(string(r.Value), "%08d|", &i); err != nil || i < 0 || i >= n || !bytes.Equal(r.Value, value(i)) {
						t.Fatalf("record at %d/%d is not one produced: %.40q", r.Partition, r.Offset, r.Value)
					}
					return i
				})
				st := cacheStats(b)
				if prefault && st.BufAllocs != want*uint64(len(b.shards)) {
					t.Fatalf("prefaulted shards allocated %d block buffers in all, want the %d prefaulted", st.BufAllocs, want*uint64(len(b.shards)))
				}
				if !prefault && st.BufAllocs == 0 {
					t.Fatal("no block buffer was allocated: the test wrote nothing through the caches")
				}
			})
		}
	}
}

// TestUringLoopMetrics produces and reads 2000 records through 2 uring
// shards and checks the loop and ring counters in the scrape: every shard
// entered the kernel, submitted SQEs, reaped CQEs and slept, and never
// dropped a CQE; a netpoll broker reports none of these series.
func TestUringLoopMetrics(t *testing.T) {
	if ok, why := ioring.Available(); !ok {
		t.Skipf("io_uring unavailable: %s", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startTestBroker(t, map[string]string{"io.engine": "uring", "shards": "2", "num.partitions": "4", "metrics.listener": "none"})
	const n = 2000
	produceAll(ctx, t, b, "lm", n, func(i int) *kgo.Record { return &kgo.Record{Value: []byte(strconv.Itoa(i))} })
	consumeAll(ctx, t, b, "lm", n, func(r *kgo.Record) int { i, _ := strconv.Atoi(string(r.Value)); return i })
	var scrape bytes.Buffer
	b.metrics.WriteShardMetrics(&scrape)
	val := func(name string, shard int) uint64 {
		t.Helper()
		prefix := fmt.Sprintf("%s{shard=\"%d\"} ", name, shard)
		for _, l := range strings.Split(scrape.String(), "\n") {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				x, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				return x
			}
		}
		t.Fatalf("no %s{shard=\"%d\"} in the scrape:\n%s", name, shard, scrape.String())
		return 0
	}
	for shard := range 2 {
		enters, sqes, cqes := val("ringbroker_shard_ring_enters_total", shard), val("ringbroker_shard_ring_sqes_submitted_total", shard), val("ringbroker_shard_ring_cqes_total", shard)
		sleeps := val("ringbroker_shard_loop_sleeps_total", shard)
		if enters == 0 || sqes == 0 || cqes == 0 || sleeps == 0 || sleeps > enters {
			t.Errorf("shard %d: enters %d, SQEs %d, CQEs %d, sleeps %d", shard, enters, sqes, cqes, sleeps)
		}
		if d := val("ringbroker_shard_ring_cqes_dropped_total", shard); d != 0 {
			t.Errorf("shard %d dropped %d CQEs", shard, d)
		}
		val("ringbroker_shard_loop_wakeups_total", shard)
		val("ringbroker_shard_loop_yields_total", shard)
		t.Logf("shard %d: enters %d, SQEs %d, CQEs %d, sleeps %d", shard, enters, sqes, cqes, sleeps)
	}
	np := startTestBroker(t, map[string]string{"io.engine": "netpoll", "shards": "2", "metrics.listener": "none"})
	scrape.Reset()
	np.metrics.WriteShardMetrics(&scrape)
	if strings.Contains(scrape.String(), "ringbroker_shard_ring_") || strings.Contains(scrape.String(), "ringbroker_shard_loop_") {
		t.Errorf("netpoll broker reports ring loop series:\n%s", scrape.String())
	}
}

// readHead reads up to n bytes from the start of the file at path.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	got, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:got], err
}
