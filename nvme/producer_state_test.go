package nvme

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// idemBatch is simpleBatch stamped with a producer id, epoch and base sequence.
func idemBatch(t testing.TB, n int, pid int64, epoch int16, seq int32) []byte {
	b := simpleBatch(t, n, 10, 1_000_000)
	be := binary.BigEndian
	be.PutUint64(b[offProducerID:], uint64(pid))
	be.PutUint16(b[offProducerEpoch:], uint16(epoch))
	be.PutUint32(b[offBaseSequence:], uint32(seq))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestIdempotentAppend(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOptions(t))
	first := mustAppend(t, l, idemBatch(t, 3, 7, 0, 0), AppendOptions{})
	second := mustAppend(t, l, idemBatch(t, 2, 7, 0, 3), AppendOptions{})
	if first.FirstOffset != 0 || second.FirstOffset != 3 || second.LastOffset != 4 {
		t.Fatalf("offsets %+v %+v", first, second)
	}
	// A retry of the first batch is answered with its original offsets.
	dup := mustAppend(t, l, idemBatch(t, 3, 7, 0, 0), AppendOptions{})
	if !dup.Duplicate || dup.FirstOffset != 0 || dup.LastOffset != 2 || l.LogEndOffset() != 5 {
		t.Fatalf("duplicate: %+v, LEO %d", dup, l.LogEndOffset())
	}
	// A gap, a stale epoch and a new epoch not starting at 0 are refused.
	for _, c := range []struct {
		b    []byte
		want error
	}{
		{idemBatch(t, 1, 7, 0, 9), ErrOutOfOrderSequence},
		{idemBatch(t, 1, 7, 1, 4), ErrOutOfOrderSequence},
	} {
		if _, err := l.Append(c.b, AppendOptions{}); !errors.Is(err, c.want) {
			t.Fatalf("got %v, want %v", err, c.want)
		}
	}
	mustAppend(t, l, idemBatch(t, 1, 7, 1, 0), AppendOptions{}) // epoch bump at 0
	if _, err := l.Append(idemBatch(t, 1, 7, 0, 5), AppendOptions{}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	// An unknown producer may start anywhere (KIP-360).
	mustAppend(t, l, idemBatch(t, 1, 8, 0, 42), AppendOptions{})
	// Two batches of one idempotent producer in one append are refused.
	two := append(idemBatch(t, 1, 9, 0, 0), idemBatch(t, 1, 9, 0, 1)...)
	if _, err := l.Append(two, AppendOptions{}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("two batches: %v", err)
	}
	if l.LogEndOffset() != 7 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}

	// After a clean close the snapshot restores the state.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentFileName(7, snapshotSuffix))); err != nil {
		t.Fatalf("no snapshot at close: %v", err)
	}
	l = mustOpen(t, dir, testOptions(t))
	if e := l.Producer(7); e == nil || e.Epoch != 1 || e.LastSequence() != 0 {
		t.Fatalf("producer 7 after reopen: %+v", e)
	}
	if _, err := l.Append(idemBatch(t, 1, 7, 1, 5), AppendOptions{}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after reopen: %v", err)
	}
	dup = mustAppend(t, l, idemBatch(t, 1, 7, 1, 0), AppendOptions{})
	if !dup.Duplicate || dup.FirstOffset != 5 {
		t.Fatalf("duplicate after reopen: %+v", dup)
	}
	mustAppend(t, l, idemBatch(t, 2, 7, 1, 1), AppendOptions{})
	l.Close()

	// Without any snapshot (a crash) the state is rebuilt from the log.
	for _, off := range []int64{7, 9} {
		_ = os.Remove(filepath.Join(dir, segmentFileName(off, snapshotSuffix)))
	}
	l = mustOpen(t, dir, testOptions(t))
	defer l.Close()
	if e := l.Producer(7); e == nil || e.Epoch != 1 || e.LastSequence() != 2 || e.LastOffset() != 8 {
		t.Fatalf("producer 7 rebuilt: %+v", e)
	}
	if e := l.Producer(8); e == nil || e.LastSequence() != 42 {
		t.Fatalf("producer 8 rebuilt: %+v", e)
	}
	dup = mustAppend(t, l, idemBatch(t, 2, 7, 1, 1), AppendOptions{})
	if !dup.Duplicate || dup.FirstOffset != 7 {
		t.Fatalf("duplicate after rebuild: %+v", dup)
	}
}

// TestRetriesAfterRestart: a producer's last maxProducerBatches batches
// are answered as duplicates (with their original offsets) after a clean
// close and reopen, as before it, and as after a crash (no snapshot at the
// log end): a request appended but unanswered when the broker stopped is
// retried after the restart (found by the fresh-user test: after SIGTERM
// only the last batch was known, the others got OUT_OF_ORDER_SEQUENCE_NUMBER
// and franz-go bumped its epoch and stored them again).
func TestRetriesAfterRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "clean close"
		if crash {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, testOptions(t))
			mustAppend(t, l, idemBatch(t, 1, 3, 0, 0), AppendOptions{}) // another producer
			var firsts []int64
			for i := range 6 {
				r := mustAppend(t, l, idemBatch(t, 10, 7, 0, int32(10*i)), AppendOptions{})
				firsts = append(firsts, r.FirstOffset)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if crash {
				_ = os.Remove(filepath.Join(dir, segmentFileName(61, snapshotSuffix)))
				_ = os.Remove(filepath.Join(dir, CleanShutdownFile))
			}
			l = mustOpen(t, dir, testOptions(t))
			defer l.Close()
			for i := 1; i < 6; i++ {
				r, err := l.Append(idemBatch(t, 10, 7, 0, int32(10*i)), AppendOptions{})
				if err != nil || !r.Duplicate || r.FirstOffset != firsts[i] || r.LastOffset != firsts[i]+9 {
					t.Fatalf("retry of batch %d (sequence %d): %+v, %v; want a duplicate at %d", i, 10*i, r, err, firsts[i])
				}
			}
			// The oldest is past what a producer keeps in flight.
			if _, err := l.Append(idemBatch(t, 10, 7, 0, 0), AppendOptions{}); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("retry of the sixth-newest batch: %v, want out of order", err)
			}
			if e := l.Producer(3); e == nil || e.LastSequence() != 0 || e.LastOffset() != 0 {
				t.Fatalf("producer 3: %+v", e)
			}
			if l.LogEndOffset() != 61 {
				t.Fatalf("log end offset %d after the retries, want 61", l.LogEndOffset())
			}
			mustAppend(t, l, idemBatch(t, 1, 7, 0, 60), AppendOptions{})
		})
	}
}

// TestProducerSnapshotKeepsBatches: a producer with several retained
// batches is written as one entry per batch, oldest first, so a reader
// keeping the last entry per producer id (Kafka's) sees its last batch,
// and ParseProducerSnapshot gathers them all again.
func TestProducerSnapshotKeepsBatches(t *testing.T) {
	e := &ProducerEntry{ProducerID: 4, Epoch: 2, LastTimestamp: 500, CoordinatorEpoch: 1, CurrentTxnFirstOffset: -1}
	for i := range int64(3) {
		e.batches = append(e.batches, producerBatch{firstSeq: int32(5 * i), lastSeq: int32(5*i + 4), firstOffset: 100 + 10*i, lastOffset: 104 + 10*i, maxTs: 400 + i})
	}
	other := &ProducerEntry{ProducerID: 9, Epoch: 0, LastTimestamp: -1, CurrentTxnFirstOffset: -1}
	b := AppendProducerSnapshot(nil, []*ProducerEntry{e, other})
	be := binary.BigEndian
	if n := be.Uint32(b[6:]); n != 4 || len(b) != 10+4*snapshotEntrySize {
		t.Fatalf("%d entries in %d bytes, want 4", n, len(b))
	}
	lastWins := map[int64][2]int64{} // producer id: last sequence, last offset
	for p := b[10:]; len(p) > 0; p = p[snapshotEntrySize:] {
		lastWins[int64(be.Uint64(p))] = [2]int64{int64(int32(be.Uint32(p[10:]))), int64(be.Uint64(p[14:]))}
	}
	if lastWins[4] != [2]int64{14, 124} || lastWins[9] != [2]int64{-1, -1} {
		t.Fatalf("last entry per producer: %v", lastWins)
	}
	out, err := ParseProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].ProducerID != 4 || out[1].ProducerID != 9 || len(out[1].batches) != 0 {
		t.Fatalf("parsed %+v", out)
	}
	got := out[0]
	if got.Epoch != 2 || got.LastTimestamp != 500 || got.CoordinatorEpoch != 1 || len(got.batches) != 3 {
		t.Fatalf("producer 4: %+v", got)
	}
	for i, pb := range got.batches {
		want := e.batches[i]
		if i == 2 {
			want.maxTs = 500 // the last entry carries the producer's timestamp
		}
		if pb != want {
			t.Fatalf("batch %d: %+v, want %+v", i, pb, want)
		}
	}
	// A later entry of another epoch, or one not past the batches
	// gathered, replaces them, as the last entry would for Kafka.
	bumped := *got
	bumped.Epoch, bumped.batches = 3, []producerBatch{{firstSeq: 0, lastSeq: 0, firstOffset: 130, lastOffset: 130, maxTs: 501}}
	again, err := ParseProducerSnapshot(append(b[:len(b):len(b)], AppendProducerSnapshot(nil, []*ProducerEntry{&bumped})[10:]...))
	if err == nil {
		t.Fatal("a snapshot with a wrong count and crc parsed")
	}
	raw := AppendProducerSnapshot(nil, []*ProducerEntry{got, &bumped})
	again, err = ParseProducerSnapshot(raw)
	if err != nil || len(again) != 1 || again[0].Epoch != 3 || len(again[0].batches) != 1 || again[0].LastOffset() != 130 {
		t.Fatalf("epoch bump: %+v, %v", again, err)
	}
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	in := []*ProducerEntry{
		{ProducerID: 1, Epoch: 3, LastTimestamp: 99, CoordinatorEpoch: 2, CurrentTxnFirstOffset: -1,
			batches: []producerBatch{{firstSeq: math.MaxInt32 - 1, lastSeq: 1, firstOffset: 10, lastOffset: 13, maxTs: 99}}},
		{ProducerID: 2, Epoch: 0, LastTimestamp: -1, CurrentTxnFirstOffset: 40},
	}
	b := AppendProducerSnapshot(nil, in)
	out, err := ParseProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].LastSequence() != 1 || out[0].batches[0].firstSeq != math.MaxInt32-1 || out[0].LastOffset() != 13 ||
		out[1].CurrentTxnFirstOffset != 40 || out[1].LastSequence() != -1 || out[0].CoordinatorEpoch != 2 {
		t.Fatalf("round trip: %+v %+v", out[0], out[1])
	}
	b[len(b)-1] ^= 1
	if _, err := ParseProducerSnapshot(b); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("corrupt snapshot: %v", err)
	}
}

func FuzzParseProducerSnapshot(f *testing.F) {
	f.Add(AppendProducerSnapshot(nil, []*ProducerEntry{{ProducerID: 5, CurrentTxnFirstOffset: -1}}))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := ParseProducerSnapshot(b)
		if err != nil {
			return
		}
		again, err := ParseProducerSnapshot(AppendProducerSnapshot(nil, entries))
		if err != nil || len(again) != len(entries) {
			t.Fatalf("re-encode: %v", err)
		}
		for i, e := range entries {
			a := again[i]
			if a.ProducerID != e.ProducerID || a.Epoch != e.Epoch || len(a.batches) != len(e.batches) ||
				a.LastSequence() != e.LastSequence() || a.LastOffset() != e.LastOffset() || len(e.batches) > maxProducerBatches {
				t.Fatalf("entry %d re-encoded as %+v, was %+v", i, a, e)
			}
		}
	})
}

func TestSeqAddWraps(t *testing.T) {
	if seqAdd(math.MaxInt32, 1) != 0 || seqAdd(math.MaxInt32-1, 3) != 1 || seqAdd(5, 2) != 7 {
		t.Fatal("seqAdd")
	}
}
