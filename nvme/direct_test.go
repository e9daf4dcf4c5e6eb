package nvme

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

func directOptions(t testing.TB) Options {
	o := testOptions(t)
	o.IOMode = IOModeDirect
	return o
}

// TestDirectAppendsRewriteTailBlock appends batches of odd sizes that cross
// alignment and cache-block boundaries, then checks the file on disk (read
// without the log) and every read path against the bytes appended.
func TestDirectAppendsRewriteTailBlock(t *testing.T) {
	dir := t.TempDir()
	o := directOptions(t)
	o.SegmentBytes = 8 << 20
	o.Cache = NewBlockCache(2 * DefaultCacheBlockBytes) // forces evictions and O_DIRECT refills
	l := mustOpen(t, dir, o)
	var all [][]byte
	for i := range 200 {
		all = append(all, appendN(t, l, 1, 1+i%7, 100+i*97%20000, int64(i))...)
	}
	want := bytes.Join(all, nil)
	if l.Size() != int64(len(want)) || len(l.Segments()) != 1 {
		t.Fatalf("size %d, want %d; %d segments", l.Size(), len(want), len(l.Segments()))
	}
	path := filepath.Join(dir, segmentFileName(0, logSuffix))
	if got := fileSize(t, path); got != o.SegmentBytes {
		t.Fatalf("active segment file is %d bytes, want preallocated %d", got, o.SegmentBytes)
	}
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk[:len(want)], want) || !allZero(disk[len(want):]) {
		t.Fatal("file on disk differs from the appended bytes")
	}
	res, err := l.Read(0, 1<<30, 1<<62, true)
	if err != nil || !bytes.Equal(readChunks(t, res), want) {
		t.Fatalf("read back differs: %v", err)
	}
	for _, c := range res.Chunks {
		if c.File != nil || len(c.Mem) != int(c.Len) {
			t.Fatalf("direct mode chunk %+v is not a memory chunk", c)
		}
	}
	if st := o.Cache.Stats(); st.Evictions == 0 || st.ReadBytes == 0 {
		t.Fatalf("cache stats %+v: want evictions and O_DIRECT reads", st)
	}
	// Roll and close: closed segments are plain, trimmed Kafka segments.
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 2, 2, 10, 1)
	if got := fileSize(t, path); got != int64(len(want)) {
		t.Fatalf("rolled segment is %d bytes, want %d", got, len(want))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := fileSize(t, filepath.Join(dir, segmentFileName(l.Segments()[1].BaseOffset, logSuffix))), l.Segments()[1].Size; got != want {
		t.Fatalf("closed active segment is %d bytes, want %d", got, want)
	}
	// Buffered mode reads what direct mode wrote.
	l2 := mustOpen(t, dir, testOptions(t))
	defer l2.Close()
	res, err = l2.Read(0, 1<<30, int64(l2.Segments()[1].BaseOffset), true)
	if err != nil || !bytes.Equal(readChunks(t, res), want) {
		t.Fatalf("buffered read of direct segments differs: %v", err)
	}
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// TestDirectCrashRecovery abandons a direct-mode log without Close (as
// kill -9 does): the reopened log ends where the data ends, the zeros of
// the preallocated tail are not a torn batch, and appends continue.
func TestDirectCrashRecovery(t *testing.T) {
	for _, mode := range []string{IOModeDirect, IOModeBuffered} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(t)
			o.IOMode = mode
			o.Preallocate = true
			o.SegmentBytes = 4 << 20
			l := mustOpen(t, dir, o)
			stored := appendN(t, l, 50, 3, 333, 1)
			f, _ := l.SyncTarget()
			if err := fdatasync(f); err != nil {
				t.Fatal(err)
			}
			// No Close: the process "dies" here.
			path := filepath.Join(dir, segmentFileName(0, logSuffix))
			if got := fileSize(t, path); got != o.SegmentBytes {
				t.Fatalf("file %d bytes, want preallocated %d", got, o.SegmentBytes)
			}
			l2 := mustOpen(t, dir, o)
			defer l2.Close()
			if l2.LogEndOffset() != 150 || l2.Size() != int64(len(bytes.Join(stored, nil))) {
				t.Fatalf("LEO %d size %d after crash", l2.LogEndOffset(), l2.Size())
			}
			res, err := l2.Read(0, 1<<30, 1<<62, true)
			if err != nil || !bytes.Equal(readChunks(t, res), bytes.Join(stored, nil)) {
				t.Fatalf("data differs after crash: %v", err)
			}
			mustAppend(t, l2, simpleBatch(t, 1, 1, 1), AppendOptions{})
		})
	}
}

// TestDirectReadAllocsAndCopies: a fetch-sized Read served from the block
// cache allocates only the chunk slice (buffered mode does too) and copies no record bytes: every
// chunk aliases a cache buffer.
func TestDirectReadAllocsAndCopies(t *testing.T) {
	dir := t.TempDir()
	o := directOptions(t)
	o.Cache = NewBlockCache(64 << 20)
	l := mustOpen(t, dir, o)
	defer l.Close()
	appendN(t, l, 400, 10, 1000, 1) // ~4 MB in 10 KB batches
	l.Read(0, 1<<30, 1<<62, true)   // warm the cache
	var res ReadResult
	allocs := testing.AllocsPerRun(100, func() {
		res, _ = l.Read(1000, 1<<20, 1<<62, true)
	})
	if res.Bytes < 900<<10 {
		t.Fatalf("read %d bytes", res.Bytes)
	}
	if allocs > 2 {
		t.Fatalf("%.1f allocations per 1 MiB read, want <= 2 (the chunk slice, grown once for 2 blocks)", allocs)
	}
	for _, c := range res.Chunks {
		if !inCache(o.Cache, c.Mem) {
			t.Fatalf("chunk at %d does not alias a cache buffer", c.Pos)
		}
	}
	t.Logf("1 MiB direct-mode read: %.1f allocs, %d chunks, 0 record bytes copied", allocs, len(res.Chunks))
}

// inCache reports whether b lies inside a buffer held by the cache or a
// log's tail buffer reachable from it.
func inCache(c *BlockCache, b []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for _, e := range c.entries {
		q := uintptr(unsafe.Pointer(unsafe.SliceData(e.blk.b)))
		if p >= q && p+uintptr(len(b)) <= q+uintptr(len(e.blk.b)) {
			return true
		}
	}
	return false
}

// BenchmarkDirectRead: 1 MiB reads from a warm block cache (catch-up reads
// that hit memory); bytes/op is the record bytes referenced, not copied.
func BenchmarkDirectRead(b *testing.B) {
	dir := b.TempDir()
	o := directOptions(b)
	o.Cache = NewBlockCache(64 << 20)
	l := mustOpen(b, dir, o)
	defer l.Close()
	appendN(b, l, 400, 10, 1000, 1)
	l.Read(0, 1<<30, 1<<62, true)
	res, _ := l.Read(0, 1<<20, 1<<62, true)
	b.SetBytes(int64(res.Bytes))
	b.ReportAllocs()
	for b.Loop() {
		l.Read(0, 1<<20, 1<<62, true)
	}
}

// BenchmarkDirectAppend: 64 KiB appends with O_DIRECT (write-through, no
// fdatasync) against buffered pwrite.
func BenchmarkDirectAppend(b *testing.B) {
	for _, mode := range []string{IOModeBuffered, IOModeDirect} {
		b.Run(mode, func(b *testing.B) {
			o := testOptions(b)
			o.IOMode = mode
			o.SegmentBytes = 256 << 20
			l := mustOpen(b, b.TempDir(), o)
			defer l.Close()
			batch := simpleBatch(b, 64, 1000, 1)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Append(batch, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
