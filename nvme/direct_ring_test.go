package nvme

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/ioring"
)

// segmentOnDisk reads the .log of segment base of dir without the log.
func segmentOnDisk(t *testing.T, dir string, base int64) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, segmentFileName(base, logSuffix)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeRingCache returns a cache of capacity bytes with a write ring and
// the ring. It locks the test's goroutine to its thread for the rest of
// the test: the ring is single-issuer.
func writeRingCache(t *testing.T, capacity int64) (*BlockCache, *ioring.Ring) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := ioring.New(ioring.Options{Entries: 64})
	if err != nil {
		t.Skipf("no io_uring: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	c := NewBlockCache(capacity)
	c.SetWriteRing(r)
	return c, r
}

// ringLog opens a direct-mode log in a new directory on a cache of
// capacity bytes with a write ring (writeRingCache), closed at the end of
// the test.
func ringLog(t *testing.T, capacity int64) (*BlockCache, *ioring.Ring, *Log, string) {
	t.Helper()
	cache, ring := writeRingCache(t, capacity)
	o := directOptions(t)
	o.Cache = cache
	dir := t.TempDir()
	l := mustOpen(t, dir, o)
	t.Cleanup(func() { l.Close() })
	return cache, ring, l, dir
}

// drainWrites runs the ring until the cache has no ring write in flight.
func drainWrites(t *testing.T, c *BlockCache, r *ioring.Ring) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.WritesInFlight() > 0 || r.Held() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d ring writes still in flight after 30 s", c.WritesInFlight())
		}
		if _, err := r.Wait(1, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Poll(); err != nil { // a settle's kick
		t.Fatal(err)
	}
}

// TestDirectRingWrites appends to three direct-mode logs that share one
// cache with a write ring: an append returns with its bytes queued, not on
// disk, WrittenEndOffset stays at the first unwritten append and the
// written hook runs as rounds complete; appends made while a round is in
// flight go out together in the next one; a roll waits for the old
// segment's writes. Every log then reads back, on disk and reopened, as
// appended.
func TestDirectRingWrites(t *testing.T) {
	cache, ring := writeRingCache(t, 8*DefaultCacheBlockBytes)
	o := directOptions(t)
	o.SegmentBytes = 4 << 20
	o.Cache = cache
	var dirs []string
	var logs []*Log
	hooks := make([]int, 3)
	for i := range 3 {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		l := mustOpen(t, dir, o)
		l.SetWrittenHook(func() { hooks[i]++ })
		logs = append(logs, l)
	}
	stored := make([][][]byte, len(logs))
	deferredSeen := false
	for round := range 60 {
		for i, l := range logs {
			if round%17 == 5 && i == 1 {
				before := hooks[i]
				if err := l.Roll(); err != nil { // waits for the old segment's writes
					t.Fatal(err)
				}
				if hooks[i] != before {
					t.Fatal("the written hook ran inside Roll")
				}
				segs := l.Segments()
				old := segs[len(segs)-2]
				disk := segmentOnDisk(t, dirs[i], old.BaseOffset)
				if int64(len(disk)) != old.Size {
					t.Fatalf("rolled segment is %d bytes on disk, %d of data", len(disk), old.Size)
				}
			}
			reps := 1 + (round+i)%2 // twice in a row: queued behind the first
			var last int64
			for k := range reps {
				last = l.LogEndOffset()
				b := appendN(t, l, 1, 1+(round+k)%5, 100+(round*7919+i*131+k)%60000, int64(round))
				stored[i] = append(stored[i], b...)
			}
			// A roll waits for the old segment's writes; the last append
			// is not on the device before the ring runs.
			if w := l.WrittenEndOffset(); w > last {
				t.Fatalf("round %d log %d: written end %d past the last append %d", round, i, w, last)
			}
		}
		s := logs[0].Segments()
		last := s[len(s)-1]
		disk := segmentOnDisk(t, dirs[0], last.BaseOffset)
		if logs[0].WrittenEndOffset() < logs[0].LogEndOffset() && allZero(disk[last.Size-1:last.Size]) {
			deferredSeen = true
		}
		if round%3 == 2 {
			// Let appends queue behind rounds in flight: complete one
			// completion at most, then append again next round.
			if _, err := ring.Wait(1, time.Second); err != nil {
				t.Fatal(err)
			}
			continue
		}
		drainWrites(t, cache, ring)
		for i, l := range logs {
			if w, leo := l.WrittenEndOffset(), l.LogEndOffset(); w != leo {
				t.Fatalf("round %d log %d: written end %d after the writes, log end %d", round, i, w, leo)
			}
		}
	}
	if !deferredSeen {
		t.Fatal("no append left its bytes off the disk until the ring ran")
	}
	st := cache.WriteStats()
	if st.Rounds == 0 || st.RingWrites < st.Rounds || st.Waits == 0 {
		t.Fatalf("write stats %+v: want rounds of ring writes and a roll's wait", st)
	}
	for i, l := range logs {
		if hooks[i] == 0 {
			t.Fatalf("log %d: the written hook never ran", i)
		}
		var disk []byte
		for _, s := range l.Segments() {
			disk = append(disk, segmentOnDisk(t, dirs[i], s.BaseOffset)[:s.Size]...)
		}
		if wantAll := bytes.Join(stored[i], nil); !bytes.Equal(disk, wantAll) {
			t.Fatalf("log %d: %d bytes on disk differ from the %d appended", i, len(disk), len(wantAll))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2 := mustOpen(t, dirs[i], testOptions(t))
		res, err := l2.Read(0, 1<<30, 1<<62, true)
		if err != nil || !bytes.Equal(readChunks(t, res), bytes.Join(stored[i], nil)) {
			t.Fatalf("log %d reopened reads back differently: %v", i, err)
		}
		l2.Close()
	}
}

// TestDirectRingQueuesBehindRound: appends to a file whose round is in
// flight are queued and go out as one round when it completes; the written
// end offset moves append by append as rounds complete.
func TestDirectRingQueuesBehindRound(t *testing.T) {
	cache, ring, l, dir := ringLog(t, 8*DefaultCacheBlockBytes)
	appendN(t, l, 1, 2, 300, 0) // round 1 in flight (prepared)
	firstEnd := l.LogEndOffset()
	var stored []byte
	for i := range 5 {
		stored = append(stored, bytes.Join(appendN(t, l, 1, 1, 200+i, 0), nil)...)
	}
	if st := cache.WriteStats(); st.Rounds != 1 {
		t.Fatalf("%d rounds submitted with one in flight, want 1", st.Rounds)
	}
	if w := l.WrittenEndOffset(); w != 0 {
		t.Fatalf("written end %d before any completion", w)
	}
	// Complete round 1: round 2 (the five appends, one range) goes out.
	for cache.WritesInFlight() > 0 && cache.WriteStats().Rounds == 1 {
		if _, err := ring.Wait(1, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if w := l.WrittenEndOffset(); w != firstEnd {
		t.Fatalf("written end %d after round 1, want %d", w, firstEnd)
	}
	st := cache.WriteStats()
	if st.Rounds != 2 || st.Ranges != 2 {
		t.Fatalf("stats %+v after round 1: want round 2 with the five appends as one range", st)
	}
	drainWrites(t, cache, ring)
	if w := l.WrittenEndOffset(); w != l.LogEndOffset() {
		t.Fatalf("written end %d, log end %d", w, l.LogEndOffset())
	}
	disk := segmentOnDisk(t, dir, 0)
	if !bytes.Contains(disk, stored) {
		t.Fatal("the queued appends are not on disk")
	}
}

// TestDirectRingWriteFailure: a ring write that fails takes its log
// offline (Append then returns ErrLogClosed wrapping the cause), the
// written end offset stays before the failed append, the written hook
// runs; another log on the same cache keeps writing.
func TestDirectRingWriteFailure(t *testing.T) {
	cache, ring := writeRingCache(t, 4*DefaultCacheBlockBytes)
	o := directOptions(t)
	o.Cache = cache
	badDir, goodDir := t.TempDir(), t.TempDir()
	fs := &faultyFS{failSuffix: logSuffix, readOnlyFd: true}
	bad, err := openLog(badDir, o, fs.open)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	hooked := 0
	bad.SetWrittenHook(func() { hooked++ })
	good := mustOpen(t, goodDir, o)
	defer good.Close()
	appendN(t, bad, 2, 2, 50, 1)
	drainWrites(t, cache, ring)
	okEnd := bad.LogEndOffset()

	fs.armed = true // ring writes now go to a read-only descriptor: EBADF
	appendN(t, bad, 1, 2, 50, 2)
	want := bytes.Join(appendN(t, good, 3, 2, 5000, 1), nil)
	before := hooked
	drainWrites(t, cache, ring)
	if hooked == before {
		t.Fatal("the written hook did not run for the failed write")
	}
	if w := bad.WrittenEndOffset(); w != okEnd {
		t.Fatalf("written end %d after the failed write, want %d", w, okEnd)
	}
	if _, err := bad.Append(simpleBatch(t, 1, 10, 3), AppendOptions{}); !errors.Is(err, ErrLogClosed) || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("append after a failed ring write: %v, want ErrLogClosed wrapping EBADF", err)
	}
	if w := good.WrittenEndOffset(); w != good.LogEndOffset() {
		t.Fatalf("good log: written end %d, log end %d", w, good.LogEndOffset())
	}
	if disk := segmentOnDisk(t, goodDir, 0); !bytes.Equal(disk[:len(want)], want) {
		t.Fatal("the good log's bytes are not on disk")
	}
}

// TestDirectRingWriteSplit: a round whose range starts in a block the file
// already holds bytes of on the device, and goes past it, is two ring
// writes (that block, then the new blocks), so ext4 can issue it without an
// io-wq hand-off; a range that starts on a block boundary or stays inside
// the old block is one write. Each case counts its ring writes and reads
// back from the disk.
func TestDirectRingWriteSplit(t *testing.T) {
	cache, ring := writeRingCache(t, 8*DefaultCacheBlockBytes)
	o := directOptions(t)
	o.Cache = cache
	dirs := []string{t.TempDir(), t.TempDir()}
	logs := []*Log{mustOpen(t, dirs[0], o), mustOpen(t, dirs[1], o)}
	var stored [2][]byte
	step := func(valueSize int) WriteStats {
		t.Helper()
		before := cache.WriteStats()
		for i, l := range logs {
			stored[i] = append(stored[i], bytes.Join(appendN(t, l, 1, 1, valueSize, 0), nil)...)
		}
		drainWrites(t, cache, ring)
		after := cache.WriteStats()
		return WriteStats{Rounds: after.Rounds - before.Rounds, Ranges: after.Ranges - before.Ranges, RingWrites: after.RingWrites - before.RingWrites}
	}
	// Empty files: each range starts at 0, one write each.
	if st := step(1000); st.Ranges != 2 || st.RingWrites != 2 {
		t.Fatalf("first appends: %+v, want 2 ranges in 2 ring writes", st)
	}
	// Still inside the first block: one write each.
	if st := step(500); st.Ranges != 2 || st.RingWrites != 2 {
		t.Fatalf("inside the old block: %+v, want 2 ranges in 2 ring writes", st)
	}
	// From the partly written block into new ones: two writes each.
	if st := step(20000); st.Ranges != 2 || st.RingWrites != 4 {
		t.Fatalf("past the old block: %+v, want 2 ranges in 4 ring writes", st)
	}
	for i, l := range logs {
		s := l.Segments()
		disk := segmentOnDisk(t, dirs[i], s[len(s)-1].BaseOffset)
		if !bytes.Equal(disk[:len(stored[i])], stored[i]) || !allZero(disk[len(stored[i]):4096*((len(stored[i])+4095)/4096)]) {
			t.Fatalf("log %d: the disk does not hold the %d bytes appended followed by zeros", i, len(stored[i]))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirectRingSettleHoldsOtherCompletions: while a roll waits for its
// segment's writes, a completion of another op is held (its handler does
// not run inside Roll) and dispatched by the next Poll; the written hooks
// of the writes completed during the wait also run from that Poll.
func TestDirectRingSettleHoldsOtherCompletions(t *testing.T) {
	_, ring, l, _ := ringLog(t, 8*DefaultCacheBlockBytes)
	hooked := 0
	l.SetWrittenHook(func() { hooked++ })
	appendN(t, l, 4, 3, 3000, 0)
	nopRan := false
	if _, err := ring.Nop(ioring.HandlerFunc(func(ioring.CQE) { nopRan = true })); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if nopRan || hooked != 0 {
		t.Fatalf("inside Roll: NOP handler ran %v, written hook ran %d times", nopRan, hooked)
	}
	if ring.Held() == 0 {
		t.Fatal("no completion held by the roll's wait")
	}
	if w := l.WrittenEndOffset(); w != l.LogEndOffset() {
		t.Fatalf("written end %d after the roll, log end %d", w, l.LogEndOffset())
	}
	if _, err := ring.Poll(); err != nil {
		t.Fatal(err)
	}
	if !nopRan || hooked == 0 || ring.Held() != 0 {
		t.Fatalf("after Poll: NOP ran %v, hook ran %d times, %d held", nopRan, hooked, ring.Held())
	}
}

// TestDirectRingReadsUnwrittenFromMemory: blocks filled and evicted from a
// small cache before their writes complete are read from memory, never
// from the disk (which still holds zeros there), and Prefetch lists none
// of them.
func TestDirectRingReadsUnwrittenFromMemory(t *testing.T) {
	cache, ring, l, _ := ringLog(t, 2*DefaultCacheBlockBytes)
	// Keep one round in flight's worth of appends queued: nothing is
	// submitted to the kernel until the ring is entered.
	var stored []byte
	for i := range 60 { // ~4.2 MiB: the first blocks are evicted, unwritten
		stored = append(stored, bytes.Join(appendN(t, l, 1, 7, 10000+i, int64(i)), nil)...)
	}
	if st := cache.Stats(); st.Evictions == 0 {
		t.Fatalf("cache stats %+v: want evictions", st)
	}
	var pf BlockPrefetch
	pf.Begin(cache)
	if l.Prefetch(&pf, 0, 4<<20); pf.Pending() != 0 {
		t.Fatalf("Prefetch listed %d unwritten blocks", pf.Pending())
	}
	res, err := l.Read(0, 8<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := readChunks(t, res); !bytes.Equal(got, stored) {
		t.Fatalf("read %d bytes before the writes completed; they differ from the %d appended", len(got), len(stored))
	}
	drainWrites(t, cache, ring)
	res, err = l.Read(0, 8<<20, 1<<62, true)
	if err != nil || !bytes.Equal(readChunks(t, res), stored) {
		t.Fatalf("read after the writes differs: %v", err)
	}
}

// runPrefetch starts pf's listed reads on ring and runs the ring until
// they have all completed.
func runPrefetch(t *testing.T, ring *ioring.Ring, pf *BlockPrefetch) {
	t.Helper()
	done := false
	if pf.Start(ring, func() { done = true }) == 0 {
		t.Fatal("Start started no reads")
	}
	for !done {
		if _, err := ring.Wait(1, time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirectPrefetch: blocks a read would miss are listed by Prefetch, read
// through the ring by Start and put into the cache, so the read that
// follows misses nothing and returns the appended bytes; a block whose file
// is forgotten (retention, the cleaner) while its read is in flight is not
// cached.
func TestDirectPrefetch(t *testing.T) {
	cache, ring := writeRingCache(t, 4*DefaultCacheBlockBytes)
	cache.SetWriteRing(nil) // plain pwrites; the ring serves the reads
	o := directOptions(t)
	o.Cache = cache
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	var stored []byte
	for i := range 400 { // ~9 MiB: the first blocks are evicted
		stored = append(stored, bytes.Join(appendN(t, l, 1, 3, 7000+i%1000, int64(i)), nil)...)
	}
	wait := func(pf *BlockPrefetch) { t.Helper(); runPrefetch(t, ring, pf) }
	var pf BlockPrefetch
	pf.Begin(cache)
	if n := l.Prefetch(&pf, 0, 2<<20); n < 2<<20 || pf.Pending() < 2 {
		t.Fatalf("Prefetch from 0: %d bytes, %d blocks listed; want 2 MiB in 2 or more blocks", n, pf.Pending())
	}
	listed := pf.Pending()
	before := cache.Stats()
	wait(&pf)
	mid := cache.Stats()
	if got := mid.AsyncReads - before.AsyncReads; got != uint64(listed) {
		t.Fatalf("%d blocks read through the ring, want %d", got, listed)
	}
	res, err := l.Read(0, 2<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	got := readChunks(t, res)
	if after := cache.Stats(); after.Misses != mid.Misses {
		t.Fatalf("the read after the prefetch missed %d blocks", after.Misses-mid.Misses)
	}
	if len(got) == 0 || !bytes.Equal(got, stored[:len(got)]) {
		t.Fatalf("read %d bytes after the prefetch; they differ from what was appended", len(got))
	}
	// Nothing left to list for the same read.
	pf.Begin(cache)
	if l.Prefetch(&pf, 0, 1<<20); pf.Pending() != 0 {
		t.Fatalf("%d blocks listed again after they were read", pf.Pending())
	}
	// A forgotten file's block is not cached.
	d := l.segs[0].log.(*directFile)
	cache.dropFile(d.id, 0)
	pf.Begin(cache)
	l.Prefetch(&pf, 0, 1<<20)
	d.forget()
	wait(&pf)
	for k := range cache.entries {
		if k.file == d.id {
			t.Fatalf("block %d of a forgotten file was cached", k.block)
		}
	}
}

// TestDirectPrefetchCoversRead: for reads from any offset (first, middle
// and last of each batch, found through the offset index or the recent
// batches) with nothing cached, the blocks Prefetch lists, read through the
// ring round after round, are all the read needs: it misses nothing. The
// batches range from 500 bytes to ~1 MB, so the index entry at or before an
// offset may lie a whole 1 MB batch before the batch that holds it (the
// catch-up bench's consumer read ~1 in 3 passes with a blocking pread on
// the shard's loop when Prefetch stopped an index interval past maxBytes
// from that entry).
func TestDirectPrefetchCoversRead(t *testing.T) {
	cache, ring := writeRingCache(t, 16*DefaultCacheBlockBytes)
	cache.SetWriteRing(nil) // plain pwrites; the ring serves the reads
	o := directOptions(t)
	o.Cache = cache
	o.SegmentBytes = 256 << 20
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	type batchAt struct{ first, last, pos, end int64 }
	var batches []batchAt
	var stored []byte
	for i := range 90 { // ~24 MiB
		recs, size := 1+i%17, 500+(i*977)%9000
		if i%5 == 2 {
			recs, size = 60, 16000 // ~960 KB
		}
		first := l.LogEndOffset()
		b := appendN(t, l, 1, recs, size, int64(i))[0]
		batches = append(batches, batchAt{first, l.LogEndOffset() - 1, int64(len(stored)), int64(len(stored) + len(b))})
		stored = append(stored, b...)
	}
	d := l.segs[0].log.(*directFile)
	wait := func(pf *BlockPrefetch) { t.Helper(); runPrefetch(t, ring, pf) }
	reads, ringReads := 0, uint64(0)
	for _, b := range batches {
		for _, off := range []int64{b.first, (b.first + b.last) / 2, b.last} {
			for _, max := range []int32{1 << 20, 200 << 10} {
				cache.dropFile(d.id, 0)
				var pf BlockPrefetch
				pf.Begin(cache)
				before := cache.Stats()
				for round := 0; ; round++ {
					if l.Prefetch(&pf, off, max); pf.Pending() == 0 {
						break
					}
					if round == 16 {
						t.Fatalf("offset %d: still listing blocks after 16 rounds", off)
					}
					wait(&pf)
				}
				mid := cache.Stats()
				res, err := l.Read(off, max, 1<<62, max == 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				got := readChunks(t, res)
				if after := cache.Stats(); after.Misses != mid.Misses {
					t.Fatalf("offset %d (batch [%d, %d] at %d), max %d: the read after the prefetch missed %d blocks",
						off, b.first, b.last, b.pos, max, after.Misses-mid.Misses)
				}
				// A batch larger than max comes back only as a first batch
				// (KIP-74), which the 200 KiB reads do not ask for.
				big := b.end-b.pos > int64(max)
				if len(got) == 0 && !big || len(got) > 0 && big || !bytes.Equal(got, stored[b.pos:b.pos+int64(len(got))]) {
					t.Fatalf("offset %d, max %d: read %d bytes; they are not the log's from %d", off, max, len(got), b.pos)
				}
				reads++
				ringReads += mid.AsyncReads - before.AsyncReads
			}
		}
	}
	t.Logf("%d reads, %d blocks read through the ring before them", reads, ringReads)
}

// TestDirectPrefetchSmallCache: with a two-block cache a pass may still
// read two blocks, so a batch that crosses a block boundary is prefetched
// whole and its read misses nothing (with a budget of half the cache, one
// block, its second block was read with a blocking pread).
func TestDirectPrefetchSmallCache(t *testing.T) {
	cache, ring := writeRingCache(t, 2*DefaultCacheBlockBytes)
	cache.SetWriteRing(nil)
	o := directOptions(t)
	o.Cache = cache
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	appendN(t, l, 1, 30, 16000, 0) // ~480 KB
	second := l.LogEndOffset()
	appendN(t, l, 5, 60, 16000, 1) // ~960 KB each: the first spans blocks 0 and 1
	d := l.segs[0].log.(*directFile)
	cache.dropFile(d.id, 0)
	var pf BlockPrefetch
	pf.Begin(cache)
	for round := 0; ; round++ {
		if l.Prefetch(&pf, second, 1<<20); pf.Pending() == 0 {
			break
		}
		if round == 4 {
			t.Fatal("still listing blocks after 4 rounds")
		}
		runPrefetch(t, ring, &pf)
	}
	mid := cache.Stats()
	if mid.AsyncReads < 2 {
		t.Fatalf("%d blocks prefetched, want both blocks of the batch", mid.AsyncReads)
	}
	if _, err := l.Read(second, 1<<20, 1<<62, true); err != nil {
		t.Fatal(err)
	}
	if after := cache.Stats(); after.Misses != mid.Misses {
		t.Fatalf("the read after the prefetch missed %d blocks", after.Misses-mid.Misses)
	}
}

// TestDirectRingRefusedWritesByPwrite: with the ring closed (a shard
// stopping), appends are written with pwrite in its place: Append succeeds
// with its bytes on disk and the written end at the log end, and the
// written hook does not run inside Append. When that pwrite fails as well,
// Append fails with ErrLogClosed and the log is offline.
func TestDirectRingRefusedWritesByPwrite(t *testing.T) {
	cache, ring := writeRingCache(t, 8*DefaultCacheBlockBytes)
	o := directOptions(t)
	o.Cache = cache
	dir := t.TempDir()
	fs := &faultyFS{failSuffix: logSuffix}
	l, err := openLog(dir, o, fs.open)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	inAppend, hookInside := false, false
	l.SetWrittenHook(func() { hookInside = hookInside || inAppend })
	ring.Close()
	inAppend = true
	want := bytes.Join(appendN(t, l, 3, 2, 700, 0), nil)
	inAppend = false
	if hookInside {
		t.Fatal("the written hook ran inside Append")
	}
	if w := l.WrittenEndOffset(); w != l.LogEndOffset() || l.Failure() != nil {
		t.Fatalf("written end %d, log end %d, failure %v", w, l.LogEndOffset(), l.Failure())
	}
	if st := cache.WriteStats(); st.Pwrites == 0 {
		t.Fatalf("stats %+v: want pwrites in place of ring writes", st)
	}
	if disk := segmentOnDisk(t, dir, 0); !bytes.Equal(disk[:len(want)], want) {
		t.Fatal("the bytes are not on disk")
	}
	fs.armed = true
	if _, err := l.Append(simpleBatch(t, 1, 10, 3), AppendOptions{}); !errors.Is(err, ErrLogClosed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append whose pwrite fails: %v, want ErrLogClosed wrapping EIO", err)
	}
	if l.Failure() == nil {
		t.Fatal("the log is not offline")
	}
}

// TestDirectRingMarksBounded: under a steady stream, where an append is
// always queued behind the round in flight and the written end seldom
// catches up with the log end, the FIFO of unwritten appends is compacted:
// it never holds more than twice the appends still unwritten.
func TestDirectRingMarksBounded(t *testing.T) {
	cache, ring, l, _ := ringLog(t, 64*DefaultCacheBlockBytes)
	behind := 0
	for i := range 3000 {
		appendN(t, l, 1, 1, 100, 0)
		if live := len(l.marks) - l.markHead; len(l.marks) > 2*live+2 {
			t.Fatalf("after %d appends the marks hold %d entries for %d unwritten appends", i+1, len(l.marks), live)
		}
		if _, err := ring.Wait(0, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if l.WrittenEndOffset() < l.LogEndOffset() {
			behind++
		}
	}
	if behind < 300 {
		t.Fatalf("the written end caught up with the log end after %d of 3000 appends: no steady stream", 3000-behind)
	}
	drainWrites(t, cache, ring)
	if w := l.WrittenEndOffset(); w != l.LogEndOffset() || len(l.marks) != 0 {
		t.Fatalf("written end %d, log end %d, %d marks left", w, l.LogEndOffset(), len(l.marks))
	}
}

// TestDirectRingWritevAcrossBlocks: appends that fill a cache block and go
// on in the next ones are written, past the rewrite of the block that
// already held bytes on the device, as one writev over the blocks' buffers
// (so ext4 converts their fallocated range at once, in order), not as a
// write per buffer; the disk and a read give back what was appended. With
// the ring refused, the same ranges go by pwrite, one per buffer.
func TestDirectRingWritevAcrossBlocks(t *testing.T) {
	cache, ring, l, dir := ringLog(t, 16*DefaultCacheBlockBytes)
	var want []byte
	step := func(valueSizes ...int) WriteStats {
		t.Helper()
		before := cache.WriteStats()
		for _, n := range valueSizes { // no ring run in between: one round in flight, the rest queued behind it
			want = append(want, bytes.Join(appendN(t, l, 1, 1, n, 0), nil)...)
		}
		drainWrites(t, cache, ring)
		a := cache.WriteStats()
		return WriteStats{Rounds: a.Rounds - before.Rounds, RingWrites: a.RingWrites - before.RingWrites,
			Writevs: a.Writevs - before.Writevs, Pwrites: a.Pwrites - before.Pwrites}
	}
	if st := step(1000); st.RingWrites != 1 || st.Writevs != 0 {
		t.Fatalf("first append: %+v, want one plain write", st)
	}
	// From the first block into the second: the partly written block, then
	// the rest of the first buffer and the second in one writev.
	if st := step(1_048_000); st.Rounds != 1 || st.RingWrites != 2 || st.Writevs != 1 {
		t.Fatalf("append into the second block: %+v, want 1 round of 2 ring writes, 1 of them a writev", st)
	}
	// A small append's round, then ~2.7 MB queued behind it over four
	// blocks: one write, then the partly written block and one writev.
	if st := step(100, 900_000, 900_000, 900_000); st.Rounds != 2 || st.RingWrites != 3 || st.Writevs != 1 {
		t.Fatalf("appends over four blocks: %+v, want 2 rounds of 3 ring writes, 1 of them a writev", st)
	}
	if w := l.WrittenEndOffset(); w != l.LogEndOffset() || l.Failure() != nil {
		t.Fatalf("written end %d, log end %d, failure %v", w, l.LogEndOffset(), l.Failure())
	}
	if disk := segmentOnDisk(t, dir, 0); len(disk) < len(want) || !bytes.Equal(disk[:len(want)], want) {
		t.Fatalf("the %d bytes appended are not on disk", len(want))
	}
	res, err := l.Read(0, 1<<30, 1<<62, true)
	if err != nil || !bytes.Equal(readChunks(t, res), want) {
		t.Fatalf("read back differs from the %d bytes appended: %v", len(want), err)
	}
	releaseAll(res)

	ring.Close()
	before := cache.WriteStats()
	want = append(want, bytes.Join(appendN(t, l, 1, 1, 1_048_000, 0), nil)...)
	if st := cache.WriteStats(); st.RingWrites != before.RingWrites || st.Pwrites != before.Pwrites+3 {
		t.Fatalf("with the ring closed: %+v, want the partly written block and two buffers' ranges by pwrite", st)
	}
	if disk := segmentOnDisk(t, dir, 0); len(disk) < len(want) || !bytes.Equal(disk[:len(want)], want) || l.Failure() != nil {
		t.Fatalf("the %d bytes appended are not on disk (failure %v)", len(want), l.Failure())
	}
	if st := cache.Stats(); st.BufBadReleases != 0 {
		t.Fatalf("%d bad releases of block buffers", st.BufBadReleases)
	}
}
