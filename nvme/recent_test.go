package nvme

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestRecentRing(t *testing.T) {
	var q recentRing
	if _, ok := q.find(0); ok {
		t.Fatal("empty ring found an offset")
	}
	// 20 contiguous batches of 3 offsets each, 100 bytes each: batch i holds
	// offsets [3i, 3i+2] at position 100i.
	for i := int64(0); i < 20; i++ {
		q.add(batchRef{pos: 100 * i, size: 100, baseOffset: 3 * i, lastOf: 3*i + 2})
	}
	if q.n != recentBatches {
		t.Fatalf("n = %d, want %d", q.n, recentBatches)
	}
	oldest := int64(20 - recentBatches) // batches 4..19 are remembered
	for _, tc := range []struct {
		offset int64
		pos    int64
		ok     bool
	}{
		{3*oldest - 1, 0, false},         // below the oldest remembered base
		{3 * oldest, 100 * oldest, true}, // the oldest batch's base
		{3*oldest + 2, 100 * oldest, true},
		{3*oldest + 3, 100 * (oldest + 1), true},
		{3*19 + 2, 1900, true}, // the newest batch's last offset
		{3 * 20, 0, false},     // past the end
	} {
		pos, ok := q.find(tc.offset)
		if ok != tc.ok || (ok && pos != tc.pos) {
			t.Errorf("find(%d) = %d, %v; want %d, %v", tc.offset, pos, ok, tc.pos, tc.ok)
		}
	}
	for _, tc := range []struct {
		pos int64
		ok  bool
	}{{100 * (oldest - 1), false}, {100 * oldest, true}, {1500, true}, {1550, false}, {1900, true}, {2000, false}} {
		r, ok := q.get(tc.pos)
		if ok != tc.ok || (ok && (r.pos != tc.pos || r.baseOffset != 3*(tc.pos/100))) {
			t.Errorf("get(%d) = %+v, %v; want ok %v", tc.pos, r, ok, tc.ok)
		}
	}
	// A batch that does not start where the newest ends restarts the memory.
	q.add(batchRef{pos: 5000, size: 10, baseOffset: 100, lastOf: 100})
	if q.n != 1 {
		t.Fatalf("after a gap n = %d, want 1", q.n)
	}
	if _, ok := q.get(1900); ok {
		t.Fatal("a batch from before the gap is still remembered")
	}
	if pos, ok := q.find(100); !ok || pos != 5000 {
		t.Fatalf("find(100) after the gap = %d, %v", pos, ok)
	}
}

// countingFile counts ReadAt calls on .log files.
type countingFile struct {
	file
	n    *int
	name string
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	if strings.HasSuffix(f.name, logSuffix) {
		*f.n++
	}
	return f.file.ReadAt(p, off)
}

// TestRecentBatchesReads: reads at every offset of a log answer the same
// bytes with the remembered tail batches as a reopened log (which
// remembers none) answers from the file, and reads that start in the
// remembered batches read no batch header from the file.
func TestRecentBatchesReads(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.IndexIntervalBytes = 512 // several index entries, so both lookups are exercised
	reads := 0
	open := func(path string, flag int, perm os.FileMode) (file, error) {
		f, err := openOSFile(path, flag, perm)
		if err != nil {
			return nil, err
		}
		return &countingFile{file: f, n: &reads, name: path}, nil
	}
	l, err := openLog(dir, o, open)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var firsts []int64
	for i := 0; i < 40; i++ {
		info := mustAppend(t, l, simpleBatch(t, 1+i%5, 40+i, int64(1000+i)), AppendOptions{})
		firsts = append(firsts, info.FirstOffset)
	}
	leo := l.LogEndOffset()
	// The reference: the same directory opened again read-only through a
	// second Log would fight over the lock, so compare against a copy.
	cp := t.TempDir()
	copyDir(t, dir, cp)
	ref := mustOpen(t, cp, o)
	defer ref.Close()
	if ref.active().recent != nil {
		t.Fatal("a reopened log remembers batches it did not append")
	}
	for off := int64(0); off < leo; off++ {
		for _, maxBytes := range []int32{1, 300, 1 << 20} {
			got, err := l.Read(off, maxBytes, leo, true)
			if err != nil {
				t.Fatalf("Read(%d, %d): %v", off, maxBytes, err)
			}
			want, err := ref.Read(off, maxBytes, leo, true)
			if err != nil {
				t.Fatalf("reference Read(%d, %d): %v", off, maxBytes, err)
			}
			if g, w := readChunks(t, got), readChunks(t, want); !bytes.Equal(g, w) {
				t.Fatalf("Read(%d, %d): %d bytes differ from the reference's %d", off, maxBytes, len(g), len(w))
			}
		}
	}
	tail := firsts[len(firsts)-recentBatches]
	reads = 0
	for off := tail; off < leo; off++ {
		if _, err := l.Read(off, 1<<20, leo, true); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 0 {
		t.Fatalf("reads in the last %d batches read the .log %d times, want 0", recentBatches, reads)
	}
	if o.IOMode == "direct" {
		return // the whole log sits in the direct tail buffer: no read reaches the file
	}
	reads = 0
	if _, err := l.Read(firsts[2], 1<<20, leo, true); err != nil {
		t.Fatal(err)
	}
	if reads == 0 {
		t.Fatal("a read before the remembered batches did not read the file (is the counter wired?)")
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	es, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".lock") {
			continue
		}
		b, err := os.ReadFile(from + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+"/"+e.Name(), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
