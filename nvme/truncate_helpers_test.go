package nvme

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// truncModel is what a truncation test expects the log to hold: the
// stored bytes of each batch (offsets and leader epoch assigned), in
// offset order.
type truncModel struct {
	start   int64 // the first batch's base offset when there is none
	batches [][]byte
}

func batchBase(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func batchLast(b []byte) int64 {
	return batchBase(b) + int64(int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])))
}

// end is the log end offset the model expects.
func (m *truncModel) end() int64 {
	if n := len(m.batches); n > 0 {
		return batchLast(m.batches[n-1]) + 1
	}
	return m.start
}

// add records the stored form of raw appended at the model's end with
// leader epoch epoch (Append's rewrite without LogAppendTime: the CRC
// does not cover these fields).
func (m *truncModel) add(raw []byte, epoch int32) []byte {
	b := slices.Clone(raw)
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(m.end()))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
	m.batches = append(m.batches, b)
	return b
}

// cut returns the model after TruncateTo(target) on a log whose first
// segment starts at or below target: whole batches at and above it go.
func (m truncModel) cut(target int64) truncModel {
	i := 0
	for i < len(m.batches) && batchLast(m.batches[i]) < target {
		i++
	}
	out := truncModel{start: m.start, batches: slices.Clone(m.batches[:i])}
	if i == 0 && target < m.start {
		out.start = target
	}
	return out
}

func (m *truncModel) bytes() []byte { return bytes.Join(m.batches, nil) }

// lastSeq is the last sequence of producer pid in the model, -1 if none.
func (m *truncModel) lastSeq(pid int64) int32 {
	seq := int32(-1)
	for _, b := range m.batches {
		h, _ := ParseBatchHeader(b)
		if h.ProducerID == pid && h.BaseSequence >= 0 {
			seq = h.BaseSequence + h.LastOffsetDelta
		}
	}
	return seq
}

// maxTs is the largest batch maxTimestamp of the model, -1 if none.
func (m *truncModel) maxTs() int64 {
	ts := int64(-1)
	for _, b := range m.batches {
		ts = max(ts, int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])))
	}
	return ts
}

// truncPID is the idempotent producer of the truncation tests' logs.
const truncPID = 7

// truncBatch is batch i of a truncation test: every third one from
// idempotent producer truncPID with sequence seq, the others plain; sizes
// and record counts vary with i.
func truncBatch(t testing.TB, i int, seq int32) []byte {
	n := 1 + i%5
	if i%3 == 0 {
		return idemBatch(t, n, truncPID, 0, seq)
	}
	return simpleBatch(t, n, 20+i*37%300, 1_000_000+int64(i))
}

// appendTrunc appends batch i (truncBatch, the sequence following the
// log's producer state) with leader epoch epoch and records it in m.
func appendTrunc(t testing.TB, l *Log, m *truncModel, i int, epoch int32) {
	t.Helper()
	seq := int32(0)
	if e := l.Producer(truncPID); e != nil {
		seq = e.LastSequence() + 1
	}
	raw := truncBatch(t, i, seq)
	want := m.add(raw, epoch)
	info := mustAppend(t, l, raw, AppendOptions{LeaderEpoch: epoch})
	if info.FirstOffset != batchBase(want) || !bytes.Equal(raw, want) {
		t.Fatalf("append %d: first offset %d, model %d; stored bytes equal: %v", i, info.FirstOffset, batchBase(want), bytes.Equal(raw, want))
	}
}

// truncModePreallocated is a truncation test mode: buffered with
// log.preallocate.
const truncModePreallocated = "preallocated"

// truncOptions are the options of truncation tests in mode (an IOMode or
// truncModePreallocated): small
// segments with several index entries each.
func truncOptions(t testing.TB, mode string) Options {
	o := testOptions(t)
	o.IOMode = mode
	if mode == truncModePreallocated {
		o.IOMode, o.Preallocate = IOModeBuffered, true
	}
	o.SegmentBytes = 3000
	o.IndexIntervalBytes = 400
	o.FileDeleteDelay = -1 // retired files go at once: the directory checks see live segments only
	return o
}

// checkLog checks l against m: offsets, every byte read from the start,
// a read at every offset, the in-memory indexes against the batches, the
// producer state and the largest timestamp.
func checkLog(t *testing.T, l *Log, m truncModel) {
	t.Helper()
	if got, want := l.LogEndOffset(), m.end(); got != want {
		t.Fatalf("log end offset %d, want %d", got, want)
	}
	if l.LogStartOffset() > l.LogEndOffset() {
		t.Fatalf("log start offset %d above the end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	var want []byte
	for _, b := range m.batches {
		if batchLast(b) >= l.LogStartOffset() {
			want = append(want, b...)
		}
	}
	res, err := l.Read(l.LogStartOffset(), 1<<30, 1<<62, true)
	if err != nil {
		t.Fatalf("Read(%d): %v", l.LogStartOffset(), err)
	}
	got := readChunks(t, res)
	releaseAll(res)
	if !bytes.Equal(got, want) {
		t.Fatalf("log holds %d bytes (%d batches), want %d (%d batches)", len(got), len(batchesOf(t, got)), len(want), len(batchesOf(t, want)))
	}
	for _, b := range m.batches {
		for _, off := range []int64{batchBase(b), batchLast(b)} {
			if off < l.LogStartOffset() {
				continue
			}
			res, err := l.Read(off, 1, 1<<62, true)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			got := readChunks(t, res)
			releaseAll(res)
			if !bytes.Equal(got, b) {
				t.Fatalf("Read(%d) gives %d bytes, not the batch %d-%d", off, len(got), batchBase(b), batchLast(b))
			}
		}
	}
	if _, err := l.Read(m.end()+1, 1, 1<<62, true); err == nil {
		t.Fatalf("Read past the end %d succeeded", m.end())
	}
	checkIndexes(t, l)
	e := l.Producer(truncPID)
	switch seq := m.lastSeq(truncPID); {
	case seq < 0 && e != nil && e.LastSequence() >= 0:
		t.Fatalf("producer %d has last sequence %d, the log holds none of its batches", truncPID, e.LastSequence())
	case seq >= 0 && (e == nil || e.LastSequence() != seq):
		t.Fatalf("producer %d: entry %+v, want last sequence %d", truncPID, e, seq)
	}
	live := truncModel{}
	for _, b := range m.batches {
		if batchBase(b) >= l.segs[0].base { // retention keeps none below
			live.batches = append(live.batches, b)
		}
	}
	if ts, _ := l.MaxTimestamp(); ts != live.maxTs() {
		t.Fatalf("MaxTimestamp %d, want %d", ts, live.maxTs())
	}
	if lso := l.LastStableOffset(); lso != l.LogEndOffset() {
		t.Fatalf("last stable offset %d, log end %d (no transaction is open)", lso, l.LogEndOffset())
	}
}

// checkIndexes checks every segment's in-memory indexes against its batches.
func checkIndexes(t *testing.T, l *Log) {
	t.Helper()
	for i, s := range l.segs {
		if i > 0 && s.base < l.segs[i-1].next {
			t.Fatalf("segment %d starts at %d, below the previous one's end %d", i, s.base, l.segs[i-1].next)
		}
		for _, e := range s.offIdx {
			r, err := s.readBatchRef(int64(e.pos), make([]byte, BatchHeaderSize))
			if err != nil {
				t.Fatalf("segment %d: index entry %+v: %v", s.base, e, err)
			}
			if r.lastOf != s.base+int64(e.rel) {
				t.Fatalf("segment %d: index entry %+v points at batch %d-%d", s.base, e, r.baseOffset, r.lastOf)
			}
		}
		for k, e := range s.timeIdx {
			if s.base+int64(e.rel) >= s.next || k > 0 && e.ts <= s.timeIdx[k-1].ts {
				t.Fatalf("segment %d: time entry %d %+v (segment ends at %d)", s.base, k, e, s.next)
			}
		}
	}
}

// checkDirSegments checks the segment files of a closed log's directory as
// Kafka's tools would read them: every .log exactly whole batches with
// good CRCs and ascending offsets, every index entry at a batch start with
// that batch's last offset, time entries inside their segment. It returns
// the batches' bytes.
func checkDirSegments(t *testing.T, dir string) []byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	next := int64(-1)
	for _, e := range ents {
		base, ok := parseSegmentName(e.Name())
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		starts := map[int64]int64{} // batch position -> last offset
		for pos := 0; pos < len(b); {
			h, err := ParseBatchHeader(b[pos:])
			if err != nil || int64(pos)+h.Size() > int64(len(b)) {
				t.Fatalf("segment %d: batch at %d: %v (file %d bytes)", base, pos, err, len(b))
			}
			if batchCRC(b[pos:pos+int(h.Size())]) != h.CRC {
				t.Fatalf("segment %d: batch at %d has a bad CRC", base, pos)
			}
			if h.BaseOffset < base || h.BaseOffset < next {
				t.Fatalf("segment %d: batch at %d has offset %d, expected >= %d", base, pos, h.BaseOffset, max(base, next))
			}
			starts[int64(pos)] = h.LastOffset()
			next = h.LastOffset() + 1
			pos += int(h.Size())
		}
		all = append(all, b...)
		ib, err := os.ReadFile(filepath.Join(dir, segmentFileName(base, indexSuffix)))
		if err != nil {
			t.Fatal(err)
		}
		es, err := decodeOffsetIndex(ib, int64(len(b)))
		if err != nil {
			t.Fatalf("segment %d: %v", base, err)
		}
		for _, e := range es {
			if last, ok := starts[int64(e.pos)]; !ok || last != base+int64(e.rel) {
				t.Fatalf("segment %d: index entry %+v: batch there ends at %d (found %v)", base, e, last, ok)
			}
		}
		tb, err := os.ReadFile(filepath.Join(dir, segmentFileName(base, timeIndexSuffix)))
		if err != nil {
			t.Fatal(err)
		}
		tes, err := decodeTimeIndex(tb)
		if err != nil {
			t.Fatalf("segment %d: %v", base, err)
		}
		for _, e := range tes {
			if base+int64(e.rel) >= next {
				t.Fatalf("segment %d: time entry %+v past the segment's end %d", base, e, next)
			}
		}
	}
	return all
}
