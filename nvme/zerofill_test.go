package nvme

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"github.com/ringbroker/ringbroker/ioring"
	"golang.org/x/sys/unix"
)

// fsIocFiemap is FS_IOC_FIEMAP (linux/fs.h: _IOWR('f', 11, struct fiemap)).
const (
	fsIocFiemap           = 0xC020660B
	fiemapFlagSync        = 0x1
	fiemapExtentUnwritten = 0x800
)

// extent is one FIEMAP extent of a file: its logical range and whether its
// blocks are fallocated and never written.
type extent struct {
	off, len  int64
	unwritten bool
}

// extentsOf maps path's extents with FS_IOC_FIEMAP, skipping the test where
// the filesystem cannot.
func extentsOf(t *testing.T, path string) []extent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const max = 256
	// struct fiemap (32 bytes) then max struct fiemap_extent (56 bytes each).
	buf := make([]byte, 32+56*max)
	le := binary.LittleEndian
	le.PutUint64(buf[8:], ^uint64(0)) // fm_length: all
	le.PutUint32(buf[16:], fiemapFlagSync)
	le.PutUint32(buf[24:], max)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
		t.Skipf("FIEMAP not supported here: %v", errno)
	}
	n := int(le.Uint32(buf[20:]))
	out := make([]extent, 0, n)
	for i := 0; i < n; i++ {
		e := buf[32+56*i:]
		out = append(out, extent{off: int64(le.Uint64(e)), len: int64(le.Uint64(e[16:])), unwritten: le.Uint32(e[40:])&fiemapExtentUnwritten != 0})
	}
	return out
}

// unwrittenIn is the number of bytes of [from, to) that extents map as
// fallocated and unwritten.
func unwrittenIn(exts []extent, from, to int64) int64 {
	var n int64
	for _, e := range exts {
		if !e.unwritten {
			continue
		}
		lo, hi := max(e.off, from), min(e.off+e.len, to)
		if hi > lo {
			n += hi - lo
		}
	}
	return n
}

// TestZeroFillWritesChunksAhead appends to a direct-mode log past several
// preallocation chunks: with zero fill (the default) every chunk after the
// first is written (zeros, then data) before data reaches it, so no block
// past the first chunk is left for a data write to convert; with
// PreallocateUnwritten the chunk ahead of the data stays unwritten, which
// shows that the check can see the difference on this filesystem. Both
// read back as appended, also after reopening.
func TestZeroFillWritesChunksAhead(t *testing.T) {
	for _, unwritten := range []bool{false, true} {
		t.Run(fmt.Sprintf("unwritten=%v", unwritten), func(t *testing.T) {
			const chunk = 2 << 20
			dir := t.TempDir()
			o := directOptions(t)
			o.SegmentBytes, o.PreallocateChunk, o.PreallocateUnwritten = 64<<20, chunk, unwritten
			l := mustOpen(t, dir, o)
			var all [][]byte
			for i := 0; l.Size() < 9<<20; i++ {
				all = append(all, appendN(t, l, 1, 4, 30000+i%5*1000, int64(i))...)
			}
			d := l.active().log.(*directFile)
			d.waitZero()
			ws := l.sf.cache.WriteStats()
			if unwritten != (ws.ZeroFills == 0) || ws.ZeroFillBytes < uint64(ws.ZeroFills)*chunk {
				t.Fatalf("zero fills %d of %d bytes in all, want none with unwritten=%v and at least a chunk each otherwise", ws.ZeroFills, ws.ZeroFillBytes, unwritten)
			}
			path := filepath.Join(dir, segmentFileName(0, logSuffix))
			end := fileSize(t, path)
			exts := extentsOf(t, path)
			past := unwrittenIn(exts, chunk, end)
			if unwritten {
				if past == 0 {
					t.Skipf("no unwritten extents without zero fill either (extents %+v): the filesystem does not keep fallocated blocks unwritten", exts)
				}
			} else if past != 0 {
				t.Fatalf("%d bytes past the first chunk are unwritten with zero fill (file %d bytes, data %d): extents %+v", past, end, l.Size(), exts)
			}
			// Reopened (recovery preallocates the active segment again)
			// and appended to: with zero fill nothing past the data's tail
			// block is left unwritten then either.
			l.Close()
			l2 := mustOpen(t, dir, o)
			defer l2.Close()
			all = append(all, appendN(t, l2, 1, 4, 30000, 1)...)
			l2.active().log.(*directFile).waitZero()
			end = fileSize(t, path)
			tail := roundUp(l2.Size(), DefaultCacheBlockBytes)
			if past := unwrittenIn(extentsOf(t, path), tail, end); !unwritten && past != 0 {
				t.Fatalf("after a reopen, %d bytes past the tail block (%d) are unwritten with zero fill (file %d bytes, data %d)", past, tail, end, l2.Size())
			}
			for i := 0; l2.Size() < 14<<20; i++ {
				all = append(all, appendN(t, l2, 1, 4, 30000+i%5*1000, int64(i))...)
			}
			want := bytes.Join(all, nil)
			res, err := l2.Read(0, 1<<30, 1<<62, true)
			if err != nil || !bytes.Equal(readChunks(t, res), want) {
				t.Fatalf("read back after reopening differs: %v", err)
			}
		})
	}
}

// TestZeroFillOrdersBeforeData makes appends reach into the range a fill
// is writing: with 8 MiB chunks the allocation grows (and a fill of the
// new chunk starts) once the data passes 4 MiB, and the next append, which
// does not grow it again, writes into that chunk. It waits for the fill, so
// its bytes are what the disk holds, not the fill's zeros. Fills are held
// (zeroFillGate) until an owner waits for one (zeroFillWaitHook), so the
// fill is pending when the append comes however slow the test runs, and
// an append that did not wait would reach the disk first (the close that
// ends the test releases the fill then). The file is read without the log
// once it is closed.
func TestZeroFillOrdersBeforeData(t *testing.T) {
	t.Cleanup(func() { zeroFillGate, zeroFillWaitHook = nil, nil })
	for _, ring := range []bool{false, true} {
		t.Run(fmt.Sprintf("ring=%v", ring), func(t *testing.T) {
			gate := make(chan struct{})
			var release sync.Once
			zeroFillGate = gate
			zeroFillWaitHook = func() { release.Do(func() { close(gate) }) }
			t.Cleanup(zeroFillWaitHook) // a fill still held when the test fails
			const chunk = 8 << 20
			dir := t.TempDir()
			o := directOptions(t)
			o.SegmentBytes, o.PreallocateChunk = 64<<20, chunk
			var cache *BlockCache
			var rg *ioring.Ring
			if ring {
				cache, rg = writeRingCache(t, 32*DefaultCacheBlockBytes)
				o.Cache = cache
			}
			l := mustOpen(t, dir, o)
			var all [][]byte
			for l.Size() < chunk/2-(3<<20)-(64<<10) {
				all = append(all, appendN(t, l, 1, 2, 20000, 1)...)
			}
			for i := 0; i < 3; i++ {
				var recs []byte
				for j := 0; j < 3; j++ {
					recs = append(recs, simpleBatch(t, 4, 250000, int64(i*10+j))...)
				}
				start := l.LogEndOffset()
				if info := mustAppend(t, l, recs, AppendOptions{LeaderEpoch: 1}); info.FirstOffset != start {
					t.Fatalf("append %d at offset %d, want %d", i, info.FirstOffset, start)
				}
				all = append(all, recs) // the log rewrote the base offsets in place
				if ring {
					drainWrites(t, cache, rg)
				}
			}
			want := bytes.Join(all, nil)
			l.Close()
			got := segmentOnDisk(t, dir, 0)
			if !bytes.Equal(got, want) {
				at := 0
				for at < len(got) && at < len(want) && got[at] == want[at] {
					at++
				}
				t.Fatalf("segment on disk (%d bytes) differs from the appends (%d bytes) at byte %d", len(got), len(want), at)
			}
			if w := l.sf.cache.WriteStats().ZeroFillWaits; w == 0 {
				t.Fatalf("no append waited for a held fill (%+v)", l.sf.cache.WriteStats())
			}
		})
	}
}

// BenchmarkZeroFill writes 16 MiB of zeros over fallocated blocks with one
// pwritev(2), from zeroBlock and from a 1 MiB heap buffer, and reports the
// process CPU per fill (cpu-ms/op) next to the time.
func BenchmarkZeroFill(b *testing.B) {
	for _, src := range []string{"zeroBlock", "heap-1MiB"} {
		b.Run(src, func(b *testing.B) {
			z := zeroBlock()
			if src == "heap-1MiB" {
				z = alignedBuf(1<<20, 4096)
			}
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "fill"), os.O_CREATE|os.O_RDWR|unix.O_DIRECT, 0o644)
			if err != nil {
				b.Skipf("no O_DIRECT here: %v", err)
			}
			defer f.Close()
			fd := int(f.Fd())
			var iov [][]byte
			for left := zeroFillMax; left > 0; left -= len(z) {
				iov = append(iov, z[:min(left, len(z))])
			}
			var r0, r1 unix.Rusage
			_ = unix.Getrusage(unix.RUSAGE_SELF, &r0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				off := int64(i%64) * zeroFillMax // a 1 GiB file, rewritten
				if i < 64 {
					if err := unix.Fallocate(fd, 0, off, zeroFillMax); err != nil {
						b.Skipf("no fallocate here: %v", err)
					}
				}
				if _, err := unix.Pwritev(fd, iov, off); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = unix.Getrusage(unix.RUSAGE_SELF, &r1)
			cpu := (r1.Utime.Nano() + r1.Stime.Nano()) - (r0.Utime.Nano() + r0.Stime.Nano())
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
