package nvme

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// txnBatch is a transactional batch of n records of producer pid/epoch
// starting at sequence seq.
func txnBatch(t testing.TB, n int, pid int64, epoch int16, seq int32) []byte {
	b := idemBatch(t, n, pid, epoch, seq)
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|AttrTransactional)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// markerBatch is a COMMIT or ABORT control batch of producer pid/epoch.
func markerBatch(t testing.TB, pid int64, epoch int16, commit bool) []byte {
	key := []byte{0, 0, 0, 0}
	if commit {
		key[3] = 1
	}
	b := buildBatch(t, batchSpec{baseTs: 1_000_000, control: true}, []testRecord{{key: key, value: []byte{0, 0, 0, 0, 0, 0}}})
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|AttrTransactional)
	be.PutUint64(b[offProducerID:], uint64(pid))
	be.PutUint16(b[offProducerEpoch:], uint16(epoch))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestLastStableOffsetAndTxnIndex(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOptions(t))
	mustAppend(t, l, simpleBatch(t, 2, 10, 1_000_000), AppendOptions{}) // 0-1 plain
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO without transactions %d, want 2", lso)
	}
	mustAppend(t, l, txnBatch(t, 3, 7, 0, 0), AppendOptions{}) // 2-4 producer 7
	mustAppend(t, l, txnBatch(t, 2, 8, 0, 0), AppendOptions{}) // 5-6 producer 8
	mustAppend(t, l, txnBatch(t, 1, 7, 0, 3), AppendOptions{}) // 7 producer 7
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO with two open transactions %d, want 2", lso)
	}
	mustAppend(t, l, markerBatch(t, 7, 0, false), AppendOptions{}) // 8 ABORT 7
	if lso := l.LastStableOffset(); lso != 5 {
		t.Fatalf("LSO after aborting producer 7: %d, want 5", lso)
	}
	mustAppend(t, l, markerBatch(t, 8, 0, true), AppendOptions{}) // 9 COMMIT 8
	if lso := l.LastStableOffset(); lso != 10 {
		t.Fatalf("LSO after committing producer 8: %d, want 10", lso)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 8, LastStableOffset: 5}}
	if got := l.AbortedTxns(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedTxns %+v, want %+v", got, want)
	}
	if got := l.AbortedTxns(9, 10); len(got) != 0 {
		t.Fatalf("AbortedTxns past the marker: %+v", got)
	}
	if got := l.AbortedTxns(0, 2); len(got) != 0 {
		t.Fatalf("AbortedTxns before the first offset: %+v", got)
	}
	// An abort of a producer with nothing on the partition adds no entry.
	mustAppend(t, l, markerBatch(t, 9, 0, false), AppendOptions{})
	if got := l.AbortedTxns(0, 100); len(got) != 1 {
		t.Fatalf("AbortedTxns %+v", got)
	}
	path := filepath.Join(dir, segmentFileName(0, txnIndexSuffix))
	raw, err := os.ReadFile(path)
	if err != nil || len(raw) != txnEntrySize {
		t.Fatalf("txnindex file: %d bytes, %v", len(raw), err)
	}
	if ents, err := ParseTxnIndex(raw); err != nil || !reflect.DeepEqual(ents, want) {
		t.Fatalf("ParseTxnIndex %+v %v", ents, err)
	}
	// An open transaction survives a clean close and reopen.
	mustAppend(t, l, txnBatch(t, 2, 8, 0, 2), AppendOptions{}) // 11-12
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, testOptions(t))
	if lso := l.LastStableOffset(); lso != 11 {
		t.Fatalf("LSO after reopen %d, want 11", lso)
	}
	if got := l.AbortedTxns(0, 100); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedTxns after reopen %+v", got)
	}
	l.Close()
}

// TestTxnIndexRecovered: a lost .txnindex (a crash between the marker
// append and the index write) is rebuilt from the log at open, and entries
// past a truncated tail are dropped.
func TestTxnIndexRecovered(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOptions(t))
	mustAppend(t, l, txnBatch(t, 3, 7, 0, 0), AppendOptions{})     // 0-2
	mustAppend(t, l, markerBatch(t, 7, 0, false), AppendOptions{}) // 3
	mustAppend(t, l, txnBatch(t, 2, 7, 0, 3), AppendOptions{})     // 4-5
	mustAppend(t, l, markerBatch(t, 7, 0, false), AppendOptions{}) // 6
	mustAppend(t, l, txnBatch(t, 1, 9, 0, 0), AppendOptions{})     // 7
	want := []AbortedTxn{{7, 0, 3, 4}, {7, 4, 6, 7}}
	if got := l.AbortedTxns(0, 100); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedTxns %+v, want %+v", got, want)
	}
	l.Close()
	for _, name := range []string{segmentFileName(0, txnIndexSuffix), segmentFileName(0, snapshotSuffix), segmentFileName(8, snapshotSuffix)} {
		os.Remove(filepath.Join(dir, name))
	}
	l = mustOpen(t, dir, testOptions(t))
	if got := l.AbortedTxns(0, 100); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedTxns rebuilt %+v, want %+v", got, want)
	}
	if lso := l.LastStableOffset(); lso != 7 {
		t.Fatalf("LSO rebuilt %d, want 7", lso)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, segmentFileName(0, txnIndexSuffix)))
	if ents, _ := ParseTxnIndex(raw); !reflect.DeepEqual(ents, want) {
		t.Fatalf("rewritten txnindex %+v", ents)
	}
	l.Close()
}

func TestControlType(t *testing.T) {
	for _, commit := range []bool{false, true} {
		b := markerBatch(t, 1, 0, commit)
		typ, ok := ControlType(b[BatchHeaderSize:])
		if !ok || (typ == ControlCommit) != commit {
			t.Fatalf("ControlType commit=%v: %d %v", commit, typ, ok)
		}
	}
	if _, ok := ControlType([]byte{2}); ok {
		t.Fatal("ControlType of a truncated record")
	}
}

func FuzzParseTxnIndex(f *testing.F) {
	f.Add(AppendTxnEntry(nil, AbortedTxn{1, 2, 3, 4}))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		ents, err := ParseTxnIndex(b)
		if err != nil {
			return
		}
		var re []byte
		for _, e := range ents {
			re = AppendTxnEntry(re, e)
		}
		if len(re) != len(b)/txnEntrySize*txnEntrySize {
			t.Fatalf("re-encoded %d bytes from %d", len(re), len(b))
		}
	})
}

// TestTxnIndexSyncedBeforeSnapshot checks that an aborted transaction's
// .txnindex entry is fsynced before the producer snapshot that replay at
// open will start from is written: after a power loss the entry could not
// be rebuilt from the log below that snapshot.
func TestTxnIndexSyncedBeforeSnapshot(t *testing.T) {
	var synced []string
	old := syncTxnFile
	syncTxnFile = func(path string) error {
		synced = append(synced, path)
		return old(path)
	}
	t.Cleanup(func() { syncTxnFile = old })

	dir := t.TempDir()
	l := mustOpen(t, dir, testOptions(t))
	mustAppend(t, l, txnBatch(t, 3, 7, 0, 0), AppendOptions{})     // 0-2 producer 7
	mustAppend(t, l, markerBatch(t, 7, 0, false), AppendOptions{}) // 3 ABORT 7
	idx := filepath.Join(dir, segmentFileName(0, txnIndexSuffix))
	if len(synced) != 0 {
		t.Fatalf("synced %v before any snapshot; want the sync deferred to the snapshot", synced)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != idx {
		t.Fatalf("synced %v at roll, want [%s]", synced, idx)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentFileName(4, snapshotSuffix))); err != nil {
		t.Fatalf("no producer snapshot at the roll: %v", err)
	}
	// A second snapshot with nothing new written syncs nothing again.
	mustAppend(t, l, simpleBatch(t, 1, 10, 1_000_000), AppendOptions{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 {
		t.Fatalf("synced %v after close, want only the first sync", synced)
	}
}
