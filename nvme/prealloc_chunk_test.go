package nvme

import (
	"bytes"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
)

// allocatedBytes is the disk space a file holds (st_blocks).
func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// Direct mode fallocates the active segment a chunk ahead of its data, not
// to segment.bytes: a topic of many partitions does not reserve
// partitions x segment.bytes of disk at creation. The allocation grows
// ahead of the appends (the blocks written are always allocated), the
// segment is trimmed when it rolls, and a crash leaves a log that
// recovers to its data.
//
// With zero fill (the default) the allocation grows half a chunk earlier,
// so up to a chunk and a half lie past the data. An empty segment is
// allocated at its first append.
func TestDirectPreallocatesInChunks(t *testing.T) {
	for _, unwritten := range []bool{false, true} {
		t.Run(fmt.Sprintf("unwritten=%v", unwritten), func(t *testing.T) {
			testDirectPreallocatesInChunks(t, unwritten)
		})
	}
}

func testDirectPreallocatesInChunks(t *testing.T, unwritten bool) {
	const chunk = 2 << 20
	dir := t.TempDir()
	o := directOptions(t)
	o.SegmentBytes = 64 << 20
	o.PreallocateChunk = chunk
	o.PreallocateUnwritten = unwritten
	ahead := int64(chunk)
	if !unwritten {
		ahead += chunk / 2
	}
	l := mustOpen(t, dir, o)
	path := filepath.Join(dir, segmentFileName(0, logSuffix))
	// An empty segment holds no blocks until its first append (idle
	// partitions reserve nothing); that append allocates the first chunk.
	if got, a := fileSize(t, path), allocatedBytes(t, path); got != 0 || a != 0 {
		t.Fatalf("new active segment file is %d bytes, %d allocated, want none before its first append", got, a)
	}
	var all [][]byte
	grew := 0
	last := fileSize(t, path)
	for i := 0; l.Size() < 9<<20; i++ {
		all = append(all, appendN(t, l, 1, 4, 20000+i%7*1000, int64(i))...)
		size, file := l.Size(), fileSize(t, path)
		// The tail block is allocated whole, and at most ahead and a block lie past the data.
		if lo := roundUp(size, DefaultCacheBlockBytes); file < lo || file > size+ahead+DefaultCacheBlockBytes {
			t.Fatalf("after %d bytes of data the file is %d bytes, want [%d, %d]", size, file, lo, size+ahead+DefaultCacheBlockBytes)
		}
		if a := allocatedBytes(t, path); a < file {
			t.Fatalf("file of %d bytes has %d bytes allocated: not fallocated", file, a)
		}
		if file > last {
			grew++
			last = file
		}
	}
	if grew < 3 {
		t.Fatalf("the allocation grew %d times over 9 MiB of appends, want several", grew)
	}
	want := bytes.Join(all, nil)
	res, err := l.Read(0, 1<<30, 1<<62, true)
	if err != nil || !bytes.Equal(readChunks(t, res), want) {
		t.Fatalf("read back differs: %v", err)
	}

	// A crash (no Close): the reopened log ends where the data ends.
	f, _ := l.SyncTarget()
	if err := fdatasync(f); err != nil {
		t.Fatal(err)
	}
	l2 := mustOpen(t, dir, o)
	if l2.Size() != int64(len(want)) {
		t.Fatalf("size %d after the crash, want %d", l2.Size(), len(want))
	}
	res, err = l2.Read(0, 1<<30, 1<<62, true)
	if err != nil || !bytes.Equal(readChunks(t, res), want) {
		t.Fatalf("data differs after the crash: %v", err)
	}
	if got := fileSize(t, path); got < l2.Size() || got > l2.Size()+ahead+DefaultCacheBlockBytes {
		t.Fatalf("recovered active segment file is %d bytes for %d of data", got, l2.Size())
	}
	if err := l2.Roll(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != int64(len(want)) {
		t.Fatalf("rolled segment is %d bytes, want its %d bytes of data", got, len(want))
	}
	l2.Close()
}

// log.preallocate=true keeps Kafka's whole-segment preallocation, also in
// direct mode.
func TestPreallocateWholeSegment(t *testing.T) {
	for _, mode := range []string{IOModeBuffered, IOModeDirect} {
		dir := t.TempDir()
		o := testOptions(t)
		o.IOMode, o.Preallocate = mode, true
		o.SegmentBytes, o.PreallocateChunk = 32<<20, 1<<20
		l := mustOpen(t, dir, o)
		appendN(t, l, 3, 2, 100, 1)
		if got := fileSize(t, filepath.Join(dir, segmentFileName(0, logSuffix))); got != o.SegmentBytes {
			t.Errorf("%s: active segment file %d bytes, want segment.bytes %d", mode, got, o.SegmentBytes)
		}
		l.Close()
	}
}
