package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Log compaction (issue 10) with the real binary: cleanup.policy=compact,
// tombstones, kill -9 while cleaning, partly cleaned compressed batches
// read by franz-go and kcat, and a bounded __consumer_offsets.

// cleanerOverrides make the cleaner look often.
var cleanerOverrides = []string{"log.cleaner.backoff.ms=100", "log.retention.check.interval.ms=1000"}

// createCompacted creates a one-partition compacted topic.
func createCompacted(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, configs map[string]string) {
	t.Helper()
	cfg := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.01")}
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, cfg, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatalf("cannot create topic %s: %v", topic, err)
	}
}

// produceKeyed produces records asynchronously and waits for every ack.
func produceKeyed(ctx context.Context, t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for _, r := range recs {
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

type keyedRecord struct {
	offset int64
	key    string
	value  string
	tomb   bool
}

// readCompacted consumes a one-partition topic from the beginning up to
// its high watermark with a fresh client.
func readCompacted(ctx context.Context, t *testing.T, addr, topic string, opts ...kgo.Opt) []keyedRecord {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	var out []keyedRecord
	next := int64(0)
	for next < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, keyedRecord{offset: r.Offset, key: string(r.Key), value: string(r.Value), tomb: r.Value == nil})
			next = r.Offset + 1
		})
		// A compacted tail may end below the high watermark: stop at the
		// last offset the fetch responses cover.
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.HighWatermark > 0 && len(p.Records) == 0 && next < p.HighWatermark {
				next = max(next, p.HighWatermark)
			}
		})
	}
	return out
}

// activeBase is the base offset of the newest segment of a partition.
func activeBase(t *testing.T, dir string) int64 {
	t.Helper()
	bases := segmentBases(t, dir)
	if len(bases) == 0 {
		t.Fatalf("no segments in %s", dir)
	}
	return bases[len(bases)-1]
}

func segmentBases(t *testing.T, dir string) []int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, e := range ents {
		if stem, ok := strings.CutSuffix(e.Name(), ".log"); ok && len(stem) == 20 {
			if b, err := strconv.ParseInt(stem, 10, 64); err == nil {
				bases = append(bases, b)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases
}

func dirLogBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// checkLatestValues checks that recs hold, for every key of latest, its
// latest value ("" latest means the key must be absent), and that below
// the active segment's base every key appears at most once.
func checkLatestValues(t *testing.T, recs []keyedRecord, latest map[string]string, active int64) (dupes int) {
	t.Helper()
	seen := map[string]int{}
	got := map[string]keyedRecord{}
	last := int64(-1)
	for _, r := range recs {
		if r.offset <= last {
			t.Fatalf("offsets not ascending: %d after %d", r.offset, last)
		}
		last = r.offset
		if r.offset < active {
			seen[r.key]++
		}
		got[r.key] = r
	}
	for _, n := range seen {
		if n > 1 {
			dupes++
		}
	}
	for k, v := range latest {
		r, ok := got[k]
		switch {
		case v == "" && ok && !r.tomb:
			t.Errorf("key %s: deleted, but reads %q", k, r.value)
		case v != "" && (!ok || r.value != v):
			t.Errorf("key %s: latest value %q, got %+v", k, v, r)
		}
	}
	return dupes
}

func TestCompactionKeyedTopic(t *testing.T) {
	b := startBroker(t, "", cleanerOverrides...)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerBatchMaxBytes(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, keys, updates = "compacted", 1000, 200_000
	createCompacted(ctx, t, cl, topic, map[string]string{"segment.bytes": "262144", "delete.retention.ms": "3000"})
	latest := map[string]string{}
	var recs []*kgo.Record
	for i := range updates {
		k, v := fmt.Sprintf("key-%04d", i%keys), fmt.Sprintf("value-%d", i)
		latest[k] = v
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
	}
	start := time.Now()
	produceKeyed(ctx, t, cl, recs)
	t.Logf("produced %d updates of %d keys in %v", updates, keys, time.Since(start).Round(time.Millisecond))
	dir := filepath.Join(b.DataDir, topic+"-0")
	before := dirLogBytes(t, dir)

	// Compacted down to one record per key plus the active segment.
	var (
		active             int64
		got                []keyedRecord
		dupes, belowActive int
	)
	compacted := eventually(t, 90*time.Second, 500*time.Millisecond, func() bool {
		active = activeBase(t, dir)
		got = readCompacted(ctx, t, b.Addr, topic)
		dupes = checkLatestValues(t, got, latest, active)
		belowActive = 0
		for _, r := range got {
			if r.offset < active {
				belowActive++
			}
		}
		return t.Failed() || dupes == 0 && belowActive <= keys
	})
	if t.Failed() {
		return
	}
	if !compacted {
		t.Fatalf("not compacted after 90s: %d keys duplicated below the active segment at %d, %d records", dupes, active, len(got))
	}
	t.Logf("compacted: %d bytes -> %d bytes, %d records read (%d below the active segment at %d)",
		before, dirLogBytes(t, dir), len(got), belowActive, active)

	// Tombstones for 100 keys, then enough updates of other keys to roll
	// segments so the cleaner runs again after delete.retention.ms.
	recs = recs[:0]
	for k := range 100 {
		key := fmt.Sprintf("key-%04d", k)
		latest[key] = ""
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key)})
	}
	produceKeyed(ctx, t, cl, recs)
	deadline := time.Now().Add(90 * time.Second)
	// A paced load loop, not a wait: each round rolls segments so that the
	// cleaner runs again, at most one round a second so that it gets to
	// run; the condition (no tombstone left) is checked every round.
	pace := time.NewTicker(time.Second)
	defer pace.Stop()
	round := 0
	for {
		recs = recs[:0]
		for i := range 20_000 {
			k := fmt.Sprintf("key-%04d", 100+(i%(keys-100)))
			v := fmt.Sprintf("value-r%d-%d", round, i)
			latest[k] = v
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
		}
		produceKeyed(ctx, t, cl, recs)
		round++
		<-pace.C
		got := readCompacted(ctx, t, b.Addr, topic)
		checkLatestValues(t, got, latest, activeBase(t, dir))
		if t.Failed() {
			return
		}
		tombs := 0
		for _, r := range got {
			if r.tomb {
				tombs++
			}
		}
		if tombs == 0 {
			t.Logf("tombstoned keys gone after %d rounds", round)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tombstones still present after delete.retention.ms", tombs)
		}
	}
}

func TestCompactionKillDuringCleaning(t *testing.T) {
	dataDir := t.TempDir()
	// Produce with the cleaner off, then restart with a small I/O budget
	// so that one long pass is in the middle of writing when killed.
	b := startBroker(t, dataDir, "log.cleaner.enable=false")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	const topic, keys = "killclean", 500
	createCompacted(ctx, t, cl, topic, map[string]string{"segment.bytes": "131072"})
	latest := map[string]string{}
	var recs []*kgo.Record
	for i := range 60_000 {
		k, v := fmt.Sprintf("key-%03d", i%keys), fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 40))
		latest[k] = v
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
	}
	produceKeyed(ctx, t, cl, recs)
	cl.Close()
	dir := filepath.Join(dataDir, topic+"-0")
	size := dirLogBytes(t, dir)
	b.Stop()
	b.overrides = append(append([]string(nil), cleanerOverrides...), "log.cleaner.io.max.bytes.per.second=2000000")
	b.Start()
	// Wait for the cleaner to be writing (*.cleaned present), then kill -9.
	waitForEvery(t, 60*time.Second, 20*time.Millisecond, "the cleaner to start writing (*.cleaned or *.swap files)", func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
				return true
			}
		}
		return false
	})
	// Not a wait for an event: the kill point, well into the pass, from
	// the I/O budget (the pass's progress shows nowhere outside).
	time.Sleep(time.Duration(size/4_000_000*1000+500) * time.Millisecond)
	b.Kill()
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
			left = append(left, e.Name())
		}
	}
	t.Logf("killed with %v in the partition directory", left)
	b.overrides = cleanerOverrides
	b.Start() // recovery removes the *.cleaned files or completes a swap; the cleaner then starts again
	got := readCompacted(ctx, t, b.Addr, topic)
	checkLatestValues(t, got, latest, 0)
	t.Logf("%d bytes of log; after kill -9 during cleaning and restart: %d records, every latest value present", size, len(got))
	// The cleaner finishes afterwards.
	compacted := eventually(t, 120*time.Second, 500*time.Millisecond, func() bool {
		got = readCompacted(ctx, t, b.Addr, topic)
		return checkLatestValues(t, got, latest, activeBase(t, dir)) == 0 || t.Failed()
	})
	if !compacted || t.Failed() {
		t.Fatalf("not compacted after restart")
	}
}

func TestCompactionCodecs(t *testing.T) {
	kcat, _ := lookTool("kcat")
	b := startBroker(t, "", cleanerOverrides...)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()}, {"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			createCompacted(ctx, t, cl, topic, map[string]string{"segment.bytes": "2048"})
			latest := map[string]string{}
			// One compressed batch of 20 keys, then updates of the even ones
			// (so that batch is partly cleaned), then filler to roll segments.
			batch := func(keys []int, tag string) {
				var recs []*kgo.Record
				for _, k := range keys {
					key := fmt.Sprintf("k%02d", k)
					v := fmt.Sprintf("%s-%s-%s", tag, key, strings.Repeat("v", 30))
					latest[key] = v
					recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(v)})
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			var all, even []int
			for k := range 20 {
				all = append(all, k)
				if k%2 == 0 {
					even = append(even, k)
				}
			}
			batch(all, "first")
			batch(even, "second")
			for i := range 30 {
				batch([]int{100 + i%5}, fmt.Sprintf("filler%d", i))
			}
			dir := filepath.Join(b.DataDir, topic+"-0")
			var got []keyedRecord
			compacted := eventually(t, 60*time.Second, 200*time.Millisecond, func() bool {
				got = readCompacted(ctx, t, b.Addr, topic)
				return checkLatestValues(t, got, latest, activeBase(t, dir)) == 0 && len(got) < 60 || t.Failed()
			})
			if !compacted || t.Failed() {
				t.Fatalf("not compacted: %d records", len(got))
			}
			// The odd keys survive from the first batch at their offsets 1, 3, ...
			for _, r := range got[:10] {
				n, _ := strconv.Atoi(strings.TrimPrefix(r.key, "k"))
				if n%2 != 1 || r.offset != int64(n) || !strings.HasPrefix(r.value, "first-") {
					t.Fatalf("partly cleaned batch read by franz-go: %+v", got[:10])
				}
			}
			if kcat == "" {
				t.Log("kcat not installed: franz-go only")
				return
			}
			out := runTool(t, 60*time.Second, "", kcat, "-b", b.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%o %k %s\n`)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(got) {
				t.Fatalf("kcat read %d records, franz-go %d:\n%s", len(lines), len(got), out)
			}
			for i, r := range got {
				if want := fmt.Sprintf("%d %s %s", r.offset, r.key, r.value); lines[i] != want {
					t.Fatalf("kcat line %d = %q, want %q", i, lines[i], want)
				}
			}
		})
	}
}

// lookTool returns the path of an installed tool, or "".
func lookTool(name string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// TestCompactionConsumerOffsetsBounded commits offsets for 16 partitions of
// one group from 16 workers, one commit per request, while sampling the size
// of __consumer_offsets-0: the cleaner must keep it bounded (uncompacted,
// every commit takes ~100 bytes), and the group's last commits must be
// answered before and after a restart. make test commits 30,000 times with
// 64 KiB segments (3 MB uncompacted against a 1.5 MB bound); RB_LONG=1
// (make test-long) 100,000 times with 128 KiB segments and a 3 MB bound.
func TestCompactionConsumerOffsetsBounded(t *testing.T) {
	commits, segBytes, bound := 30_000, "65536", int64(1536<<10)
	if longRun() {
		commits, segBytes, bound = 100_000, "131072", 3<<20
	}
	b := startBroker(t, "", append(cleanerOverrides, "offsets.topic.num.partitions=1", "offsets.topic.segment.bytes="+segBytes)...)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 16, 1, nil, "offs-src"); err != nil || r.Err != nil {
		t.Fatalf("cannot create offs-src: %v %v", err, r.Err)
	}
	dir := filepath.Join(b.DataDir, "__consumer_offsets-0")
	const workers = 16
	var done atomic.Int64
	var maxBytes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < commits; i += workers {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Group = "bounded"
				req.Generation = -1
				tp := kmsg.NewOffsetCommitRequestTopic()
				tp.Topic = "offs-src"
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Partition = int32(w)
				p.Offset = int64(i)
				tp.Partitions = append(tp.Partitions, p)
				req.Topics = append(req.Topics, tp)
				resp, err := req.RequestWith(ctx, cl)
				if err == nil {
					if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
						err = fmt.Errorf("commit %d: error code %d", i, code)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if n := dirLogBytes(t, dir); n > maxBytes.Load() {
				maxBytes.Store(n)
			}
		}
	}()
	start := time.Now()
	wg.Wait()
	close(stopSampling)
	sampler.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	end := dirLogBytes(t, dir)
	t.Logf("%d commits in %v; __consumer_offsets-0: %d bytes at the end, at most %d bytes sampled", done.Load(),
		time.Since(start).Round(time.Millisecond), end, maxBytes.Load())
	if maxBytes.Load() > bound || end > bound {
		t.Fatalf("__consumer_offsets-0 grew to %d bytes (end %d, bound %d): not bounded", maxBytes.Load(), end, bound)
	}
	// Every partition's last commit is what the coordinator answers.
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "bounded")
	if err != nil {
		t.Fatal(err)
	}
	for w := range workers {
		last := int64(commits - workers + w)
		if o, ok := offs.Lookup("offs-src", int32(w)); !ok || o.At != last {
			t.Errorf("partition %d: committed %+v, want %d", w, o, last)
		}
	}
	// And again after a restart, from the compacted log.
	b.Restart()
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	offs, err = kadm.NewClient(cl2).FetchOffsets(ctx, "bounded")
	if err != nil {
		t.Fatal(err)
	}
	for w := range workers {
		last := int64(commits - workers + w)
		if o, ok := offs.Lookup("offs-src", int32(w)); !ok || o.At != last {
			t.Errorf("after restart partition %d: committed %+v, want %d", w, o, last)
		}
	}
}
