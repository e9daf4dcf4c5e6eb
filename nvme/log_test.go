package nvme

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
)

// appendN appends n batches of recsPer records each and returns the stored
// bytes of each batch (after offset assignment).
func appendN(t testing.TB, l *Log, n, recsPer, valueSize int, baseTs int64) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		b := simpleBatch(t, recsPer, valueSize, baseTs+int64(i))
		want := l.LogEndOffset()
		info := mustAppend(t, l, b, AppendOptions{LeaderEpoch: 3})
		if info.FirstOffset != want || info.LastOffset != want+int64(recsPer)-1 || info.Bytes != len(b) {
			t.Fatalf("append %d: info %+v, want first offset %d", i, info, want)
		}
		out = append(out, b)
	}
	return out
}

func TestAppendReadAcrossRolls(t *testing.T) {
	o := testOptions(t)
	o.SegmentBytes = 2000
	o.IndexIntervalBytes = 300
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	stored := appendN(t, l, 60, 4, 50, 1_000_000)
	if got := l.LogEndOffset(); got != 240 {
		t.Fatalf("LEO %d, want 240", got)
	}
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("want several segments, got %d", len(segs))
	}
	var total int64
	for i, s := range segs {
		if s.Size > o.SegmentBytes {
			t.Errorf("segment %d is %d bytes, over segment.bytes", i, s.Size)
		}
		if i > 0 && fileSize(t, filepath.Join(filepath.Dir(s.Path), segmentFileName(segs[i-1].BaseOffset, indexSuffix)))%8 != 0 {
			t.Errorf("rolled index not trimmed")
		}
		total += s.Size
	}
	if total != l.Size() {
		t.Fatalf("Size %d, segments sum %d", l.Size(), total)
	}
	all := bytes.Join(stored, nil)
	// Every offset: the batch holding it comes first; reading everything gives all bytes.
	for off := int64(0); off < 240; off++ {
		res, err := l.Read(off, 1<<20, 1<<62, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		got := readChunks(t, res)
		hs := batchesOf(t, got)
		if hs[0].BaseOffset != off/4*4 || hs[0].PartitionLeaderEpoch != 3 {
			t.Fatalf("Read(%d) starts with batch %d (epoch %d)", off, hs[0].BaseOffset, hs[0].PartitionLeaderEpoch)
		}
		if !bytes.Equal(got, all[int(off/4)*len(stored[0]):]) {
			t.Fatalf("Read(%d): bytes differ", off)
		}
	}
	// Reopen: same state.
	l.Close()
	l2 := mustOpen(t, l.dir, o)
	defer l2.Close()
	if l2.LogEndOffset() != 240 || len(l2.Segments()) != len(segs) {
		t.Fatalf("after reopen LEO %d segments %d", l2.LogEndOffset(), len(l2.Segments()))
	}
	res, err := l2.Read(0, 1<<30, 1<<62, false)
	if err != nil || !bytes.Equal(readChunks(t, res), all) {
		t.Fatalf("read after reopen: %v", err)
	}
	appendN(t, l2, 3, 4, 50, 2_000_000)
	if l2.LogEndOffset() != 252 {
		t.Fatalf("LEO %d after more appends", l2.LogEndOffset())
	}
}

func TestReadLimits(t *testing.T) {
	l := mustOpen(t, t.TempDir(), testOptions(t))
	defer l.Close()
	small := simpleBatch(t, 2, 10, 1)  // offsets 0-1
	big := simpleBatch(t, 3, 1000, 2)  // offsets 2-4
	small2 := simpleBatch(t, 1, 10, 3) // offset 5
	for _, b := range [][]byte{small, big, small2} {
		mustAppend(t, l, b, AppendOptions{})
	}
	bigLen := int32(len(big))
	tests := []struct {
		name        string
		offset      int64
		maxBytes    int32
		maxOffset   int64
		minOne      bool
		wantBases   []int64
		wantErr     error
		wantChunks  int
		wantMinSize int32
	}{
		{name: "all", offset: 0, maxBytes: 1 << 20, maxOffset: 100, wantBases: []int64{0, 2, 5}},
		{name: "inside batch", offset: 3, maxBytes: 1 << 20, maxOffset: 100, wantBases: []int64{2, 5}},
		{name: "last record", offset: 5, maxBytes: 1 << 20, maxOffset: 100, wantBases: []int64{5}},
		{name: "kip74 oversized first", offset: 2, maxBytes: 10, maxOffset: 100, minOne: true, wantBases: []int64{2}},
		{name: "oversized first without minOne", offset: 2, maxBytes: 10, maxOffset: 100, wantBases: nil},
		{name: "stop before exceeding", offset: 0, maxBytes: int32(len(small)) + bigLen - 1, maxOffset: 100, minOne: true, wantBases: []int64{0}},
		{name: "exact fit", offset: 0, maxBytes: int32(len(small)) + bigLen, maxOffset: 100, wantBases: []int64{0, 2}},
		{name: "maxOffset excludes batch at bound", offset: 0, maxBytes: 1 << 20, maxOffset: 2, wantBases: []int64{0}},
		{name: "maxOffset inside batch includes it", offset: 0, maxBytes: 1 << 20, maxOffset: 3, wantBases: []int64{0, 2}},
		{name: "offset at maxOffset", offset: 2, maxBytes: 1 << 20, maxOffset: 2, wantBases: nil},
		{name: "at LEO", offset: 6, maxBytes: 1 << 20, maxOffset: 100, wantBases: nil},
		{name: "beyond LEO", offset: 7, maxBytes: 1 << 20, maxOffset: 100, wantErr: ErrOffsetOutOfRange},
		{name: "negative", offset: -1, maxBytes: 1 << 20, maxOffset: 100, wantErr: ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := l.Read(tt.offset, tt.maxBytes, tt.maxOffset, tt.minOne)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			var bases []int64
			for _, h := range batchesOf(t, readChunks(t, res)) {
				bases = append(bases, h.BaseOffset)
			}
			if !slices.Equal(bases, tt.wantBases) {
				t.Fatalf("bases %v, want %v", bases, tt.wantBases)
			}
		})
	}
}

// TestReadBatchesIntoEnds: the batch ends are the running sizes of the
// batches read, across segment rolls, and the last is the result's size.
func TestReadBatchesIntoEnds(t *testing.T) {
	o := testOptions(t)
	o.SegmentBytes = 3000
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	var sizes []int32
	for i, v := range []int{10, 1000, 10, 2500, 1, 700} {
		b := simpleBatch(t, 1+i%3, v, int64(i))
		mustAppend(t, l, b, AppendOptions{})
		sizes = append(sizes, int32(len(b)))
	}
	for _, maxBytes := range []int32{1 << 20, sizes[0] + sizes[1] + sizes[2]} {
		res, ends, err := l.ReadBatchesInto(nil, []int32{42}[:0], 0, maxBytes, 100, true)
		if err != nil {
			t.Fatal(err)
		}
		var want []int32
		var sum int32
		for _, n := range sizes {
			if sum+n > maxBytes {
				break
			}
			sum += n
			want = append(want, sum)
		}
		if !slices.Equal(ends, want) || res.Bytes != sum {
			t.Fatalf("max %d: ends %v, bytes %d; want %v, %d", maxBytes, ends, res.Bytes, want, sum)
		}
	}
}

func TestAppendRejectsAndIsAtomic(t *testing.T) {
	l := mustOpen(t, t.TempDir(), testOptions(t))
	defer l.Close()
	good := simpleBatch(t, 2, 10, 1)
	bad := simpleBatch(t, 2, 10, 1)
	bad[len(bad)-3] ^= 0xff
	records := append(append([]byte(nil), good...), bad...)
	orig := append([]byte(nil), records...)
	if _, err := l.Append(records, AppendOptions{}); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("err %v, want ErrCorruptMessage", err)
	}
	if !bytes.Equal(records, orig) {
		t.Fatal("a rejected append rewrote its input")
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("rejected append stored something: LEO %d size %d", l.LogEndOffset(), l.Size())
	}
	if _, err := l.Append(simpleBatch(t, 1, 2000, 1), AppendOptions{MaxMessageBytes: 1000}); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("err %v, want ErrMessageTooLarge", err)
	}
}

func TestLogAppendTime(t *testing.T) {
	o := testOptions(t)
	clock := &fakeClock{t: time.UnixMilli(1_700_000_000_000)}
	o.Now = clock.now
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	b := simpleBatch(t, 3, 10, 5)
	info := mustAppend(t, l, b, AppendOptions{LogAppendTime: true, LeaderEpoch: 9})
	if info.LogAppendTime != 1_700_000_000_000 {
		t.Fatalf("LogAppendTime %d", info.LogAppendTime)
	}
	res, _ := l.Read(0, 1<<20, 100, true)
	hs := batchesOf(t, readChunks(t, res)) // checks the CRC
	if !hs[0].IsLogAppendTime() || hs[0].MaxTimestamp != info.LogAppendTime || hs[0].PartitionLeaderEpoch != 9 {
		t.Fatalf("header %+v", hs[0])
	}
	if ts, off := l.MaxTimestamp(); ts != info.LogAppendTime || off != 0 {
		t.Fatalf("MaxTimestamp %d %d", ts, off)
	}
	info2 := mustAppend(t, l, simpleBatch(t, 1, 1, 5), AppendOptions{})
	if info2.LogAppendTime != -1 {
		t.Fatalf("CreateTime append reports LogAppendTime %d", info2.LogAppendTime)
	}
}

func TestTornTailRecovery(t *testing.T) {
	tails := []struct {
		name string
		tail func(next []byte) []byte
	}{
		{"half batch", func(next []byte) []byte { return next[:len(next)/2] }},
		{"few bytes", func(next []byte) []byte { return next[:5] }},
		{"garbage", func(next []byte) []byte { return bytes.Repeat([]byte{0xab}, 300) }},
		{"zeros", func(next []byte) []byte { return make([]byte, 4096) }},
		{"bad crc", func(next []byte) []byte { c := append([]byte(nil), next...); c[len(c)-1] ^= 1; return c }},
	}
	for _, tt := range tails {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(t)
			o.IndexIntervalBytes = 100
			l := mustOpen(t, dir, o)
			appendN(t, l, 10, 2, 40, 100)
			size := l.Size()
			l.Close()
			next := simpleBatch(t, 2, 40, 500)
			path := filepath.Join(dir, segmentFileName(0, logSuffix))
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(tt.tail(next))
			f.Close()
			l2 := mustOpen(t, dir, o)
			defer l2.Close()
			if l2.LogEndOffset() != 20 || l2.Size() != size || fileSize(t, path) != activeFileSize(o, size) {
				t.Fatalf("after recovery LEO %d size %d file %d, want 20 %d", l2.LogEndOffset(), l2.Size(), fileSize(t, path), size)
			}
			appendN(t, l2, 2, 2, 40, 600)
			res, err := l2.Read(19, 1<<20, 100, true)
			if err != nil {
				t.Fatal(err)
			}
			hs := batchesOf(t, readChunks(t, res))
			if len(hs) != 3 || hs[1].BaseOffset != 20 || hs[2].BaseOffset != 22 {
				t.Fatalf("batches after recovery: %+v", hs)
			}
		})
	}
}

func TestIndexRebuild(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.SegmentBytes = 3000
	o.IndexIntervalBytes = 200
	l := mustOpen(t, dir, o)
	appendN(t, l, 80, 3, 30, 10_000)
	type idx struct {
		off  []offsetEntry
		time []timeEntry
		next int64
		maxT int64
	}
	snapshot := func(l *Log) []idx {
		var out []idx
		for _, s := range l.segs {
			out = append(out, idx{slices.Clone(s.offIdx), slices.Clone(s.timeIdx), s.next, s.maxTs})
		}
		return out
	}
	l.Close()
	// Without the marker the active segment is recovered from its batches,
	// as the reopen below must do once its .index is gone.
	os.Remove(filepath.Join(dir, CleanShutdownFile))
	l = mustOpen(t, dir, o)
	before := snapshot(l)
	l.Close()
	if len(before) < 3 || len(before[0].off) == 0 {
		t.Fatalf("test needs several indexed segments: %d", len(before))
	}
	// Delete every .index, corrupt a .timeindex's size.
	ms, _ := filepath.Glob(filepath.Join(dir, "*.index"))
	for _, m := range ms {
		os.Remove(m)
	}
	ts, _ := filepath.Glob(filepath.Join(dir, "*.timeindex"))
	os.WriteFile(ts[1], []byte{1, 2, 3}, 0o644)
	l = mustOpen(t, dir, o)
	defer l.Close()
	after := snapshot(l)
	for i := range before {
		if !slices.Equal(before[i].off, after[i].off) || !slices.Equal(before[i].time, after[i].time) ||
			before[i].next != after[i].next || before[i].maxT != after[i].maxT {
			t.Fatalf("segment %d: rebuilt index differs:\n%+v\n%+v", i, before[i], after[i])
		}
	}
	for _, m := range ms {
		if _, err := os.Stat(m); err != nil {
			t.Fatalf("index not rewritten: %v", err)
		}
	}
	for off := int64(0); off < l.LogEndOffset(); off += 7 {
		res, err := l.Read(off, 1, 1<<62, true)
		if err != nil {
			t.Fatal(err)
		}
		if h := batchesOf(t, readChunks(t, res))[0]; h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("Read(%d) got batch %d..%d", off, h.BaseOffset, h.LastOffset())
		}
	}
}

// TestActiveIndexFilesByThePage: the active segment's index files take
// its new entries once a page of them has gathered (indexFlushBytes), never
// a page behind the entries reads use; rolling writes the rest, so a closed
// segment's files hold every entry and load at open as they were, and after
// a kill (no Close) recovery rebuilds the active segment's entries from its
// batches.
func TestActiveIndexFilesByThePage(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.IndexIntervalBytes = 1 // an entry per batch
	l := mustOpen(t, dir, o)
	perPage := indexFlushBytes / offsetEntrySize
	idxPath := filepath.Join(dir, segmentFileName(0, indexSuffix))
	for i := range perPage + 40 {
		appendN(t, l, 1, 1, 10, int64(i))
		entries, onDisk := len(l.active().offIdx), fileSize(t, idxPath)/offsetEntrySize
		if onDisk > int64(entries) || int64(entries)-onDisk >= int64(perPage) {
			t.Fatalf("after %d appends: %d entries, %d in the file; want less than a page behind", i+1, entries, onDisk)
		}
		if i == 9 && onDisk != 0 {
			t.Fatalf("%d entries in the file after 10 appends: written per append", onDisk)
		}
	}
	if fileSize(t, idxPath) == 0 {
		t.Fatal("no page of entries written")
	}
	want := slices.Clone(l.active().offIdx)
	wantTime := slices.Clone(l.active().timeIdx)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, idxPath) / offsetEntrySize; got != int64(len(want)) {
		t.Fatalf("closed segment's index holds %d entries, want %d", got, len(want))
	}
	appendN(t, l, 30, 1, 10, 0)
	active := slices.Clone(l.active().offIdx)
	// Killed: no Close, the active segment's index file is behind.
	l2 := mustOpen(t, dir, o)
	defer l2.Close()
	if !slices.Equal(l2.segs[0].offIdx, want) || !slices.Equal(l2.segs[0].timeIdx, wantTime) {
		t.Fatal("closed segment's indexes loaded differ from those written")
	}
	if !slices.Equal(l2.active().offIdx, active) {
		t.Fatalf("active segment's index recovered as %d entries, want %d", len(l2.active().offIdx), len(active))
	}
	l.Close()
}

func TestLeftoversRemoved(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"00000000000000000000.log.deleted", "00000000000000000005.index.swap", "00000000000000000005.log.cleaned", "00000000000000000100.index", "leader-epoch-checkpoint.tmp"} {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
	}
	l := mustOpen(t, dir, testOptions(t))
	defer l.Close()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex"}
	if !slices.Equal(names, want) {
		t.Fatalf("dir holds %v, want %v", names, want)
	}
}

func TestRollBySegmentMsAndIndexFull(t *testing.T) {
	o := testOptions(t)
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	o.Now = clock.now
	o.SegmentMs = 1000
	o.IndexIntervalBytes = 1
	o.MaxIndexBytes = 32 // 4 offset entries, 2 time entries
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	if err := l.MaybeRoll(); err != nil || len(l.segs) != 1 {
		t.Fatalf("an empty segment must not roll: %v %d", err, len(l.segs))
	}
	mustAppend(t, l, simpleBatch(t, 1, 1, 1_000_000), AppendOptions{})
	clock.advance(999 * time.Millisecond)
	l.MaybeRoll()
	if len(l.segs) != 1 {
		t.Fatal("rolled too early")
	}
	clock.advance(2 * time.Millisecond)
	if err := l.MaybeRoll(); err != nil || len(l.segs) != 2 {
		t.Fatalf("segment.ms roll: %v, %d segments", err, len(l.segs))
	}
	// Index full: time index holds 2 entries; timestamps grow each batch.
	for i := 0; i < 8; i++ {
		mustAppend(t, l, simpleBatch(t, 1, 1, clock.t.UnixMilli()+int64(i)), AppendOptions{})
	}
	if len(l.segs) < 4 {
		t.Fatalf("index-full rolls: %d segments", len(l.segs))
	}
	for _, s := range l.segs {
		if len(s.offIdx) > 4 || len(s.timeIdx) > 3 {
			t.Fatalf("index over its limit: %d %d", len(s.offIdx), len(s.timeIdx))
		}
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	o := testOptions(t)
	o.SegmentBytes = 600
	o.IndexIntervalBytes = 50
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	// batch i: offsets 3i..3i+2, timestamps 1000+10i+{0,1,2}; one compressed batch.
	for i := 0; i < 20; i++ {
		recs := []testRecord{{key: []byte("k"), value: []byte("v"), tsDelta: 0}, {key: []byte("k"), tsDelta: 1}, {key: []byte("k"), tsDelta: 2}}
		spec := batchSpec{baseTs: 1000 + 10*int64(i)}
		if i == 7 {
			spec.codec = CompressionZstd
		}
		mustAppend(t, l, buildBatch(t, spec, recs), AppendOptions{})
	}
	if len(l.segs) < 3 {
		t.Fatalf("want several segments, got %d", len(l.segs))
	}
	tests := []struct {
		ts, off, rts int64
		ok           bool
	}{
		{0, 0, 1000, true},
		{1000, 0, 1000, true},
		{1001, 1, 1001, true},
		{1003, 3, 1010, true},
		{1072, 23, 1072, true}, // inside the compressed batch
		{1101, 31, 1101, true},
		{1192, 59, 1192, true},
		{1193, -1, -1, false},
	}
	for _, tt := range tests {
		off, rts, ok := l.OffsetForTimestamp(tt.ts)
		if off != tt.off || rts != tt.rts || ok != tt.ok {
			t.Errorf("OffsetForTimestamp(%d) = %d %d %v, want %d %d %v", tt.ts, off, rts, ok, tt.off, tt.rts, tt.ok)
		}
	}
	if ts, off := l.MaxTimestamp(); ts != 1192 || off != 59 {
		t.Errorf("MaxTimestamp %d %d", ts, off)
	}
	if err := l.SetLogStartOffset(10); err != nil {
		t.Fatal(err)
	}
	if off, _, _ := l.OffsetForTimestamp(0); off != 10 {
		t.Errorf("OffsetForTimestamp below log start gives %d", off)
	}
	empty := mustOpen(t, t.TempDir(), testOptions(t))
	defer empty.Close()
	if ts, off := empty.MaxTimestamp(); ts != -1 || off != -1 {
		t.Errorf("empty MaxTimestamp %d %d", ts, off)
	}
}

func TestRetention(t *testing.T) {
	newLog := func(t *testing.T, mod func(*Options)) (*Log, *fakeClock) {
		o := testOptions(t)
		clock := &fakeClock{t: time.UnixMilli(10_000_000)}
		o.Now = clock.now
		o.SegmentBytes = 1000
		mod(&o)
		l := mustOpen(t, t.TempDir(), o)
		t.Cleanup(func() { l.Close() })
		return l, clock
	}
	t.Run("bytes", func(t *testing.T) {
		// The delay must outlast the checks below that the file was renamed.
		l, _ := newLog(t, func(o *Options) {
			o.RetentionBytes = 2500
			o.RetentionMs = -1
			o.FileDeleteDelay = 500 * time.Millisecond
		})
		appendN(t, l, 40, 2, 100, 10_000_000)
		before := l.Segments()
		chunk, err := l.Read(0, 100, 1<<62, true) // a chunk in flight on the first segment
		if err != nil {
			t.Fatal(err)
		}
		n, err := l.ApplyRetention()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || len(l.Segments()) != len(before)-n {
			t.Fatalf("deleted %d of %d", n, len(before))
		}
		if l.Size() > 2500+1000 || l.Size() < 2500-1000 {
			t.Fatalf("size %d after retention.bytes 2500", l.Size())
		}
		if l.LogStartOffset() != l.Segments()[0].BaseOffset {
			t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), l.Segments()[0].BaseOffset)
		}
		if _, err := os.Stat(before[0].Path + deletedSuffix); err != nil {
			t.Fatalf("retired segment not renamed: %v", err)
		}
		_ = readChunks(t, chunk) // still readable after the rename
		if _, err := l.Read(0, 100, 1<<62, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below log start: %v", err)
		}
		if !wait.Until(5*time.Second, func() bool {
			_, err := os.Stat(before[0].Path + deletedSuffix)
			return os.IsNotExist(err)
		}) {
			t.Fatal("deleted file never unlinked")
		}
	})
	t.Run("time", func(t *testing.T) {
		l, clock := newLog(t, func(o *Options) { o.RetentionMs = 60_000 })
		appendN(t, l, 10, 2, 100, 10_000_000)         // old
		appendN(t, l, 10, 2, 100, 10_000_000+120_000) // new
		clock.advance(100 * time.Second)              // now = old + 100 s
		segs := l.Segments()
		n, err := l.ApplyRetention()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.segs[:len(l.segs)-1] {
			if s.maxTs < 10_000_000+120_000-60_000 && s.maxTs < 10_000_000+40_000 {
				t.Fatalf("segment with max timestamp %d survived", s.maxTs)
			}
		}
		if n == 0 || l.LogStartOffset() == 0 || len(l.segs) != len(segs)-n {
			t.Fatalf("deleted %d, log start %d", n, l.LogStartOffset())
		}
		// Everything expired: the active segment stays.
		clock.advance(time.Hour)
		l.ApplyRetention()
		if len(l.segs) != 1 {
			t.Fatalf("%d segments left, want only the active one", len(l.segs))
		}
	})
}

func TestSetLogStartOffset(t *testing.T) {
	o := testOptions(t)
	o.SegmentBytes = 800
	dir := t.TempDir()
	l := mustOpen(t, dir, o)
	appendN(t, l, 30, 2, 100, 1)
	segs := l.Segments()
	if err := l.SetLogStartOffset(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond LEO: %v", err)
	}
	target := segs[2].BaseOffset + 1
	if err := l.SetLogStartOffset(target); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != target || l.Segments()[0].BaseOffset != segs[2].BaseOffset {
		t.Fatalf("log start %d first segment %d", l.LogStartOffset(), l.Segments()[0].BaseOffset)
	}
	if _, err := l.Read(target-1, 1000, 1<<62, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below: %v", err)
	}
	res, err := l.Read(target, 1000, 1<<62, true)
	if err != nil || batchesOf(t, readChunks(t, res))[0].LastOffset() < target {
		t.Fatalf("read at log start: %v", err)
	}
	if err := l.SetLogStartOffset(target - 1); err != nil || l.LogStartOffset() != target {
		t.Fatalf("moving backwards changed it: %v %d", err, l.LogStartOffset())
	}
	if err := l.SetLogStartOffset(l.LogEndOffset()); err != nil || len(l.segs) != 1 {
		t.Fatalf("to LEO: %v, %d segments", err, len(l.segs))
	}
	if res, err := l.Read(l.LogEndOffset(), 1000, 1<<62, true); err != nil || res.Bytes != 0 {
		t.Fatalf("read at LEO: %v %d", err, res.Bytes)
	}
	leo := l.LogEndOffset()
	l.Close()
	o.LogStartOffset = leo + 50 // clamped to LEO
	l = mustOpen(t, dir, o)
	defer l.Close()
	if l.LogStartOffset() != leo {
		t.Fatalf("reopened log start %d, want %d", l.LogStartOffset(), leo)
	}
}

func TestOpenEmptyWithLogStartOffset(t *testing.T) {
	o := testOptions(t)
	o.LogStartOffset = 1234
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	if l.LogStartOffset() != 1234 || l.LogEndOffset() != 1234 {
		t.Fatalf("start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	info := mustAppend(t, l, simpleBatch(t, 2, 1, 1), AppendOptions{})
	if info.FirstOffset != 1234 {
		t.Fatalf("first offset %d", info.FirstOffset)
	}
	if _, err := os.Stat(filepath.Join(l.dir, "00000000000000001234.log")); err != nil {
		t.Fatal(err)
	}
}

func TestCloseAndDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-0")
	l := mustOpen(t, dir, testOptions(t))
	mustAppend(t, l, simpleBatch(t, 1, 1, 1), AppendOptions{})
	if f, end := l.SyncTarget(); f == nil || end != 1 {
		t.Fatalf("SyncTarget %v %d", f, end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(simpleBatch(t, 1, 1, 1), AppendOptions{}); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 1, 1, true); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, testOptions(t))
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir still there: %v", err)
	}
}
