package nvme

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tailOptions is a direct-mode log whose cache keeps every block the
// tests touch (no eviction changes what the view can name).
func tailOptions(t testing.TB, cacheBytes int64) Options {
	o := testOptions(t)
	o.IOMode = IOModeDirect
	o.Cache = NewBlockCache(cacheBytes)
	return o
}

// tailLimit is one set of Read limits the tail tests try.
type tailLimit struct {
	maxBytes  int32
	maxOffset int64
	minOne    bool
}

// readTailLikeLog reads off from v with lim and, when the view answers,
// checks that its bytes and batch ends are the log's own read's (whose
// holds it gives back). It returns the view's answer.
func readTailLikeLog(t *testing.T, l *Log, v *TailView, step int, off int64, lim tailLimit) (ReadResult, bool) {
	t.Helper()
	got, gotEnds, ok := v.Read(nil, nil, off, lim.maxBytes, lim.maxOffset, lim.minOne)
	if !ok {
		if len(got.Chunks) != 0 || len(gotEnds) != 0 || got.Bytes != 0 {
			t.Fatalf("a refused read returned %d chunks, %d ends", len(got.Chunks), len(gotEnds))
		}
		return got, false
	}
	want, wantEnds, err := l.ReadBatchesInto(nil, nil, off, lim.maxBytes, lim.maxOffset, lim.minOne)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := readChunks(t, got), readChunks(t, want); !bytes.Equal(g, w) || !slices.Equal(gotEnds, wantEnds) || got.Limited != want.Limited {
		t.Fatalf("append %d, offset %d, %+v: view gave %d bytes ends %v limited %v, log %d bytes ends %v limited %v", step, off, lim, len(g), gotEnds, got.Limited, len(w), wantEnds, want.Limited)
	}
	ReleaseChunks(want.Chunks)
	return got, true
}

// TestTailViewReadsLikeLog: after every third append of batches of 20-150 KB
// (so the remembered batches cross 1 MiB block boundaries), the view
// answers each fetch offset of the batches it covers with the same bytes
// and batch ends as the log's own read, for several byte limits and high
// watermarks; it answers every offset of the batches that lie in the last
// two blocks among the last recentBatches, and refuses the rest.
func TestTailViewReadsLikeLog(t *testing.T) {
	l := mustOpen(t, t.TempDir(), tailOptions(t, 64<<20))
	defer l.Close()
	var v TailView
	l.SetTailView(&v)
	if _, _, ok := v.Read(nil, nil, 0, 1<<20, 100, true); ok {
		t.Fatal("an empty log's view answered")
	}
	type span struct{ pos, size, base, last int64 }
	var batches []span
	var pos int64
	for i := 0; i < 40; i++ {
		b := simpleBatch(t, 1+i%4, 20000+(i*37%6)*26000, int64(i))
		info := mustAppend(t, l, b, AppendOptions{})
		batches = append(batches, span{pos, int64(len(b)), info.FirstOffset, info.LastOffset})
		pos += int64(len(b))
		if i%3 != 2 {
			continue // every third append: the reads copy megabytes each
		}
		leo := l.LogEndOffset()
		// The batches the view must cover.
		low := max(0, (pos-1)-(pos-1)%DefaultCacheBlockBytes-DefaultCacheBlockBytes)
		covered := int64(-1) // first offset covered
		for k := len(batches) - 1; k >= max(0, len(batches)-recentBatches) && batches[k].pos >= low; k-- {
			covered = batches[k].base
		}
		// Offsets from 20 batches back (beyond what the view covers) and 0.
		from := batches[max(0, len(batches)-20)].base
		offs := []int64{0}
		for off := max(1, from); off < leo; off++ {
			offs = append(offs, off)
		}
		for _, off := range offs {
			for _, lim := range []tailLimit{{1 << 30, leo, true}, {1, leo, true}, {1, leo, false}, {150000, leo, true}, {1 << 30, max(off+1, leo-3), true}} {
				got, ok := readTailLikeLog(t, l, &v, i, off, lim)
				if !ok {
					if covered >= 0 && off >= covered {
						t.Fatalf("append %d: offset %d (covered from %d) not answered", i, off, covered)
					}
					continue
				}
				if covered < 0 || off < covered {
					t.Fatalf("append %d: offset %d answered, coverage starts at %d", i, off, covered)
				}
				for _, c := range got.Chunks {
					if c.Ref == nil {
						t.Fatal("a view chunk holds no buffer")
					}
					c.Ref.Release()
				}
			}
		}
	}
	// A roll leaves nothing to answer until the new segment has batches.
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	if _, _, ok := v.Read(nil, nil, leo-1, 1<<20, leo, true); ok {
		t.Fatal("the view answered from a rolled segment")
	}
	info := mustAppend(t, l, simpleBatch(t, 3, 100, 0), AppendOptions{})
	if r, _, ok := v.Read(nil, nil, info.FirstOffset, 1<<20, info.LastOffset+1, true); !ok || len(batchesOf(t, readChunks(t, r))) != 1 {
		t.Fatal("the view did not answer the new segment's batch")
	} else {
		r.Chunks[0].Ref.Release()
	}
	held := v.held
	refs := held[0].refs.Load()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := v.Read(nil, nil, info.FirstOffset, 1<<20, info.LastOffset+1, true); ok {
		t.Fatal("a closed log's view answered")
	}
	if v.held != [tailBlocks]*BlockBuf{} || held[0].refs.Load() >= refs {
		t.Fatalf("Close kept the view's holds (refs %d, were %d)", held[0].refs.Load(), refs)
	}
	if s := l.sf.cache.Stats(); s.BufBadReleases != 0 {
		t.Fatalf("%d releases past zero", s.BufBadReleases)
	}
}

// TestTailViewBuffered: a buffered log publishes its segment file and its
// last recentBatches batches; the view answers each offset among them with
// one file Chunk (no hold) whose bytes and batch ends are the log's own
// read's, refuses older offsets, and answers nothing after a roll until
// the new segment has a batch, nor after Close.
func TestTailViewBuffered(t *testing.T) {
	o := testOptions(t)
	o.IOMode = IOModeBuffered
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	var v TailView
	l.SetTailView(&v)
	var firsts []int64
	for i := 0; i < recentBatches+5; i++ {
		info := mustAppend(t, l, simpleBatch(t, 1+i%3, 100+i*50, int64(i)), AppendOptions{})
		firsts = append(firsts, info.FirstOffset)
		leo := l.LogEndOffset()
		covered := firsts[max(0, len(firsts)-recentBatches)]
		for off := int64(0); off < leo; off++ {
			for _, lim := range []tailLimit{{1 << 20, leo, true}, {1, leo, true}, {1, leo, false}, {400, leo, true}, {1 << 20, max(off+1, leo-2), true}} {
				got, ok := readTailLikeLog(t, l, &v, i, off, lim)
				if ok != (off >= covered) {
					t.Fatalf("append %d: offset %d (covered from %d) answered %v", i, off, covered, ok)
				}
				for _, c := range got.Chunks {
					if c.File == nil || c.Ref != nil {
						t.Fatalf("a buffered view chunk: file %v, hold %v", c.File != nil, c.Ref != nil)
					}
				}
				if len(got.Chunks) > 1 {
					t.Fatalf("%d chunks for one contiguous range", len(got.Chunks))
				}
			}
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	if _, _, ok := v.Read(nil, nil, leo-1, 1<<20, leo, true); ok {
		t.Fatal("the view answered from a rolled segment")
	}
	info := mustAppend(t, l, simpleBatch(t, 3, 100, 0), AppendOptions{})
	r, _, ok := v.Read(nil, nil, info.FirstOffset, 1<<20, info.LastOffset+1, true)
	if !ok || len(batchesOf(t, readChunks(t, r))) != 1 || r.Chunks[0].File != l.active().log.OSFile() {
		t.Fatal("the view did not answer the new segment's batch from its file")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := v.Read(nil, nil, info.FirstOffset, 1<<20, info.LastOffset+1, true); ok {
		t.Fatal("a closed log's view answered")
	}
}

// TestTailViewConcurrentReads: a reader goroutine reads the view while the
// owner appends, rolls and, with a two-block cache, evicts and recycles
// block buffers through the pool at every block. Every answer must be
// whole batches with good CRCs, contiguous offsets from the one asked for
// and the bytes that were appended at those offsets; no release may pass
// zero. Run with -race: the sequence lock, the holds and the pool's
// hand-offs must order every access.
func TestTailViewConcurrentReads(t *testing.T) {
	t.Run("direct", func(t *testing.T) { testTailViewConcurrentReads(t, tailOptions(t, 2<<20)) })
	t.Run("buffered", func(t *testing.T) {
		o := testOptions(t)
		o.IOMode = IOModeBuffered
		testTailViewConcurrentReads(t, o)
	})
}

func testTailViewConcurrentReads(t *testing.T, o Options) {
	o.SegmentBytes = 8 << 20
	l := mustOpen(t, t.TempDir(), o)
	var v TailView
	l.SetTailView(&v)
	// Some reads pause between finding a block and holding it, most for
	// less than an append, some for long enough that the appends move the
	// tail past a few blocks, so the block found is evicted and recycled
	// meanwhile.
	var pauses atomic.Int64
	tailReadHook = func() {
		switch n := pauses.Add(1); {
		case n%64 == 0:
			time.Sleep(40 * time.Millisecond)
		case n%4 == 0:
			time.Sleep(200 * time.Microsecond)
		}
	}
	tailFileHook = tailReadHook
	defer func() { tailReadHook, tailFileHook = nil, nil }()
	var leo atomic.Int64
	stop := make(chan struct{})
	var answered, refused atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var chunks []Chunk
		var ends []int32
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			end := leo.Load()
			if end == 0 {
				continue
			}
			off := max(0, end-1-int64(n%12))
			r, e, ok := v.Read(chunks, ends, off, int32(1+n%3*200000), end, n%2 == 0)
			chunks, ends = r.Chunks, e
			if !ok {
				refused.Add(1)
				continue
			}
			answered.Add(1)
			var b []byte
			for _, c := range r.Chunks {
				if c.File != nil {
					// The file may have rolled on since: its bytes stay.
					fb := make([]byte, c.Len)
					if _, err := c.File.ReadAt(fb, c.Pos); err != nil {
						t.Errorf("read at %d: file chunk: %v", off, err)
						return
					}
					b = append(b, fb...)
					continue
				}
				b = append(b, c.Mem...)
				c.Ref.Release()
			}
			next := int64(-1)
			for len(b) > 0 {
				h, err := ParseBatchHeader(b)
				if err != nil || h.Size() > int64(len(b)) || batchCRC(b[:h.Size()]) != h.CRC {
					t.Errorf("read at %d: bad batch (%v)", off, err)
					return
				}
				if next < 0 && (h.BaseOffset > off || h.LastOffset() < off) || next >= 0 && h.BaseOffset != next {
					t.Errorf("read at %d: batch at %d out of order (after %d)", off, h.BaseOffset, next)
					return
				}
				// Each batch's values are its base offset's low byte
				// (the last byte is the last record's header count).
				if v := b[h.Size()-2]; v != byte(h.BaseOffset) {
					t.Errorf("batch at %d holds a value of %d", h.BaseOffset, v)
					return
				}
				next = h.LastOffset() + 1
				b = b[h.Size():]
			}
		}
	}()
	// At least 100 appends (~5 MB, a few blocks through the two-block
	// cache) however slow the machine, then until 3 s or 2,000 appends.
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; i < 2000 && (i < 100 || time.Now().Before(deadline)); i++ {
		base := l.LogEndOffset()
		recs := make([]testRecord, 1+i%3)
		for k := range recs {
			recs[k] = testRecord{value: bytes.Repeat([]byte{byte(base)}, 30000+i%7*5000)}
		}
		mustAppend(t, l, buildBatch(t, batchSpec{baseTs: int64(i)}, recs), AppendOptions{})
		leo.Store(l.LogEndOffset())
	}
	close(stop)
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if o.Cache != nil {
		if s := o.Cache.Stats(); s.BufBadReleases != 0 || s.BufReuses == 0 {
			t.Fatalf("bad releases %d, reuses %d (the pool must recycle for this test to mean anything)", s.BufBadReleases, s.BufReuses)
		}
	}
	if answered.Load() == 0 {
		t.Fatalf("no read answered (%d refused)", refused.Load())
	}
	t.Logf("%d reads answered, %d refused", answered.Load(), refused.Load())
}

// TestReadLimited: a read reports Limited when it stopped at a batch that
// maxBytes left out, and not when it reached maxOffset or the log end.
func TestReadLimited(t *testing.T) {
	for _, mode := range []string{IOModeBuffered, IOModeDirect} {
		o := tailOptions(t, 8<<20)
		o.IOMode = mode
		l := mustOpen(t, t.TempDir(), o)
		var size int32
		for i := 0; i < 3; i++ {
			b := simpleBatch(t, 2, 1000, int64(i))
			size = int32(len(b))
			mustAppend(t, l, b, AppendOptions{})
		}
		leo := l.LogEndOffset()
		for _, c := range []struct {
			maxBytes  int32
			maxOffset int64
			minOne    bool
			bytes     int32
			limited   bool
		}{
			{1 << 20, leo, true, 3 * size, false},     // the log end
			{2*size + 1, leo, true, 2 * size, true},   // the third batch left out
			{1, leo, true, size, true},                // the first whole (KIP-74), the rest left out
			{1, leo, false, 0, true},                  // nothing fits
			{1 << 20, leo - 2, true, 2 * size, false}, // maxOffset: the high watermark
		} {
			r, err := l.Read(0, c.maxBytes, c.maxOffset, c.minOne)
			if err != nil {
				t.Fatal(err)
			}
			if r.Bytes != c.bytes || r.Limited != c.limited {
				t.Fatalf("%v, %+v: %d bytes, limited %v", mode, c, r.Bytes, r.Limited)
			}
			ReleaseChunks(r.Chunks)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
