package quorum

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

func ent(index, term uint64, data string) *raftpb.Entry {
	e := &raftpb.Entry{Index: new(index), Term: new(term), Type: raftpb.EntryNormal.Enum()}
	if data != "" {
		e.Data = []byte(data)
	}
	return e
}

func hardState(term, vote, commit uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
}

// describe renders s's state for comparisons.
func describe(t *testing.T, s Storage) string {
	t.Helper()
	hs, cs, err := s.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	snap, _ := s.Snapshot()
	out := fmt.Sprintf("hs=%d/%d/%d voters=%v snap=%d/%d:%q first=%d last=%d",
		hs.GetTerm(), hs.GetVote(), hs.GetCommit(), cs.GetVoters(),
		snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm(), snap.GetData(), first, last)
	if last >= first {
		ents, err := s.Entries(first, last+1, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			out += fmt.Sprintf(" %d/%d:%q", e.GetIndex(), e.GetTerm(), e.GetData())
		}
	}
	return out
}

func openDisk(t *testing.T, dir string) *DiskStorage {
	t.Helper()
	s, err := OpenDiskStorage(dir, discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDiskStorageRoundTripAndReopen(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	if got, want := describe(t, s), `hs=0/0/0 voters=[] snap=0/0:"" first=1 last=0`; got != want {
		t.Fatalf("empty storage: %s, want %s", got, want)
	}
	if err := s.Append(hardState(1, 2, 0), []*raftpb.Entry{ent(1, 1, "a"), ent(2, 1, "b")}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(hardState(1, 2, 2), []*raftpb.Entry{ent(3, 1, "c")}, true); err != nil {
		t.Fatal(err)
	}
	want := `hs=1/2/2 voters=[] snap=0/0:"" first=1 last=3 1/1:"a" 2/1:"b" 3/1:"c"`
	if got := describe(t, s); got != want {
		t.Fatalf("after appends: %s, want %s", got, want)
	}
	if term, err := s.Term(2); err != nil || term != 1 {
		t.Fatalf("Term(2) = %d, %v", term, err)
	}
	if _, err := s.Term(4); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Term(4): %v", err)
	}
	if ents, err := s.Entries(1, 4, 1); err != nil || len(ents) != 1 {
		t.Fatalf("Entries with maxSize 1: %d, %v; want one entry", len(ents), err)
	}
	s.Close()
	if got := describe(t, openDisk(t, dir)); got != want {
		t.Fatalf("reopened: %s, want %s", got, want)
	}
}

func TestDiskStorageConflictingTail(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	if err := s.Append(hardState(1, 1, 1), []*raftpb.Entry{ent(1, 1, "a"), ent(2, 1, "b"), ent(3, 1, "c")}, true); err != nil {
		t.Fatal(err)
	}
	// A new leader in term 2 replaces 2 and 3.
	if err := s.Append(hardState(2, 0, 1), []*raftpb.Entry{ent(2, 2, "B")}, true); err != nil {
		t.Fatal(err)
	}
	want := `hs=2/0/1 voters=[] snap=0/0:"" first=1 last=2 1/1:"a" 2/2:"B"`
	if got := describe(t, s); got != want {
		t.Fatalf("after the conflict: %s, want %s", got, want)
	}
	if err := s.Append(nil, []*raftpb.Entry{ent(5, 2, "gap")}, true); err == nil {
		t.Fatal("an append that leaves a gap succeeded")
	}
	s.Close()
	if got := describe(t, openDisk(t, dir)); got != want {
		t.Fatalf("reopened: %s, want %s", got, want)
	}
}

func TestDiskStorageSnapshots(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	var ents []*raftpb.Entry
	for i := uint64(1); i <= 6; i++ {
		ents = append(ents, ent(i, 1, fmt.Sprint(i)))
	}
	if err := s.Append(hardState(1, 1, 5), ents, true); err != nil {
		t.Fatal(err)
	}
	cs := &raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	if err := s.CreateSnapshot(4, cs, []byte("image@4")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSnapshot(3, cs, nil); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("an older snapshot: %v", err)
	}
	want := `hs=1/1/5 voters=[1 2 3] snap=4/1:"image@4" first=5 last=6 5/1:"5" 6/1:"6"`
	if got := describe(t, s); got != want {
		t.Fatalf("after CreateSnapshot: %s, want %s", got, want)
	}
	if _, err := s.Entries(4, 6, 1<<20); !errors.Is(err, raft.ErrCompacted) {
		t.Fatalf("compacted entries: %v", err)
	}
	s.Close()
	s = openDisk(t, dir)
	if got := describe(t, s); got != want {
		t.Fatalf("reopened: %s, want %s", got, want)
	}
	// A leader's snapshot at 10 (term 3) whose index the log lacks
	// replaces the whole log.
	snap := &raftpb.Snapshot{Data: []byte("image@10"), Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(10)), Term: new(uint64(3)), ConfState: cs}}
	if err := s.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	want = `hs=1/1/10 voters=[1 2 3] snap=10/3:"image@10" first=11 last=10`
	if got := describe(t, s); got != want {
		t.Fatalf("after ApplySnapshot: %s, want %s", got, want)
	}
	if err := s.Append(hardState(3, 2, 11), []*raftpb.Entry{ent(11, 3, "k")}, true); err != nil {
		t.Fatal(err)
	}
	s.Close()
	want = `hs=3/2/11 voters=[1 2 3] snap=10/3:"image@10" first=11 last=11 11/3:"k"`
	if got := describe(t, openDisk(t, dir)); got != want {
		t.Fatalf("reopened: %s, want %s", got, want)
	}
}

// TestDiskStorageSnapshotThenCrashBeforeRewrite: a snapshot file newer
// than the log (a crash between the two writes) wins over the log's
// entries it does not continue.
func TestDiskStorageSnapshotThenCrashBeforeRewrite(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	if err := s.Append(hardState(1, 1, 2), []*raftpb.Entry{ent(1, 1, "a"), ent(2, 1, "b"), ent(3, 1, "c")}, true); err != nil {
		t.Fatal(err)
	}
	oldLog, err := os.ReadFile(filepath.Join(dir, logFileName))
	if err != nil {
		t.Fatal(err)
	}
	snap := &raftpb.Snapshot{Data: []byte("s"), Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(2)), Term: new(uint64(2)), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	if err := s.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, logFileName), oldLog, 0o644); err != nil {
		t.Fatal(err)
	}
	want := `hs=1/1/2 voters=[1] snap=2/2:"s" first=3 last=2`
	if got := describe(t, openDisk(t, dir)); got != want {
		t.Fatalf("reopened: %s, want %s", got, want)
	}
}

// TestDiskStorageTornTail cuts the log file at every byte of its last
// write and reopens: the storage holds exactly what the earlier writes
// made, the file is cut back, and a new append after it reads back.
func TestDiskStorageTornTail(t *testing.T) {
	src := t.TempDir()
	s := openDisk(t, src)
	if err := s.Append(hardState(1, 1, 1), []*raftpb.Entry{ent(1, 1, "a"), ent(2, 1, "bb")}, true); err != nil {
		t.Fatal(err)
	}
	before := describe(t, s)
	sizeBefore := s.size
	if err := s.Append(hardState(1, 1, 3), []*raftpb.Entry{ent(3, 1, "ccc"), ent(4, 1, "dddd")}, true); err != nil {
		t.Fatal(err)
	}
	full := describe(t, s)
	s.Close()
	raw, err := os.ReadFile(filepath.Join(src, logFileName))
	if err != nil {
		t.Fatal(err)
	}
	for cut := int(sizeBefore); cut <= len(raw); cut++ {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, logFileName), raw[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		s := openDisk(t, dir)
		got := describe(t, s)
		switch {
		case cut == len(raw):
			if got != full {
				t.Fatalf("whole file: %s, want %s", got, full)
			}
		case cut < len(raw):
			// Whole records of the last write may survive (3 alone), but
			// the hard state that commits them comes last.
			if got != before && got != `hs=1/1/1 voters=[] snap=0/0:"" first=1 last=3 1/1:"a" 2/1:"bb" 3/1:"ccc"` &&
				got != `hs=1/1/1 voters=[] snap=0/0:"" first=1 last=4 1/1:"a" 2/1:"bb" 3/1:"ccc" 4/1:"dddd"` {
				t.Fatalf("cut at %d of %d: %s", cut, len(raw), got)
			}
		}
		if err := s.Append(nil, []*raftpb.Entry{ent(3, 2, "new")}, true); err != nil {
			t.Fatal(err)
		}
		s.Close()
		got = describe(t, openDisk(t, dir))
		if want := `hs=1/1/1 voters=[] snap=0/0:"" first=1 last=3 1/1:"a" 2/1:"bb" 3/2:"new"`; cut < len(raw) && got != want {
			t.Fatalf("cut at %d, appended and reopened: %s, want %s", cut, got, want)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	var b []byte
	b = appendEntryRecord(b, ent(7, 3, "payload"))
	b = appendHardStateRecord(b, hardState(3, 2, 7))
	b = appendEntryRecord(b, &raftpb.Entry{Index: new(uint64(8)), Term: new(uint64(3)), Type: raftpb.EntryConfChangeV2.Enum()})
	rec, n, err := decodeRecord(b)
	if err != nil || rec.entry == nil || rec.entry.GetIndex() != 7 || rec.entry.GetTerm() != 3 || string(rec.entry.GetData()) != "payload" {
		t.Fatalf("entry record: %v %v", rec, err)
	}
	b = b[n:]
	rec, n, err = decodeRecord(b)
	if err != nil || rec.hs == nil || rec.hs.GetTerm() != 3 || rec.hs.GetVote() != 2 || rec.hs.GetCommit() != 7 {
		t.Fatalf("hard state record: %v %v", rec, err)
	}
	b = b[n:]
	rec, n, err = decodeRecord(b)
	if err != nil || rec.entry.GetType() != raftpb.EntryConfChangeV2 || n != len(b) {
		t.Fatalf("conf change record: %v %v", rec, err)
	}
	bad := bytes.Clone(b)
	bad[len(bad)-1] ^= 1
	if _, _, err := decodeRecord(bad); !errors.Is(err, errBadRecord) {
		t.Fatalf("flipped bit: %v", err)
	}
	if _, _, err := decodeRecord(b[:len(b)-1]); !errors.Is(err, errShortRecord) {
		t.Fatalf("short: %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendEntryRecord(nil, ent(1, 1, "x")), false)
	f.Add(appendHardStateRecord(nil, hardState(1, 2, 3)), false)
	f.Add(appendEntryRecord(appendEntryRecord(nil, ent(1, 1, "")), ent(2, 1, "yy")), false)
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 9}, true)
	f.Add([]byte{0, 0, 0, 18, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 7}, true)
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC && len(b) >= recordHeader {
			// Past the CRC, so that the fuzzer reaches the bodies.
			b = bytes.Clone(b)
			end := min(len(b), recordHeader+int(binary.BigEndian.Uint32(b)&0xffff))
			binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[recordHeader:end], castagnoli))
		}
		rec, n, err := decodeRecord(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("size %d of %d bytes", n, len(b))
		}
		// A decoded record encodes back to the same bytes.
		var again []byte
		if rec.entry != nil {
			again = appendEntryRecord(nil, rec.entry)
		} else {
			again = appendHardStateRecord(nil, rec.hs)
		}
		if !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoded %x, decoded from %x", again, b[:n])
		}
	})
}
