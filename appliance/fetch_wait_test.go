package appliance

import (
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// produceFrame builds a produce v9 frame of one 100-byte record to
// partition p of topic "a".
func produceFrame(p int32, acks int16, corrID int32) []byte {
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = acks, 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "a"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = p
	pp.Records = appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, []kmsg.Record{{Value: make([]byte, 100)}})
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	return frameOf(pr, 9, corrID)
}

// bigProduceFrame is an acks=1 produce of one batch of n 1000-byte records
// to partition p of "a".
func bigProduceFrame(p int32, n int, corrID int32) []byte {
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = 1, 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "a"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = p
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i].Value = make([]byte, 1000)
	}
	pp.Records = appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	return frameOf(pr, 9, corrID)
}

// produceTo is an acks=1 produceFrame.
func produceTo(p int32) []byte { return produceFrame(p, 1, 20+p) }

// longPollFrame is a fetch v12 of partitions 1 and 2 of "a" (one on each
// shard) from offset 0.
func longPollFrame(minBytes, maxWaitMs int32) []byte {
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = maxWaitMs, minBytes, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	for _, p := range []int32{1, 2} {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	return frameOf(fr, 12, 9)
}

// sendFetch writes a fetch on a connection of its own and returns a channel
// that gets the decoded answer (nil when the connection failed).
func sendFetch(t *testing.T, addr string, frame []byte) <-chan *kmsg.FetchResponse {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	out := make(chan *kmsg.FetchResponse, 1)
	go func() {
		var sz [4]byte
		nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(nc, sz[:]); err != nil {
			out <- nil
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(sz[:]))
		if _, err := io.ReadFull(nc, body); err != nil {
			out <- nil
			return
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		if err := resp.ReadFrom(body[5:]); err != nil { // correlation id, header tags
			out <- nil
			return
		}
		out <- resp
	}()
	return out
}

func recordBytes(resp *kmsg.FetchResponse) map[int32]int {
	got := map[int32]int{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			got[p.Partition] = len(p.RecordBatches)
		}
	}
	return got
}

// TestFetchLongPoll: a fetch short of min_bytes parks on its partitions
// (on both shards) without a goroutine and answers when appends bring
// enough bytes, not at max_wait_ms; one that never gets enough answers at
// max_wait_ms; neither leaves anything in the fetch purgatory.
func TestFetchLongPoll(t *testing.T) {
	f := newAllocFixture(t)
	addr := f.b.Addr().String()
	base := f.b.metrics.FetchPurgatory()

	// One batch is ~170 bytes: min_bytes 250 needs one on each partition.
	start := time.Now()
	answer := sendFetch(t, addr, longPollFrame(250, 20000))
	if !wait.Until(5*time.Second, func() bool { return f.b.metrics.FetchPurgatory() > base }) {
		t.Fatal("the long poll did not park within 5 s")
	}
	f.produceOne(produceTo(1))
	select {
	case resp := <-answer:
		t.Fatalf("answered after one batch, below min_bytes: %v", recordBytes(resp))
	case <-time.After(300 * time.Millisecond):
	}
	f.produceOne(produceTo(2))
	select {
	case resp := <-answer:
		if resp == nil {
			t.Fatal("the long poll's connection failed")
		}
		got := recordBytes(resp)
		if got[1] == 0 || got[2] == 0 {
			t.Fatalf("record bytes per partition %v, want both partitions", got)
		}
		t.Logf("answered %v after %v", got, time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not answer within 10 s of reaching min_bytes (max wait 20 s)")
	}

	start = time.Now()
	answer = sendFetch(t, addr, longPollFrame(1<<20, 400))
	select {
	case resp := <-answer:
		if resp == nil {
			t.Fatal("the long poll's connection failed")
		}
		if waited := time.Since(start); waited < 350*time.Millisecond {
			t.Fatalf("answered after %v, before max_wait_ms 400", waited)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not answer at max_wait_ms")
	}

	wait.Until(5*time.Second, func() bool { return f.b.metrics.FetchPurgatory() == base })
	if got := f.b.metrics.FetchPurgatory(); got != base {
		t.Fatalf("fetch purgatory %d, want %d", got, base)
	}
}

// TestFrameBuffers: frames up to maxStateFrame use the state's own buffer,
// grown in powers of two; larger ones take a size-class buffer that goes
// back to its free list on release and is the one the next frame of that
// class gets; sizes past the largest class are plain allocations.
func TestFrameBuffers(t *testing.T) {
	for _, tc := range []struct{ n, wantCap int }{
		{1, 512},
		{600, 1024},
		{maxStateFrame, maxStateFrame},
		{maxStateFrame + 1, 128 << 10},
		{128 << 10, 128 << 10},
		{3 << 20, 4 << 20},
		{32 << 20, 32 << 20},
		{40 << 20, 40 << 20},
	} {
		rs := getReqState(tc.n)
		if len(rs.frame) != tc.n || cap(rs.frame) != tc.wantCap {
			t.Fatalf("getReqState(%d): frame len %d cap %d, want cap %d", tc.n, len(rs.frame), cap(rs.frame), tc.wantCap)
		}
		rs.pooled = true
		rs.unref()
		if rs.frame != nil || rs.fb != nil {
			t.Fatalf("a released %d-byte state kept its frame", tc.n)
		}
	}
	// Drain class 4 (2 MiB), then a released buffer is the next one out.
	for len(frameFree[4]) > 0 {
		<-frameFree[4]
	}
	rs := getReqState(2 << 20)
	first := &rs.fb.b[0]
	rs.pooled = true
	rs.unref()
	rs = getReqState(2<<20 - 7)
	if &rs.fb.b[0] != first {
		t.Fatal("a 2 MiB frame did not reuse the buffer released before it")
	}
	// A full free list drops what comes back.
	for c := range frameFree {
		if got, want := cap(frameFree[c]), max(1, frameClassKeep>>(frameClassShift+c)); got != want {
			t.Fatalf("class %d keeps %d buffers, want %d", c, got, want)
		}
	}
	for range cap(frameFree[8]) + 2 {
		putFrameBuf(&frameBuf{b: make([]byte, 32<<20), class: 8})
	}
	if len(frameFree[8]) != cap(frameFree[8]) {
		t.Fatalf("class 8 holds %d buffers, want %d", len(frameFree[8]), cap(frameFree[8]))
	}
}

// TestPrefaultFrameBufs: prefaultFrameBufs (log.io.cache.prefault) fills
// the free lists of the 1 MiB to 16 MiB classes to their bounds with
// buffers whose pages are resident (mincore), leaves the smaller and the
// largest class alone, adds nothing to full lists, and a large frame then
// takes a prefaulted buffer.
func TestPrefaultFrameBufs(t *testing.T) {
	for c := range frameFree {
		for len(frameFree[c]) > 0 {
			<-frameFree[c]
		}
	}
	n := prefaultFrameBufs(frameBufPrefaultMin)
	var want int64
	for c := range frameFree {
		size := 1 << (frameClassShift + c)
		if size < frameBufPrefaultMin || c == frameClasses-1 {
			if len(frameFree[c]) != 0 {
				t.Fatalf("class %d (%d bytes): %d buffers prefaulted, want none", c, size, len(frameFree[c]))
			}
			continue
		}
		if len(frameFree[c]) != cap(frameFree[c]) {
			t.Fatalf("class %d: %d of %d buffers prefaulted", c, len(frameFree[c]), cap(frameFree[c]))
		}
		want += int64(cap(frameFree[c]) * size)
		fb := <-frameFree[c]
		if len(fb.b) != size || fb.class != c {
			t.Fatalf("class %d: a %d-byte buffer of class %d", c, len(fb.b), fb.class)
		}
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(fb.b))) // large allocations are page-aligned
		vec := make([]byte, (len(fb.b)+pageSize-1)/pageSize)
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, addr, uintptr(len(fb.b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatal(e)
		}
		for i, v := range vec {
			if v&1 == 0 {
				t.Fatalf("class %d: page %d of a prefaulted buffer is not resident", c, i)
			}
		}
		frameFree[c] <- fb
	}
	if n != want || want != 80<<20 {
		t.Fatalf("prefaulted %d bytes, want %d (80 MiB)", n, want)
	}
	if again := prefaultFrameBufs(frameBufPrefaultMin); again != 0 {
		t.Fatalf("%d bytes prefaulted into full lists", again)
	}
	before := len(frameFree[frameClass(5<<20)])
	rs := getReqState(5 << 20)
	if len(frameFree[frameClass(5<<20)]) != before-1 || rs.fb.b[0] != 1 {
		t.Fatal("a 5 MB frame did not take a prefaulted 8 MiB buffer")
	}
	rs.pooled = true
	rs.unref()
}

// orderedFetch is a fetch v12 of partitions ps of "a", in that order, from
// offset 0, answered at once.
func orderedFetch(maxBytes int32, ps ...int32) []byte {
	return orderedFetchPart(maxBytes, 1<<20, ps...)
}

// orderedFetchPart is orderedFetch with partition_max_bytes partMax.
func orderedFetchPart(maxBytes, partMax int32, ps ...int32) []byte {
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = 0, 1, maxBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	for _, p := range ps {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, partMax
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	return frameOf(fr, 12, 11)
}

// newOrderFixture is a broker whose partition 0 holds 200 batches of ~170
// bytes and partitions 1 and 2 (on different shards) 3 each.
func newOrderFixture(t *testing.T) *allocFixture {
	f := newAllocFixture(t)
	for i := 0; i < 3; i++ {
		f.produceOne(produceTo(1))
		f.produceOne(produceTo(2))
	}
	return f
}

// TestFetchMaxBytesRequestOrder: the shards are visited in their own order,
// but max_bytes lets partitions through in request order, as Kafka does:
// the first partition with records, then those that still fit.
func TestFetchMaxBytesRequestOrder(t *testing.T) {
	f := newOrderFixture(t)
	for _, tc := range []struct {
		maxBytes int32
		order    []int32
		want     map[int32]bool // partitions that get records
	}{
		{1, []int32{2, 1, 0}, map[int32]bool{2: true}},
		{1, []int32{1, 2, 0}, map[int32]bool{1: true}},
		{1, []int32{0, 2, 1}, map[int32]bool{0: true}},
		{600, []int32{2, 1, 0}, map[int32]bool{2: true}},
		{1100, []int32{2, 1, 0}, map[int32]bool{2: true, 1: true}},
		{1100, []int32{1, 0, 2}, map[int32]bool{1: true, 0: true}}, // 0 keeps the batches that fit after 1's
		{1 << 20, []int32{2, 1, 0}, map[int32]bool{2: true, 1: true, 0: true}},
	} {
		resp := <-sendFetch(t, f.b.Addr().String(), orderedFetch(tc.maxBytes, tc.order...))
		if resp == nil {
			t.Fatal("fetch failed")
		}
		got := recordBytes(resp)
		total := 0
		for _, n := range got {
			total += n
		}
		if tc.maxBytes > 1 && total > int(tc.maxBytes) {
			t.Fatalf("max_bytes %d, order %v: %d record bytes %v", tc.maxBytes, tc.order, total, got)
		}
		for _, p := range tc.order {
			if (got[p] > 0) != tc.want[p] {
				t.Fatalf("max_bytes %d, order %v: record bytes per partition %v, want records on %v", tc.maxBytes, tc.order, got, tc.want)
			}
		}
	}
}

// TestFetchPartitionMaxBytesOnce: a batch larger than partition_max_bytes
// comes back for the first partition with records, in request order, and
// for no other, although partitions 1 and 2 sit on different shards and
// each shard's read lets its own first batch through (KIP-74).
func TestFetchPartitionMaxBytesOnce(t *testing.T) {
	f := newOrderFixture(t)
	for _, tc := range []struct {
		partMax int32
		order   []int32
	}{{100, []int32{1, 2, 0}}, {100, []int32{2, 0, 1}}, {100, []int32{0, 1, 2}}, {0, []int32{2, 1, 0}}, {-1, []int32{1, 0, 2}}} {
		resp := <-sendFetch(t, f.b.Addr().String(), orderedFetchPart(1<<20, tc.partMax, tc.order...))
		if resp == nil {
			t.Fatal("fetch failed")
		}
		got := recordBytes(resp)
		for i, p := range tc.order {
			if (got[p] > 0) != (i == 0) {
				t.Fatalf("partition_max_bytes %d, order %v: record bytes per partition %v, want a batch for %d alone", tc.partMax, tc.order, got, tc.order[0])
			}
		}
	}
}

// TestFetchMaxBytesBrokerCap: fetch.max.bytes caps what a request's
// max_bytes asks for (0 or less asks for the cap), as in Kafka; the first
// batch still comes whole. Below 1024 the broker refuses to start.
func TestFetchMaxBytesBrokerCap(t *testing.T) {
	total := func(f *allocFixture, maxBytes int32) int {
		resp := <-sendFetch(t, f.b.Addr().String(), orderedFetch(maxBytes, 0))
		if resp == nil {
			t.Fatal("fetch failed")
		}
		return recordBytes(resp)[0]
	}
	capped := newAllocFixtureWith(t, map[string]string{"fetch.max.bytes": "2000"}) // partition 0 holds 200 batches of ~170 bytes
	for _, m := range []int32{1 << 20, 0, -1} {
		if n := total(capped, m); n == 0 || n > 2000 {
			t.Fatalf("fetch.max.bytes 2000, max_bytes %d: %d record bytes", m, n)
		}
	}
	if n := total(capped, 500); n == 0 || n > 500 {
		t.Fatalf("fetch.max.bytes 2000, max_bytes 500: %d record bytes", n)
	}
	if n := total(newAllocFixture(t), 1<<20); n <= 2000 {
		t.Fatalf("default fetch.max.bytes, max_bytes 1 MiB: %d record bytes, want all 200 batches", n)
	}
	if _, err := ConfigFromProperties(map[string]string{"log.dirs": t.TempDir(), "fetch.max.bytes": "100"}); err == nil {
		t.Fatal("fetch.max.bytes 100 accepted")
	}
}

// fetchFrom is a read_uncommitted fetch v12 of partitions of "a" at the
// given offsets with the given min_bytes, max_bytes and max_wait_ms.
func fetchFrom(minBytes, maxBytes, maxWaitMs int32, offsets map[int32]int64) []byte {
	return fetchAtOffsets(minBytes, maxBytes, maxWaitMs, 0, offsets, 31)
}

// fetchAtOffsets is a fetch v12 of partitions 0-2 of "a" that has in offsets,
// at those offsets, each with partition_max_bytes 1 MiB.
func fetchAtOffsets(minBytes, maxBytes, maxWaitMs int32, iso int8, offsets map[int32]int64, corrID int32) []byte {
	fr := kmsg.NewPtrFetchRequest()
	fr.MinBytes, fr.MaxBytes, fr.MaxWaitMillis, fr.IsolationLevel = minBytes, maxBytes, maxWaitMs, iso
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	for p := int32(0); p < 3; p++ {
		if off, ok := offsets[p]; ok {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, off, 1<<20, -1
			ft.Partitions = append(ft.Partitions, fp)
		}
	}
	fr.Topics = append(fr.Topics, ft)
	return frameOf(fr, 12, corrID)
}

// tailHolders sums the holders of the tail blocks of "a"'s partitions
// (nvme.Log.TailBlockHolders), each read on its shard.
func (f *allocFixture) tailHolders() int32 {
	var n int32
	for _, st := range f.b.shards {
		st.loop.Call(func() {
			for _, p := range st.parts {
				if p.topic == "a" {
					n += p.log.TailBlockHolders()
				}
			}
		})
	}
	return n
}

// TestFetchReleasesUnsentReads: in direct mode the chunks a fetch read and
// will not send hold their block buffers until released: those of a long
// poll's pass that parked short of min_bytes (the next pass reads again),
// and those trimToMaxBytes cuts. Dropped unreleased, a buffer went to the
// garbage collector instead of the cache's free list and a registered one
// kept its ring slot for good. Once every answer is sent, the tail blocks'
// holders must be what they were before, with tail reads and with reads on
// the shards.
func TestFetchReleasesUnsentReads(t *testing.T) {
	for _, tail := range []bool{true, false} {
		f := newAllocFixtureWith(t, map[string]string{"log.io.mode": "direct", "log.io.tail.reads": strconv.FormatBool(tail)})
		if f.b.cfg.LogIOMode != "direct" {
			t.Skip("RB_IO_MODE chose buffered mode: no block buffers")
		}
		addr := f.b.Addr().String()
		f.produceOne(produceTo(1))
		f.produceOne(produceTo(2))
		first := <-sendFetch(t, addr, fetchFrom(1, 1<<20, 0, map[int32]int64{1: 0, 2: 0}))
		if first == nil || len(first.Topics) != 1 || len(first.Topics[0].Partitions) != 2 {
			t.Fatalf("first fetch failed: %+v", first)
		}
		next := map[int32]int64{}
		batch := int32(0)
		for _, p := range first.Topics[0].Partitions {
			next[p.Partition] = p.HighWatermark
			batch = max(batch, int32(len(p.RecordBatches)))
		}
		settled := func(want int32) int32 {
			wait.Until(3*time.Second, func() bool { return f.tailHolders() == want })
			return f.tailHolders()
		}
		// Nothing in flight: the files' and the tail views' holds, once
		// two readings 10 ms apart agree.
		base := f.tailHolders()
		wait.Every(10*time.Millisecond, time.Second, func() bool {
			n := f.tailHolders()
			same := n == base
			base = n
			return same
		})
		parked := f.b.metrics.FetchPurgatory()
		const rounds = 4
		for i := 0; i < rounds; i++ {
			// One append brings less than min_bytes: its pass parks with
			// what it read; the second append's pass reads both again.
			answer := sendFetch(t, addr, fetchFrom(batch+1, 1<<20, 10000, next))
			if !wait.Until(5*time.Second, func() bool { return f.b.metrics.FetchPurgatory() > parked }) {
				t.Fatalf("long poll %d did not park within 5 s", i)
			}
			f.produceOne(produceTo(1))
			// Give the woken pass time to read and park again before the
			// second append (if it has not, that append's pass reads both
			// and the test still holds; it only exercises less).
			time.Sleep(30 * time.Millisecond)
			f.produceOne(produceTo(2))
			resp := <-answer
			if resp == nil || len(resp.Topics) != 1 {
				t.Fatalf("long poll %d failed: %+v", i, resp)
			}
			for _, p := range resp.Topics[0].Partitions {
				if len(p.RecordBatches) == 0 {
					t.Fatalf("long poll %d: partition %d answered no records", i, p.Partition)
				}
				next[p.Partition] = p.HighWatermark
			}
			// max_bytes lets partition 1's batch through and cuts
			// partition 2's, which its shard read.
			resp = <-sendFetch(t, addr, fetchFrom(1, batch+8, 0, map[int32]int64{1: next[1] - 1, 2: next[2] - 1}))
			if resp == nil || len(resp.Topics) != 1 {
				t.Fatalf("fetch %d over max_bytes failed: %+v", i, resp)
			}
			for _, p := range resp.Topics[0].Partitions {
				if got := len(p.RecordBatches); p.Partition == 1 && got == 0 || p.Partition == 2 && got != 0 {
					t.Fatalf("fetch %d, max_bytes %d: partition %d answered %d record bytes", i, batch+8, p.Partition, got)
				}
			}
		}
		if n := settled(base); n != base {
			t.Fatalf("tail reads %v: the tail blocks have %d holders after %d long polls and %d cut fetches were answered, %d before: reads that were not sent are still held", tail, n, rounds, rounds, base)
		}
	}
}

// TestGroupByShardOrder: groupByShard puts the partitions of each shard
// together, the connection's own shard last and the others in the order
// after it, and keeps request order within a shard (a stable sort by
// rank, which it must match element for element).
func TestGroupByShardOrder(t *testing.T) {
	const n = 3
	b := &Broker{}
	for i := 0; i < n; i++ {
		b.shards = append(b.shards, &shardState{id: i})
	}
	top := &TopicImage{Name: "a", ID: newTopicID()}
	placed := &placedTopic{}
	for p := 0; p < 40; p++ {
		top.Partitions = append(top.Partitions, PartitionImage{Partition: int32(p)})
		placed.shards = append(placed.shards, int32((p*7+p/3)%n))
		placed.views = append(placed.views, &partView{})
	}
	b.ctl.lm = newLogManager(b)
	b.ctl.lm.table.Store(&placement{topics: map[TopicID]*placedTopic{top.ID: placed}})
	shardOf := func(p int32) int { return int(placed.shards[p]) }
	for own := 0; own < n; own++ {
		fs := &fetchState{b: b, r: &wire.Request{Conn: &conn{shard: own}}}
		for p := range top.Partitions {
			fs.ins = append(fs.ins, fetchPartIn{topic: top, partition: int32(p), pi: p})
		}
		rank := func(in fetchPartIn) int { return (shardOf(in.partition) - own - 1 + 2*n) % n }
		orig := slices.Clone(fs.ins)
		want := slices.Clone(fs.ins)
		slices.SortStableFunc(want, func(x, y fetchPartIn) int { return rank(x) - rank(y) })
		for round := 0; round < 2; round++ { // the second reuses the scratch slices
			fs.ins = append(fs.ins[:0], orig...)
			fs.groupByShard()
			if len(fs.ins) != len(want) {
				t.Fatalf("own shard %d: %d partitions after grouping, want %d", own, len(fs.ins), len(want))
			}
			for i := range want {
				if fs.ins[i].partition != want[i].partition {
					t.Fatalf("own shard %d, round %d: position %d holds partition %d (shard %d), want %d (shard %d)", own, round, i,
						fs.ins[i].partition, shardOf(fs.ins[i].partition), want[i].partition, shardOf(want[i].partition))
				}
			}
			if last := fs.ins[len(fs.ins)-1]; shardOf(last.partition) != own {
				t.Fatalf("own shard %d: the last partition is on shard %d", own, shardOf(last.partition))
			}
		}
	}
}

// TestFetchMinBytesCountsLimitedPartitions: min_bytes is held against what
// the partitions could give within their limits, as Kafka's delayed fetch
// does: a partition whose read stopped at its partition_max_bytes counts
// at that limit (whole batches never fill it exactly), and a read that
// stopped at the response's max_bytes ends the wait. A fetch with
// min_bytes equal to partition_max_bytes over a backlog larger than both
// used to wait out max_wait_ms every time. Without enough data the fetch
// still waits.
func TestFetchMinBytesCountsLimitedPartitions(t *testing.T) {
	for _, mode := range []string{"buffered", "direct"} {
		f := newAllocFixtureWith(t, map[string]string{"log.io.mode": mode})
		addr := f.b.Addr().String()
		for i := 0; i < 4; i++ { // ~1.2 MB in 300 KB batches on partition 1
			f.produceOne(bigProduceFrame(1, 300, int32(40+i)))
		}
		f.produceOne(bigProduceFrame(2, 300, 44)) // ~300 KB on partition 2
		timed := func(name string, frame []byte) (*kmsg.FetchResponse, time.Duration) {
			t.Helper()
			start := time.Now()
			resp := <-sendFetch(t, addr, frame)
			if resp == nil || len(resp.Topics) != 1 {
				t.Fatalf("%s, %s: fetch failed: %+v", f.b.cfg.LogIOMode, name, resp)
			}
			return resp, time.Since(start)
		}
		// min_bytes at partition_max_bytes (1 MiB): partition 1 is limited.
		resp, took := timed("min at the partition limit", fetchAtOffsets(1<<20, 50<<20, 5000, 0, map[int32]int64{1: 0}, 50))
		if took > 2*time.Second || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Fatalf("%s: min_bytes = partition_max_bytes over a 1.2 MB backlog answered %d bytes after %v (max wait 5 s)",
				f.b.cfg.LogIOMode, len(resp.Topics[0].Partitions[0].RecordBatches), took)
		}
		// The response's max_bytes stops the read: nothing more can come.
		_, took = timed("max_bytes reached", fetchAtOffsets(1<<20, 700<<10, 5000, 0, map[int32]int64{1: 0, 2: 0}, 51))
		if took > 2*time.Second {
			t.Fatalf("%s: a fetch filled to max_bytes waited %v for min_bytes", f.b.cfg.LogIOMode, took)
		}
		// Not enough anywhere: partition 2's 300 KB against 1 MiB waits.
		resp, took = timed("too little", fetchAtOffsets(1<<20, 50<<20, 300, 0, map[int32]int64{2: 0}, 52))
		if took < 250*time.Millisecond || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Fatalf("%s: a fetch short of min_bytes answered %d bytes after %v, want its records after max_wait 300 ms",
				f.b.cfg.LogIOMode, len(resp.Topics[0].Partitions[0].RecordBatches), took)
		}
	}
}
