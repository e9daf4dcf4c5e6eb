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
	})
}

func TestSeqAddWraps(t *testing.T) {
	if seqAdd(math.MaxInt32, 1) != 0 || seqAdd(math.MaxInt32-1, 3) != 1 || seqAdd(5, 2) != 7 {
		t.Fatal("seqAdd")
	}
}
