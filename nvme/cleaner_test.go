package nvme

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kv is a record for cleaner tests; tomb makes a null value.
type kv struct {
	k, v string
	tomb bool
}

// kvBatch builds a batch of kvs with codec; pid >= 0 makes it an
// idempotent producer's batch (transactional when txn).
func kvBatch(t testing.TB, codec int, pid int64, seq int32, txn bool, kvs ...kv) []byte {
	t.Helper()
	recs := make([]testRecord, len(kvs))
	for i, x := range kvs {
		recs[i] = testRecord{key: []byte(x.k), tsDelta: int64(i)}
		if x.k == "" {
			recs[i].key = nil
		}
		if !x.tomb {
			recs[i].value = []byte(x.v)
		}
	}
	b := buildBatch(t, batchSpec{baseTs: 1_000_000, codec: codec}, recs)
	if pid >= 0 {
		be := binary.BigEndian
		be.PutUint64(b[offProducerID:], uint64(pid))
		be.PutUint16(b[offProducerEpoch:], 0)
		be.PutUint32(b[offBaseSequence:], uint32(seq))
		if txn {
			be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|AttrTransactional)
		}
		be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	}
	return b
}

// storedRecord is one record read back from the log.
type storedRecord struct {
	offset int64
	key    string
	value  string
	tomb   bool
}

// readAll reads every batch of the log and checks each: CRC, records that
// decompress and parse, offsets inside the batch's range and ascending.
func readAll(t testing.TB, l *Log) ([]BatchHeader, []storedRecord) {
	t.Helper()
	res, err := l.Read(l.LogStartOffset(), 1<<30, l.LogEndOffset(), true)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	b := readChunks(t, res)
	var hs []BatchHeader
	var out []storedRecord
	var dec decompressor
	defer dec.close()
	last := int64(-1)
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		batch := b[:h.Size()]
		b = b[h.Size():]
		if batchCRC(batch) != h.CRC {
			t.Fatalf("batch at %d: bad CRC", h.BaseOffset)
		}
		if h.BaseOffset <= last {
			t.Fatalf("batch at %d after offset %d", h.BaseOffset, last)
		}
		hs = append(hs, h)
		raw := batch[BatchHeaderSize:]
		if c := h.Compression(); c != CompressionNone {
			if raw, err = dec.decompress(c, raw); err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset, err)
			}
		}
		recs, err := parseCleanRecords(raw, h.RecordCount, nil)
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			off := h.BaseOffset + int64(r.offsetDelta)
			if off <= last || off > h.LastOffset() {
				t.Fatalf("record offset %d out of order (last %d, batch %d..%d)", off, last, h.BaseOffset, h.LastOffset())
			}
			last = off
			body := raw[r.start:r.end]
			_ = body
			sr := storedRecord{offset: off, key: string(r.key), tomb: r.nullValue}
			if !r.nullValue {
				sr.value = recordValue(t, raw[r.start:r.end])
			}
			out = append(out, sr)
		}
		last = max(last, h.LastOffset())
	}
	return hs, out
}

// recordValue extracts the value of one encoded record.
func recordValue(t testing.TB, rec []byte) string {
	p := 0
	v := func() int64 {
		x, n := binary.Varint(rec[p:])
		if n <= 0 {
			t.Fatal("bad varint")
		}
		p += n
		return x
	}
	v() // length
	p++ // attributes
	v() // timestamp delta
	v() // offset delta
	if kl := v(); kl > 0 {
		p += int(kl)
	}
	vl := v()
	return string(rec[p : p+int(vl)])
}

func cleanOnce(t testing.TB, l *Log, st CleanerState, c CleanConfig) CleanerState {
	t.Helper()
	j, err := l.PrepareClean(st, c)
	if err != nil {
		t.Fatalf("PrepareClean: %v", err)
	}
	if j == nil {
		t.Fatalf("PrepareClean: nothing to clean")
	}
	if err := j.Run(nil, nil); err != nil {
		t.Fatalf("Run: %v", err)
	}
	st, err = l.CommitClean(j)
	if err != nil {
		t.Fatalf("CommitClean: %v", err)
	}
	return st
}

func cleanerOptions(t testing.TB, clock *fakeClock) Options {
	o := testOptions(t)
	o.SegmentBytes = 1024
	o.IndexIntervalBytes = 100
	o.RetentionMs = -1
	if clock != nil {
		o.Now = clock.now
	}
	return o
}

// fillUpdates appends n batches of 4 updates over keys k0..k(keys-1);
// values name their offset. It returns the latest value of each key.
func fillUpdates(t testing.TB, l *Log, n, keys int, codec int) map[string]string {
	latest := map[string]string{}
	i := 0
	for range n {
		var kvs []kv
		for range 4 {
			k := fmt.Sprintf("k%d", i%keys)
			v := fmt.Sprintf("v%d", l.LogEndOffset()+int64(len(kvs)))
			kvs = append(kvs, kv{k: k, v: v})
			latest[k] = v
			i++
		}
		mustAppend(t, l, kvBatch(t, codec, -1, 0, false, kvs...), AppendOptions{})
	}
	return latest
}

func checkLatest(t testing.TB, l *Log, latest map[string]string) []storedRecord {
	t.Helper()
	return checkLatestUnique(t, l, latest, true)
}

func checkLatestUnique(t testing.TB, l *Log, latest map[string]string, unique bool) []storedRecord {
	t.Helper()
	_, recs := readAll(t, l)
	active := l.segs[len(l.segs)-1].base
	seen := map[string]int{}
	got := map[string]string{}
	for _, r := range recs {
		if r.value != fmt.Sprintf("v%d", r.offset) && !r.tomb {
			t.Fatalf("record at offset %d has value %q: offsets not preserved", r.offset, r.value)
		}
		if r.offset < active {
			seen[r.key]++
		}
		got[r.key] = r.value
	}
	for k, n := range seen {
		if n > 1 && unique {
			t.Errorf("key %s appears %d times in the cleaned segments", k, n)
		}
	}
	for k, v := range latest {
		if got[k] != v {
			t.Errorf("key %s: latest value %q, want %q", k, got[k], v)
		}
	}
	return recs
}

func TestCleanLatestValuePerKey(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, cleanerOptions(t, nil))
	defer func() { l.Close() }()
	latest := fillUpdates(t, l, 200, 10, CompressionNone)
	segsBefore := len(l.segs)
	sizeBefore := l.Size()
	c := CleanConfig{MinCleanableRatio: 0.5, DeleteRetentionMs: 3600_000}
	cl := l.Cleanable(CleanerState{}, c)
	if !cl.Needed || cl.FirstDirty != 0 || cl.FirstUncleanable != l.active().base || cl.Ratio != 1 {
		t.Fatalf("Cleanable %+v", cl)
	}
	leo := l.LogEndOffset()
	st := cleanOnce(t, l, CleanerState{}, c)
	if st.FirstDirty != cl.FirstUncleanable || len(st.Points) != 1 {
		t.Fatalf("state after a pass %+v", st)
	}
	if l.LogEndOffset() != leo || l.LogStartOffset() != 0 {
		t.Fatalf("LEO %d start %d after cleaning, want %d 0", l.LogEndOffset(), l.LogStartOffset(), leo)
	}
	if len(l.segs) >= segsBefore || l.Size() >= sizeBefore/4 {
		t.Fatalf("segments %d -> %d, bytes %d -> %d: not compacted and merged", segsBefore, len(l.segs), sizeBefore, l.Size())
	}
	checkLatest(t, l, latest)
	if cl := l.Cleanable(st, c); cl.Needed || cl.DirtyBytes != 0 {
		t.Fatalf("Cleanable right after a pass %+v", cl)
	}
	// Offsets in gaps still read: a fetch at a removed offset returns the next batch.
	res, err := l.Read(1, 1<<20, leo, true)
	if err != nil || res.Bytes == 0 {
		t.Fatalf("Read at a cleaned-away offset: %v, %d bytes", err, res.Bytes)
	}
	// More updates, a second pass, then reopen: same content, indexes valid.
	for k, v := range fillUpdates(t, l, 100, 10, CompressionNone) {
		latest[k] = v
	}
	st = cleanOnce(t, l, st, c)
	want := checkLatest(t, l, latest)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, cleanerOptions(t, nil))
	got := checkLatest(t, l, latest)
	if len(got) != len(want) {
		t.Fatalf("after reopen %d records, before %d", len(got), len(want))
	}
	if off, _, ok := l.OffsetForTimestamp(0); !ok || off != want[0].offset {
		t.Fatalf("OffsetForTimestamp(0) = %d %v, want the first record's offset %d", off, ok, want[0].offset)
	}
	for _, r := range want {
		res, err := l.Read(r.offset, 1, leo*10, true)
		if err != nil || res.Bytes == 0 {
			t.Fatalf("Read(%d): %v", r.offset, err)
		}
	}
	_ = st
}

func TestCleanTombstones(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	dir := t.TempDir()
	l := mustOpen(t, dir, cleanerOptions(t, clock))
	defer l.Close()
	c := CleanConfig{DeleteRetentionMs: 3600_000}
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "a", v: "v0"}, kv{k: "b", v: "v1"}), AppendOptions{})
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "a", tomb: true}, kv{k: "c", v: "v3"}), AppendOptions{})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "d", v: "v4"}), AppendOptions{})
	st := cleanOnce(t, l, CleanerState{}, c)
	_, recs := readAll(t, l)
	if len(recs) != 4 || recs[0].key != "b" || recs[1].key != "a" || !recs[1].tomb || recs[1].offset != 2 {
		t.Fatalf("after the first pass: %+v, want b, tombstone a, c, d", recs)
	}
	// Within delete.retention.ms the tombstone stays.
	clock.advance(30 * time.Minute)
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "e", v: "v5"}), AppendOptions{})
	l.Roll()
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "f", v: "v6"}), AppendOptions{})
	st = cleanOnce(t, l, st, c)
	if _, recs = readAll(t, l); len(recs) != 6 || !recs[1].tomb {
		t.Fatalf("30 minutes later: %+v, want the tombstone kept", recs)
	}
	// After it, the next pass removes it.
	clock.advance(31 * time.Minute)
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "g", v: "v7"}), AppendOptions{})
	l.Roll()
	st = cleanOnce(t, l, st, c)
	_, recs = readAll(t, l)
	for _, r := range recs {
		if r.key == "a" {
			t.Fatalf("key a still present after delete.retention.ms: %+v", recs)
		}
	}
	if len(recs) != 6 {
		t.Fatalf("records %+v, want b c d e f g", recs)
	}
	if len(st.Points) == 0 || st.Points[0].EndOffset < 3 {
		t.Fatalf("state %+v", st)
	}
}

func TestCleanCompressedBatches(t *testing.T) {
	codecs := []struct {
		name   string
		codec  int
		xerial bool
	}{{"gzip", CompressionGzip, false}, {"snappy", CompressionSnappy, false}, {"snappy-xerial", CompressionSnappy, true}, {"lz4", CompressionLZ4, false}, {"zstd", CompressionZstd, false}}
	for _, tc := range codecs {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, cleanerOptions(t, nil))
			defer l.Close()
			recs := []testRecord{}
			for i, k := range []string{"a", "b", "c", "d", "e"} {
				recs = append(recs, testRecord{key: []byte(k), value: []byte(strings.Repeat(k, 50)), tsDelta: int64(10 * i)})
			}
			b := buildBatch(t, batchSpec{baseTs: 5_000, codec: tc.codec, xerial: tc.xerial}, recs)
			mustAppend(t, l, b, AppendOptions{})
			mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "a", v: "A"}, kv{k: "c", v: "C"}, kv{k: "e", v: "E"}), AppendOptions{})
			l.Roll()
			mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "z", v: "Z"}), AppendOptions{})
			cleanOnce(t, l, CleanerState{}, CleanConfig{DeleteRetentionMs: 1000})
			hs, got := readAll(t, l)
			h := hs[0]
			if h.Compression() != tc.codec || h.BaseOffset != 0 || h.LastOffsetDelta != 4 || h.RecordCount != 2 {
				t.Fatalf("partly cleaned batch header %+v", h)
			}
			if h.BaseTimestamp != 5_000 || h.MaxTimestamp != 5_030 {
				t.Fatalf("timestamps base %d max %d, want 5000 5030", h.BaseTimestamp, h.MaxTimestamp)
			}
			if got[0].key != "b" || got[0].offset != 1 || got[0].value != strings.Repeat("b", 50) ||
				got[1].key != "d" || got[1].offset != 3 {
				t.Fatalf("records %+v", got[:2])
			}
			if len(got) != 6 {
				t.Fatalf("%d records, want b d A C E Z", len(got))
			}
			// The rewritten batch is valid for a produce too (CRC, count, records).
			res, _ := l.Read(0, 1<<20, 1, true)
			raw := readChunks(t, res)
			one := raw[:batchesOf(t, raw)[0].Size()]
			var d decompressor
			defer d.close()
			if err := validateBatch(one, decodeHeader(one), recordRules{requireKeys: true}, &d); err != nil && !strings.Contains(err.Error(), "lastOffsetDelta") {
				t.Fatalf("rewritten batch invalid: %v", err)
			}
		})
	}
}

func TestCleanTransactionsAndProducers(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	dir := t.TempDir()
	l := mustOpen(t, dir, cleanerOptions(t, clock))
	defer func() { l.Close() }()
	c := CleanConfig{DeleteRetentionMs: 3600_000}
	// 0-1: producer 7's aborted transaction; 2: ABORT marker.
	mustAppend(t, l, kvBatch(t, 0, 7, 0, true, kv{k: "x", v: "aborted0"}, kv{k: "y", v: "aborted1"}), AppendOptions{})
	mustAppend(t, l, markerBatch(t, 7, 0, false), AppendOptions{})
	// 3-4: producer 8's committed transaction; 5: COMMIT.
	mustAppend(t, l, kvBatch(t, 0, 8, 0, true, kv{k: "x", v: "committed3"}, kv{k: "q", v: "committed4"}), AppendOptions{})
	mustAppend(t, l, markerBatch(t, 8, 0, true), AppendOptions{})
	// 6: idempotent producer 9; 7: plain update of its key.
	mustAppend(t, l, kvBatch(t, 0, 9, 0, false, kv{k: "p", v: "idem6"}), AppendOptions{})
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "p", v: "plain7"}, kv{k: "q", v: "plain8"}), AppendOptions{})
	l.Roll()
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "z", v: "z"}), AppendOptions{})
	if got := l.AbortedTxns(0, 100); len(got) != 1 {
		t.Fatalf("aborted %+v", got)
	}
	st := cleanOnce(t, l, CleanerState{}, c)
	hs, recs := readAll(t, l)
	var keys []string
	for _, r := range recs {
		keys = append(keys, fmt.Sprintf("%d:%s=%s", r.offset, r.key, r.value))
	}
	// Aborted data gone (producer 7's batch kept empty: its last batch),
	// ABORT marker kept (data seen this pass), committed x kept, q
	// superseded, producer 9's batch kept empty, its sequence intact.
	want := "2:\x00\x00\x00\x00=\x00\x00\x00\x00\x00\x00 3:x=committed3 5:\x00\x00\x00\x01=\x00\x00\x00\x00\x00\x00 7:p=plain7 8:q=plain8 9:z=z"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("records after the first pass:\n%q\nwant\n%q", got, want)
	}
	var empties int
	for _, h := range hs {
		if h.RecordCount == 0 {
			empties++
			if h.ProducerID != 7 && h.ProducerID != 9 {
				t.Fatalf("empty batch of producer %d", h.ProducerID)
			}
		}
	}
	if empties != 2 {
		t.Fatalf("%d empty batches, want 2 (producers 7 and 9): %+v", empties, hs)
	}
	if got := l.AbortedTxns(0, 100); len(got) != 1 || got[0].LastOffset != 2 {
		t.Fatalf("aborted after the first pass %+v", got)
	}
	// Reopen: producer state from the cleaned log is the same.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"00000000000000000000.snapshot", "00000000000000000010.snapshot"} {
		os.Remove(filepath.Join(dir, p)) // force a replay of the cleaned batches
	}
	l = mustOpen(t, dir, cleanerOptions(t, clock))
	if e := l.Producer(9); e == nil || e.LastSequence() != 0 || e.LastOffset() != 6 {
		t.Fatalf("producer 9 after reopen %+v", e)
	}
	if e := l.Producer(8); e == nil || e.LastSequence() != 1 {
		t.Fatalf("producer 8 after reopen %+v", e)
	}
	// After delete.retention.ms the markers go (no data left for either:
	// x at 3 is superseded below).
	clock.advance(2 * time.Hour)
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "x", v: "plain10"}), AppendOptions{})
	l.Roll()
	st = cleanOnce(t, l, st, c)
	clock.advance(2 * time.Hour)
	mustAppend(t, l, kvBatch(t, 0, -1, 0, false, kv{k: "w", v: "w"}), AppendOptions{})
	l.Roll()
	cleanOnce(t, l, st, c)
	hs, _ = readAll(t, l)
	for _, h := range hs {
		if h.IsControl() {
			t.Fatalf("marker at %d kept after delete.retention.ms", h.BaseOffset)
		}
	}
	if e := l.Producer(8); e == nil {
		t.Fatalf("producer 8 lost")
	}
}

// TestCleanCrashBetweenSwapSteps leaves the files of each step of a swap
// behind, as a crash would, and reopens.
func TestCleanCrashBetweenSwapSteps(t *testing.T) {
	steps := []string{"cleaned", "partial-swap", "swap", "swap-old-retired", "swap-half-renamed"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, cleanerOptions(t, nil))
			latest := fillUpdates(t, l, 120, 60, CompressionNone)
			_, before := readAll(t, l)
			j, err := l.PrepareClean(CleanerState{}, CleanConfig{DeleteRetentionMs: 1000})
			if err != nil || j == nil {
				t.Fatalf("PrepareClean: %v", err)
			}
			if err := j.Run(nil, nil); err != nil {
				t.Fatal(err)
			}
			j.closeSources()
			if len(j.groups) < 2 {
				t.Fatalf("want at least two groups, got %d", len(j.groups))
			}
			l.Close()
			g := j.groups[0]
			ren := func(sfx, from, to string) {
				p := filepath.Join(dir, segmentFileName(g.base, sfx))
				if err := os.Rename(p+from, p+to); err != nil {
					t.Fatal(err)
				}
			}
			complete := false
			switch step {
			case "partial-swap":
				ren(indexSuffix, cleanedSuffix, swapSuffix)
				ren(cleanRangeSuffix, cleanedSuffix, swapSuffix)
			case "swap", "swap-old-retired", "swap-half-renamed":
				complete = true
				for _, sfx := range []string{cleanRangeSuffix, indexSuffix, timeIndexSuffix, logSuffix} {
					ren(sfx, cleanedSuffix, swapSuffix)
				}
				if step != "swap" {
					for _, src := range j.srcs[g.first : g.first+g.n] {
						p := filepath.Join(dir, segmentFileName(src.base, logSuffix))
						if err := os.Rename(p, p+deletedSuffix); err != nil {
							t.Fatal(err)
						}
					}
				}
				if step == "swap-half-renamed" {
					ren(indexSuffix, swapSuffix, "")
				}
			}
			l = mustOpen(t, dir, cleanerOptions(t, nil))
			defer l.Close()
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) || strings.HasSuffix(e.Name(), deletedSuffix) {
					t.Errorf("leftover %s after reopen", e.Name())
				}
			}
			_, after := readAll(t, l)
			if !complete {
				if len(after) != len(before) {
					t.Fatalf("an incomplete swap changed the log: %d records, was %d", len(after), len(before))
				}
				return
			}
			if len(after) >= len(before) {
				t.Fatalf("a complete swap was lost: %d records, was %d", len(after), len(before))
			}
			checkLatestUnique(t, l, latest, false)
			// The first group's replaced segments are gone, the others intact.
			for _, src := range j.srcs[g.first+1 : g.first+g.n] {
				if _, err := os.Stat(filepath.Join(dir, segmentFileName(src.base, logSuffix))); err == nil {
					t.Errorf("replaced segment %d still present", src.base)
				}
			}
		})
	}
}

func TestCleanStaleJobAbandoned(t *testing.T) {
	dir := t.TempDir()
	o := cleanerOptions(t, nil)
	l := mustOpen(t, dir, o)
	defer l.Close()
	fillUpdates(t, l, 60, 5, CompressionNone)
	j, err := l.PrepareClean(CleanerState{}, CleanConfig{})
	if err != nil || j == nil {
		t.Fatal(err)
	}
	if err := j.Run(nil, nil); err != nil {
		t.Fatal(err)
	}
	segs := len(l.segs)
	if err := l.SetLogStartOffset(l.segs[1].base); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitClean(j); !errors.Is(err, ErrCleanStale) {
		t.Fatalf("CommitClean after retention: %v, want ErrCleanStale", err)
	}
	if len(l.segs) != segs-1 {
		t.Fatalf("segments %d, want %d", len(l.segs), segs-1)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), cleanedSuffix) {
			t.Errorf("leftover %s", e.Name())
		}
	}
	readAll(t, l)
}

func TestCleanBoundedMap(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, cleanerOptions(t, nil))
	defer l.Close()
	latest := fillUpdates(t, l, 150, 40, CompressionNone)
	c := CleanConfig{MaxMapEntries: 25}
	var st CleanerState
	for i := 0; ; i++ {
		if i > 40 {
			t.Fatalf("no convergence: %+v", st)
		}
		cl := l.Cleanable(st, c)
		if cl.DirtyBytes == 0 {
			break
		}
		st = cleanOnce(t, l, st, c)
	}
	checkLatest(t, l, latest)
}

func TestCleanableRatioAndLags(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	dir := t.TempDir()
	l := mustOpen(t, dir, cleanerOptions(t, clock))
	defer l.Close()
	fillUpdates(t, l, 40, 10, CompressionNone) // timestamps 1_000_000 ms: far in the past
	st := cleanOnce(t, l, CleanerState{}, CleanConfig{})
	fillUpdates(t, l, 1, 10, CompressionNone)
	l.Roll()
	fillUpdates(t, l, 1, 10, CompressionNone)
	c := CleanConfig{MinCleanableRatio: 0.9}
	if cl := l.Cleanable(st, c); cl.Needed || cl.Forced || cl.DirtyBytes == 0 || cl.Ratio >= 0.9 {
		t.Fatalf("small dirty part: %+v", cl)
	}
	c.MaxCompactionLagMs = 1000
	if cl := l.Cleanable(st, c); !cl.Needed || !cl.Forced {
		t.Fatalf("max.compaction.lag.ms exceeded: %+v", cl)
	}
	c = CleanConfig{MinCompactionLagMs: int64(clock.t.UnixMilli()) - 500_000}
	if cl := l.Cleanable(st, c); cl.DirtyBytes != 0 {
		t.Fatalf("min.compaction.lag.ms not passed: %+v", cl)
	}
}

func TestTokenBucket(t *testing.T) {
	if NewTokenBucket(0) != nil {
		t.Fatal("a zero rate must mean no limit")
	}
	b := NewTokenBucket(100_000)
	start := time.Now()
	if err := b.Wait(150_000, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("Wait of 1.5 s of budget (1 s in the bucket) took %v", d)
	}
	stop := make(chan struct{})
	close(stop)
	if err := b.Wait(1_000_000, stop); !errors.Is(err, ErrCleanStopped) {
		t.Fatalf("Wait after stop: %v", err)
	}
}

func TestCleanStoppedRemovesFiles(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, cleanerOptions(t, nil))
	defer l.Close()
	fillUpdates(t, l, 60, 5, CompressionNone)
	j, err := l.PrepareClean(CleanerState{}, CleanConfig{})
	if err != nil || j == nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := j.Run(stop, NewTokenBucket(1000)); !errors.Is(err, ErrCleanStopped) {
		t.Fatalf("Run: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), cleanedSuffix) {
			t.Errorf("leftover %s", e.Name())
		}
	}
}
