package nvme

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ringbroker/ringbroker/ioring"
	"golang.org/x/sys/unix"
)

// releaseAll releases the chunks' buffers, as a connection does once a
// response is sent.
func releaseAll(res ReadResult) {
	for _, c := range res.Chunks {
		c.Ref.Release()
	}
}

// TestDirectBlockBuffersRecycled appends ~12 MiB to a direct-mode log on a
// 2-block cache while a reader reads the new bytes and releases them, as a
// consumer at the tail does: block buffers come back from the pool instead
// of new allocations, chunks a reader still holds keep their bytes while
// the blocks around them are recycled, and neither the reads nor the file
// on disk (the bytes past the data in the last aligned block must be
// zeros, though a recycled buffer held other data there) differ from what
// was appended. Run without and with a write ring.
func TestDirectBlockBuffersRecycled(t *testing.T) {
	for _, ring := range []bool{false, true} {
		name := "pwrite"
		if ring {
			name = "ring"
		}
		t.Run(name, func(t *testing.T) {
			var (
				cache *BlockCache
				l     *Log
				dir   string
				drain = func() {}
			)
			if ring {
				c, r, log, d := ringLog(t, 2*DefaultCacheBlockBytes)
				cache, l, dir = c, log, d
				drain = func() { drainWrites(t, c, r) }
			} else {
				o := directOptions(t)
				o.SegmentBytes = 32 << 20
				o.Cache = NewBlockCache(2 * DefaultCacheBlockBytes)
				cache, dir = o.Cache, t.TempDir()
				l = mustOpen(t, dir, o)
				t.Cleanup(func() { l.Close() })
			}
			var want []byte
			var held ReadResult
			var heldCopy []byte
			for i := range 180 {
				from := l.LogEndOffset()
				want = append(want, bytes.Join(appendN(t, l, 1, 1+i%5, 9000+i*131%9000, int64(i)), nil)...)
				if i%9 == 8 {
					drain()
				}
				res, err := l.Read(from, 1<<30, 1<<62, true)
				if err != nil {
					t.Fatal(err)
				}
				if i == 20 {
					// Keep these: their blocks must not be reused.
					held, heldCopy = res, readChunks(t, res)
					continue
				}
				releaseAll(res)
			}
			drain()
			if got := readChunks(t, held); !bytes.Equal(got, heldCopy) {
				t.Fatal("a held chunk changed while its block was evicted and others recycled")
			}
			releaseAll(held)
			res, err := l.Read(0, 1<<30, 1<<62, true)
			if err != nil || !bytes.Equal(readChunks(t, res), want) {
				t.Fatalf("read back differs from the %d bytes appended: %v", len(want), err)
			}
			releaseAll(res)
			st := cache.Stats()
			if st.BufReuses == 0 || st.BufReuses < st.BufAllocs || st.BufBadReleases != 0 {
				t.Fatalf("block buffers: %d allocated, %d reused, %d bad releases; want mostly reused, none bad", st.BufAllocs, st.BufReuses, st.BufBadReleases)
			}
			t.Logf("%d MiB appended: %d block buffers allocated, %d reused", len(want)>>20, st.BufAllocs, st.BufReuses)
			disk := segmentOnDisk(t, dir, 0)
			if len(disk) < len(want) || !bytes.Equal(disk[:len(want)], want) || !allZero(disk[len(want):]) {
				t.Fatal("segment on disk differs from the appended bytes (or is not zero past them)")
			}
			// Reopened, the log ends where the appends did.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			o := directOptions(t)
			l2 := mustOpen(t, dir, o)
			defer l2.Close()
			res, err = l2.Read(0, 1<<30, 1<<62, true)
			if err != nil || !bytes.Equal(readChunks(t, res), want) {
				t.Fatalf("reopened log reads differently: %v", err)
			}
		})
	}
}

// TestCachePrefault: Prefault fills the free list (a buffer per block the
// cache holds and 8 more), every page already resident (mincore), and
// appends take those buffers: filling the cache allocates no more, and the
// bytes read back are the bytes appended (prefaulted buffers hold zeros,
// not data).
func TestCachePrefault(t *testing.T) {
	o := directOptions(t)
	o.SegmentBytes = 32 << 20
	o.Cache = NewBlockCache(4 * DefaultCacheBlockBytes)
	if got := o.Cache.Prefault(); got != 12*DefaultCacheBlockBytes {
		t.Fatalf("Prefault added %d bytes, want %d", got, 12*DefaultCacheBlockBytes)
	}
	st := o.Cache.Stats()
	if st.BufAllocs != 12 || len(o.Cache.pool.free) != 12 {
		t.Fatalf("after Prefault: %d buffers allocated, %d free; want 12 and 12", st.BufAllocs, len(o.Cache.pool.free))
	}
	for range 12 {
		b := <-o.Cache.pool.free
		if r := residentPages(t, b.b); r != len(b.b)/pageSize {
			t.Fatalf("a prefaulted buffer has %d of its %d pages resident", r, len(b.b)/pageSize)
		}
		o.Cache.pool.free <- b
	}
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	want := bytes.Join(appendN(t, l, 30, 1, 100_000, 1), nil) // ~3 MiB: within the cache
	res, err := l.Read(0, 1<<30, 1<<62, true)
	if err != nil || !bytes.Equal(readChunks(t, res), want) {
		t.Fatalf("read back differs from the %d bytes appended: %v", len(want), err)
	}
	releaseAll(res)
	if st := o.Cache.Stats(); st.BufAllocs != 12 || st.BufReuses == 0 {
		t.Fatalf("appends within the cache: %d buffers allocated, %d reused; want 12 (the prefaulted ones), some reused", st.BufAllocs, st.BufReuses)
	}
}

// residentPages counts the pages of b (page-aligned, as pool buffers are)
// that are in memory (mincore(2)).
func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if addr%pageSize != 0 {
		t.Fatalf("buffer at %#x is not page-aligned", addr)
	}
	vec := make([]byte, (len(b)+pageSize-1)/pageSize)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, addr, uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestFixedBlockBuffers registers a cache's block buffers with its ring
// (UseFixedBuffers): Prefault fills the table's slots, ring writes and
// prefetch reads then go from and into registered buffers (WRITE_FIXED,
// READ_FIXED), and what was appended is what the segment holds on disk and
// what reads return, while blocks are evicted and their buffers recycled.
// A buffer made off the ring's thread is not registered.
func TestFixedBlockBuffers(t *testing.T) {
	cache, ring := writeRingCache(t, 4*DefaultCacheBlockBytes)
	if err := cache.UseFixedBuffers(ring, nil); err != nil {
		t.Skipf("no sparse buffer table: %v", err)
	}
	if err := cache.UseFixedBuffers(ring, nil); err == nil {
		t.Fatal("a second UseFixedBuffers: no error")
	}
	slots := cap(cache.pool.free)
	if got := cache.Prefault(); got != int64(slots)*DefaultCacheBlockBytes {
		t.Fatalf("Prefault added %d bytes, want %d", got, int64(slots)*DefaultCacheBlockBytes)
	}
	if st := cache.Stats(); st.BufFixed != slots || len(cache.pool.free) != 0 {
		t.Fatalf("after Prefault: %d buffers registered, %d unregistered free; want %d and 0", st.BufFixed, len(cache.pool.free), slots)
	}
	o := directOptions(t)
	o.SegmentBytes = 32 << 20
	o.Cache = cache
	dir := t.TempDir()
	l := mustOpen(t, dir, o)
	defer l.Close()
	var want []byte
	for i := range 300 { // ~10 MiB on a 4-block cache
		want = append(want, bytes.Join(appendN(t, l, 1, 1+i%3, 11000+i*37%9000, int64(i)), nil)...)
		if i%7 == 6 {
			drainWrites(t, cache, ring)
		}
	}
	drainWrites(t, cache, ring)
	ws := cache.WriteStats()
	if ws.FixedWrites == 0 || ws.Pwrites != 0 {
		t.Fatalf("ring writes: %d, %d from registered buffers, %d by pwrite; want most from registered buffers, none by pwrite", ws.RingWrites, ws.FixedWrites, ws.Pwrites)
	}
	disk := segmentOnDisk(t, dir, 0)
	if len(disk) < len(want) || !bytes.Equal(disk[:len(want)], want) || !allZero(disk[len(want):]) {
		t.Fatal("segment on disk differs from the appended bytes (or is not zero past them)")
	}
	// The first blocks were evicted: read them back through the ring.
	var pf BlockPrefetch
	pf.Begin(cache)
	if l.Prefetch(&pf, 0, 2<<20); pf.Pending() == 0 {
		t.Fatal("nothing to prefetch from offset 0")
	}
	runPrefetch(t, ring, &pf)
	st := cache.Stats()
	if st.FixedReads == 0 {
		t.Fatalf("%d ring reads, none into a registered buffer", st.AsyncReads)
	}
	res, err := l.Read(0, 1<<30, 1<<62, true)
	if err != nil || !bytes.Equal(readChunks(t, res), want) {
		t.Fatalf("read back differs from the %d bytes appended: %v", len(want), err)
	}
	releaseAll(res)
	st = cache.Stats()
	if st.BufFixed != slots || st.BufBadReleases != 0 || st.BufReuses == 0 {
		t.Fatalf("block buffers: %d registered (want %d), %d reused, %d bad releases", st.BufFixed, slots, st.BufReuses, st.BufBadReleases)
	}
	t.Logf("%d ring writes (%d fixed), %d ring reads (%d fixed), %d buffers allocated, %d reused", ws.RingWrites, ws.FixedWrites, st.AsyncReads, st.FixedReads, st.BufAllocs, st.BufReuses)

	// Off the ring's thread a new buffer is not registered; on it, it is.
	c2 := NewBlockCache(4 * DefaultCacheBlockBytes)
	if err := c2.UseFixedBuffers(mustRing(t), nil); err != nil {
		t.Fatal(err)
	}
	other := make(chan *BlockBuf)
	go func() { other <- c2.pool.get() }()
	if b := <-other; b.slot != 0 {
		t.Fatalf("a buffer made off the ring's thread has slot %d", b.slot)
	} else {
		b.Release()
	}
	if b := c2.pool.get(); b.slot != 1 || c2.Stats().BufFixed != 1 {
		t.Fatalf("a buffer made on the ring's thread: slot %d, %d registered; want 1 and 1", b.slot, c2.Stats().BufFixed)
	} else {
		b.Release()
		if got := c2.pool.get(); got != b {
			t.Fatal("a released registered buffer was not the next one handed out")
		}
	}
}

// TestFixedBlockBuffersRegisterFails: once the kernel refuses a buffer
// (here: the table is gone; in use, ENOMEM at RLIMIT_MEMLOCK), onFail is
// told once with the buffers registered so far, and new buffers are plain.
func TestFixedBlockBuffersRegisterFails(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	c := NewBlockCache(4 * DefaultCacheBlockBytes)
	r := mustRing(t)
	var calls, reported int
	var failErr error
	if err := c.UseFixedBuffers(r, func(n int, err error) { calls, reported, failErr = calls+1, n, err }); err != nil {
		t.Skipf("no sparse buffer table: %v", err)
	}
	first := c.pool.get()
	if first.slot != 1 {
		t.Fatalf("first buffer: slot %d, want 1", first.slot)
	}
	if err := r.UnregisterBuffers(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if b := c.pool.get(); b.slot != 0 {
			t.Fatalf("a buffer made after the failure has slot %d", b.slot)
		}
	}
	if calls != 1 || reported != 1 || failErr == nil {
		t.Fatalf("onFail: %d calls, last with %d registered and %v; want 1 call with 1 and an error", calls, reported, failErr)
	}
	if st := c.Stats(); st.BufFixed != 1 {
		t.Fatalf("%d buffers registered, want 1", st.BufFixed)
	}
}

// mustRing returns a new ring owned by the test's (locked) thread.
func mustRing(t *testing.T) *ioring.Ring {
	t.Helper()
	r, err := ioring.New(ioring.Options{Entries: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
