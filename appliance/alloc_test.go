package appliance

// Allocation tests and benchmarks of the produce and fetch request path.
// A raw TCP client sends prepared request frames to a broker started in
// this process and reads the answers into a reused buffer, so what is
// measured is the engine's read, the frame decode, the dispatch, the
// handler, the owner shard, the response encode and the engine's write:
// the path a real connection takes, on whichever engine io.engine picks
// (RB_ENGINE and RB_IO_MODE override, as in the integration tests).
// testing.AllocsPerRun counts every allocation in the process, the broker's
// goroutines included; its integer division leaves out background work that
// allocates less than once per request (tickers, metrics).

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawClient speaks Kafka frames over one TCP connection without allocating
// per round trip.
type rawClient struct {
	tb testing.TB
	nc net.Conn
	in []byte
	sz [4]byte // a field: a local would escape through io.ReadFull
}

// frameOf encodes req as a request frame (size prefix included).
func frameOf(req kmsg.Request, version int16, corrID int32) []byte {
	req.SetVersion(version)
	f := []byte{0, 0, 0, 0}
	f = binary.BigEndian.AppendUint16(f, uint16(req.Key()))
	f = binary.BigEndian.AppendUint16(f, uint16(version))
	f = binary.BigEndian.AppendUint32(f, uint32(corrID))
	f = binary.BigEndian.AppendUint16(f, uint16(len("alloc-test")))
	f = append(f, "alloc-test"...)
	if req.IsFlexible() {
		f = append(f, 0)
	}
	f = req.AppendTo(f)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// roundTrip sends frame and returns the response body after the
// correlation id (and header tags when flexible).
func (c *rawClient) roundTrip(frame []byte, flexible bool) []byte {
	if _, err := c.nc.Write(frame); err != nil {
		c.tb.Fatal(err)
	}
	if _, err := io.ReadFull(c.nc, c.sz[:]); err != nil {
		c.tb.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(c.sz[:]))
	if cap(c.in) < n {
		c.in = make([]byte, n)
	}
	c.in = c.in[:n]
	if _, err := io.ReadFull(c.nc, c.in); err != nil {
		c.tb.Fatal(err)
	}
	body := c.in[4:]
	if flexible {
		body = body[1:]
	}
	return body
}

// allocFixture is a broker with one topic "a" (one partition) holding
// some batches, and the frames of a produce and a fetch request to it.
type allocFixture struct {
	b       *Broker
	c       *rawClient
	produce []byte // acks=1
	prodAll []byte // acks=-1
	fetch   []byte
}

func newAllocFixture(tb testing.TB) *allocFixture { return newAllocFixtureWith(tb, nil) }

// newAllocFixtureWith is newAllocFixture with extra broker properties.
func newAllocFixtureWith(tb testing.TB, extra map[string]string) *allocFixture {
	p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": tb.TempDir(), "shards": "2",
		"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1", "metrics.listener": "none", "log.cleaner.enable": "false"}
	for k, v := range extra {
		p[k] = v
	}
	if e := os.Getenv("RB_ENGINE"); e != "" {
		p["io.engine"] = e
	}
	if m := os.Getenv("RB_IO_MODE"); m != "" {
		p["log.io.mode"] = m
	}
	cfg, err := ConfigFromProperties(p)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	if err := b.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	nc, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	f := &allocFixture{b: b, c: &rawClient{tb: tb, nc: nc}}

	ct := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	// Three partitions, so they sit on both shards (placement balances by
	// count) and a fetch of all three is regrouped by shard (fetchState.groupByShard).
	t.Topic, t.NumPartitions, t.ReplicationFactor = "a", 3, 1
	ct.Topics = append(ct.Topics, t)
	ct.TimeoutMillis = 10000
	ctResp := kmsg.NewPtrCreateTopicsResponse()
	ctResp.SetVersion(7)
	if err := ctResp.ReadFrom(f.c.roundTrip(frameOf(ct, 7, 1), true)); err != nil || ctResp.Topics[0].ErrorCode != 0 {
		tb.Fatalf("create topic: %v %+v", err, ctResp.Topics)
	}

	f.produce = produceFrame(0, 1, 2)
	f.prodAll = produceFrame(0, -1, 3)

	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = 500, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	for p := int32(0); p < 3; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, 0, 16<<10
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	f.fetch = frameOf(fr, 12, 4)

	// The partition opens on its shard shortly after the topic exists:
	// produce until it answers without error, then fill a few batches.
	var code int16
	if !wait.Every(10*time.Millisecond, 10*time.Second, func() bool { code = f.produceCode(f.produce); return code == 0 }) {
		tb.Fatalf("produce keeps failing with error %d", code)
	}
	for i := 0; i < 200; i++ {
		f.produceOne(f.produce)
	}
	return f
}

// produceCode sends a produce frame and returns the partition's error code.
func (f *allocFixture) produceCode(frame []byte) int16 {
	body := f.c.roundTrip(frame, true)
	// topics: compact array (1 byte), name (1+1 bytes), partitions array
	// (1 byte), partition int32, error int16.
	if len(body) < 10 {
		f.c.tb.Fatalf("short produce response %x", body)
	}
	return int16(binary.BigEndian.Uint16(body[8:]))
}

func (f *allocFixture) produceOne(frame []byte) {
	if code := f.produceCode(frame); code != 0 {
		f.c.tb.Fatalf("produce answered error %d", code)
	}
}

// shardFetchReads is the fetch passes that read on any shard so far
// (passes answered from partition views and tails do not count).
func (f *allocFixture) shardFetchReads() uint64 {
	var n uint64
	for _, st := range f.b.shards {
		n += st.fetchReads.Load()
	}
	return n
}

// fetchOne sends the fetch and checks that records came back.
func (f *allocFixture) fetchOne() {
	body := f.c.roundTrip(f.fetch, true)
	// throttle 4, error 2, session 4, topics 1, name 2, parts 1, partition 4, error 2.
	if len(body) < 20 || binary.BigEndian.Uint16(body[18:]) != 0 {
		f.c.tb.Fatalf("fetch failed: %x", body[:min(len(body), 64)])
	}
	if len(body) < 16<<10-100 {
		f.c.tb.Fatalf("fetch returned %d bytes, want records", len(body))
	}
}

func BenchmarkRequestPathProduceAcks1(b *testing.B) {
	f := newAllocFixture(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(f.produce)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.produceOne(f.produce)
	}
}

func BenchmarkRequestPathProduceAcksAll(b *testing.B) {
	f := newAllocFixture(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(f.prodAll)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.produceOne(f.prodAll)
	}
}

func BenchmarkRequestPathFetch(b *testing.B) {
	f := newAllocFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.fetchOne()
	}
}

// TestRequestPathAllocs: in steady state a produce (acks=1, no fsync per
// request: flush.messages and flush.ms are at their defaults) and a fetch
// that returns records from the segment allocate nothing anywhere in the
// process, from the engine's read of the frame to its write of the answer.
func TestRequestPathAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("starts a broker; the race detector allocates")
	}
	f := newAllocFixture(t)
	for i := 0; i < 200; i++ { // warm up: pools, buffers, slices at size
		f.produceOne(f.produce)
		f.fetchOne()
	}
	if n := testing.AllocsPerRun(500, func() { f.produceOne(f.produce) }); n != 0 {
		t.Errorf("produce acks=1 allocates %.0f times per request, want 0", n)
	}
	if n := testing.AllocsPerRun(500, f.fetchOne); n != 0 {
		t.Errorf("fetch allocates %.0f times per request, want 0", n)
	}
	for i := 0; i < 20; i++ {
		f.produceOne(f.prodAll)
	}
	if n := testing.AllocsPerRun(100, func() { f.produceOne(f.prodAll) }); n != 0 {
		t.Errorf("produce acks=all allocates %.0f times per request, want 0", n)
	}
}

// TestLargeFrameAllocs: a produce frame larger than a state keeps takes a
// buffer of its size class, and a fetch between two of them does not hold
// one, so the pair allocates nothing in steady state. (The block cache is
// 8 MiB, so that the warm-up fills it and direct mode recycles its
// blocks, as it does once a broker has run for a while.)
func TestLargeFrameAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("starts a broker; the race detector allocates")
	}
	f := newAllocFixtureWith(t, map[string]string{"log.io.cache.bytes": "8388608"})
	big := bigProduceFrame(0, 300, 4)
	if len(big) <= maxStateFrame {
		t.Fatalf("the large produce frame is %d bytes, not above maxStateFrame", len(big))
	}
	for i := 0; i < 40; i++ { // 12 MB: past the cache
		f.produceOne(big)
		f.fetchOne()
	}
	if n := testing.AllocsPerRun(50, func() { f.produceOne(big); f.fetchOne() }); n != 0 {
		t.Errorf("a 300 KiB produce and a fetch allocate %.0f times per pair, want 0", n)
	}
}

// shardBarrier returns once every shard has run what was posted to it
// before the call (each shard's loop runs its messages in order).
func (f *allocFixture) shardBarrier() {
	for _, st := range f.b.shards {
		st.loop.Call(func() {})
	}
}
