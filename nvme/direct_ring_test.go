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

// writeBatchCache returns a cache of capacity bytes with a write ring. It
// locks the test's goroutine to its thread for the rest of the test: the
// ring is single-issuer.
func writeBatchCache(t *testing.T, capacity int64) *BlockCache {
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
	return c
}

// TestDirectWriteBatch appends to three direct-mode logs sharing one cache
// inside write batches: the bytes reach the files only at
// FlushWriteBatch, with several ranges through the ring, a log appended
// twice in one batch (merged ranges) and rolls inside a batch (flushed
// first); every log then reads back, on disk and reopened, as appended.
func TestDirectWriteBatch(t *testing.T) {
	cache := writeBatchCache(t, 8*DefaultCacheBlockBytes)
	o := directOptions(t)
	o.SegmentBytes = 4 << 20
	o.Cache = cache
	var dirs []string
	var logs []*Log
	for range 3 {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		logs = append(logs, mustOpen(t, dir, o))
	}
	stored := make([][][]byte, len(logs))
	deferredSeen := false
	for round := range 60 {
		cache.BeginWriteBatch()
		before := make([]int64, len(logs))
		for i, l := range logs {
			if round%17 == 5 && i == 1 {
				if err := l.Roll(); err != nil { // inside a batch: what is deferred goes first
					t.Fatal(err)
				}
			}
			before[i] = l.Size()
			reps := 1 + (round+i)%2 // twice in a row: one merged range
			for k := range reps {
				b := appendN(t, l, 1, 1+(round+k)%5, 100+(round*7919+i*131+k)%60000, int64(round))
				stored[i] = append(stored[i], b...)
			}
		}
		// Nothing of this batch is on disk yet.
		s := logs[0].Segments()
		last := s[len(s)-1]
		disk := segmentOnDisk(t, dirs[0], last.BaseOffset)
		if before[0] >= 0 && last.Size > before[0] && allZero(disk[before[0]:last.Size]) {
			deferredSeen = true
		}
		cache.FlushWriteBatch()
		for i, l := range logs {
			if err := l.CheckWrites(); err != nil {
				t.Fatalf("round %d log %d: %v", round, i, err)
			}
		}
	}
	if !deferredSeen {
		t.Fatal("no batch left its bytes off the disk until the flush")
	}
	st := cache.WriteBatchStats()
	if st.Batches == 0 || st.RingWrites == 0 || st.Writes < st.Batches {
		t.Fatalf("write batch stats %+v: want batches with ring writes", st)
	}
	for i, l := range logs {
		// On disk, segment by segment, without the log.
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

// TestDirectWriteBatchFailure: a deferred write that fails is reported by
// CheckWrites as a failed Append would be (ErrLogClosed wrapping the
// error), and the log refuses further appends; other logs of the batch
// keep their writes.
func TestDirectWriteBatchFailure(t *testing.T) {
	cache := writeBatchCache(t, 4*DefaultCacheBlockBytes)
	o := directOptions(t)
	o.Cache = cache
	badDir, goodDir := t.TempDir(), t.TempDir()
	fs := &faultyFS{failSuffix: logSuffix}
	bad, err := openLog(badDir, o, fs.open)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	good := mustOpen(t, goodDir, o)
	defer good.Close()
	appendN(t, bad, 2, 2, 50, 1)

	// One range: written with pwrite, through the faulty file.
	fs.armed = true
	cache.BeginWriteBatch()
	appendN(t, bad, 1, 2, 50, 2)
	cache.FlushWriteBatch()
	if err := bad.CheckWrites(); !errors.Is(err, ErrLogClosed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("CheckWrites: %v, want ErrLogClosed wrapping EIO", err)
	}
	if _, err := bad.Append(simpleBatch(t, 1, 10, 3), AppendOptions{}); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append after a failed deferred write: %v", err)
	}
	// The good log in a batch of its own still writes.
	cache.BeginWriteBatch()
	want := bytes.Join(appendN(t, good, 3, 2, 5000, 1), nil)
	cache.FlushWriteBatch()
	if err := good.CheckWrites(); err != nil {
		t.Fatal(err)
	}
	if disk := segmentOnDisk(t, goodDir, 0); !bytes.Equal(disk[:len(want)], want) {
		t.Fatal("the good log's bytes are not on disk")
	}
}

// TestDirectWriteBatchSplit: a deferred range that starts in a block the
// file already holds bytes of, and goes past it, is written through the
// ring as two writes (that block, then the new blocks), so ext4 can issue
// it without an io-wq hand-off; a range that starts on a block boundary or
// stays inside the old block is one write. Each case counts its ring writes
// and reads back from the disk.
func TestDirectWriteBatchSplit(t *testing.T) {
	cache := writeBatchCache(t, 8*DefaultCacheBlockBytes)
	o := directOptions(t)
	o.Cache = cache
	dirs := []string{t.TempDir(), t.TempDir()}
	logs := []*Log{mustOpen(t, dirs[0], o), mustOpen(t, dirs[1], o)}
	var stored [2][]byte
	batch := func(valueSize int) WriteBatchStats {
		t.Helper()
		before := cache.WriteBatchStats()
		cache.BeginWriteBatch()
		for i, l := range logs {
			stored[i] = append(stored[i], bytes.Join(appendN(t, l, 1, 1, valueSize, 0), nil)...)
		}
		cache.FlushWriteBatch()
		for i, l := range logs {
			if err := l.CheckWrites(); err != nil {
				t.Fatalf("log %d: %v", i, err)
			}
		}
		after := cache.WriteBatchStats()
		return WriteBatchStats{Batches: after.Batches - before.Batches, Writes: after.Writes - before.Writes, RingWrites: after.RingWrites - before.RingWrites}
	}
	// Empty files: each range starts at 0, one write each.
	if st := batch(1000); st.Writes != 2 || st.RingWrites != 2 {
		t.Fatalf("first batch: %+v, want 2 ranges in 2 ring writes", st)
	}
	// Still inside the first block: one write each.
	if st := batch(500); st.Writes != 2 || st.RingWrites != 2 {
		t.Fatalf("inside the old block: %+v, want 2 ranges in 2 ring writes", st)
	}
	// From the partly written block into new ones: two writes each.
	if st := batch(20000); st.Writes != 2 || st.RingWrites != 4 {
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

// TestDirectPrefetch: blocks a read would miss are listed by Prefetch, read
// through the ring by Start and put into the cache, so the read that
// follows misses nothing and returns the appended bytes; a block whose file
// is forgotten (retention, the cleaner) while its read is in flight is not
// cached.
func TestDirectPrefetch(t *testing.T) {
	cache := writeBatchCache(t, 4*DefaultCacheBlockBytes)
	ring := cache.wb.ring
	cache.SetWriteRing(nil) // plain pwrites; the ring serves the reads
	o := directOptions(t)
	o.Cache = cache
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	var stored []byte
	for i := range 400 { // ~9 MiB: the first blocks are evicted
		stored = append(stored, bytes.Join(appendN(t, l, 1, 3, 7000+i%1000, int64(i)), nil)...)
	}
	wait := func(pf *BlockPrefetch) {
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
