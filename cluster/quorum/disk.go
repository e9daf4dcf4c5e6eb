package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// File names inside a DiskStorage directory.
const (
	logFileName      = "raft.log"
	snapshotFileName = "raft.snapshot"
	tmpSuffix        = ".tmp"
)

// DiskStorage is a Storage in a directory (the quorum's
// __cluster_metadata-0 under log.dirs, once wired): a log file of
// checksummed entry and hard-state records (the format is drawn at
// appendEntryRecord), appended and fsynced, and a snapshot file
// (crc32c u32 BE, then the raftpb.Snapshot's protobuf bytes) replaced
// atomically (a temporary file, fsync, rename, directory fsync).
//
// The log file is only ever appended to between snapshots: an entry
// record at index i replaces, on replay, every entry at and after i (a
// conflicting tail is truncated logically), and the last hard-state
// record wins. A snapshot (taken or received) rewrites the log file,
// atomically, with the entries after it and the hard state. Opening
// replays the file into memory (entries are kept in memory: the
// metadata log between two snapshots is small) and cuts a torn tail
// (a record cut short or failing its CRC, as a crash mid-write leaves)
// off the file, so that no garbage is ever read back.
//
// Its methods are safe for concurrent use (one mutex), though a Node
// calls them from its loop only.
type DiskStorage struct {
	dir    string
	logger *slog.Logger

	mu   sync.Mutex
	f    *os.File
	size int64
	// broken is the write error after which nothing more is written.
	broken error
	hs     *raftpb.HardState
	snap   *raftpb.Snapshot
	// ents[0] is a dummy entry at the snapshot's index and term;
	// ents[i] has index snapIndex+i.
	ents []*raftpb.Entry
	buf  []byte
}

// OpenDiskStorage opens (creating) the storage in dir, replaying its
// log and cutting a torn tail. logger nil: slog.Default().
func OpenDiskStorage(dir string, logger *slog.Logger) (*DiskStorage, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the quorum directory %q: %w", dir, err)
	}
	s := &DiskStorage{dir: dir, logger: logger, hs: &raftpb.HardState{}}
	for _, name := range []string{logFileName, snapshotFileName} {
		if err := os.Remove(filepath.Join(dir, name+tmpSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("cannot remove a leftover temporary file in %q: %w", dir, err)
		}
	}
	snap, err := readSnapshotFile(filepath.Join(dir, snapshotFileName))
	if err != nil {
		return nil, err
	}
	s.snap = snap
	if err := s.replay(); err != nil {
		if s.f != nil {
			s.f.Close()
		}
		return nil, err
	}
	return s, nil
}

func (s *DiskStorage) snapIndex() uint64 { return s.snap.GetMetadata().GetIndex() }
func (s *DiskStorage) snapTerm() uint64  { return s.snap.GetMetadata().GetTerm() }
func (s *DiskStorage) lastIndex() uint64 { return s.snapIndex() + uint64(len(s.ents)) - 1 }

// replay reads the log file into memory and cuts its torn tail.
func (s *DiskStorage) replay() error {
	path := filepath.Join(s.dir, logFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open the quorum log %q: %w", path, err)
	}
	s.f = f
	raw, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("cannot read the quorum log %q: %w", path, err)
	}
	var log []*raftpb.Entry // contiguous, as replayed
	off := 0
	for off < len(raw) {
		rec, n, err := decodeRecord(raw[off:])
		if err != nil {
			s.logger.Warn("quorum log has a torn tail: cut", "path", path, "offset", off, "dropped_bytes", len(raw)-off, "err", err)
			if err := f.Truncate(int64(off)); err != nil {
				return fmt.Errorf("cannot cut the torn tail of %q at %d: %w", path, off, err)
			}
			if err := f.Sync(); err != nil {
				return fmt.Errorf("cannot sync %q: %w", path, err)
			}
			break
		}
		off += n
		if rec.hs != nil {
			s.hs = rec.hs
			continue
		}
		e := rec.entry
		if len(log) > 0 {
			first := log[0].GetIndex()
			switch {
			case e.GetIndex() < first:
				log = log[:0]
			case e.GetIndex() > first+uint64(len(log)):
				return fmt.Errorf("cannot replay the quorum log %q: entry %d after %d leaves a gap", path, e.GetIndex(), first+uint64(len(log))-1)
			default:
				log = log[:e.GetIndex()-first]
			}
		}
		log = append(log, e)
	}
	s.size = int64(off)
	// Keep the entries after the snapshot when they continue it.
	s.ents = []*raftpb.Entry{{Index: new(s.snapIndex()), Term: new(s.snapTerm())}}
	if len(log) > 0 {
		first := log[0].GetIndex()
		last := first + uint64(len(log)) - 1
		switch si := s.snapIndex(); {
		case first == si+1:
			s.ents = append(s.ents, log...)
		case si >= first && si <= last && log[si-first].GetTerm() == s.snapTerm():
			s.ents = append(s.ents, log[si-first+1:]...)
		default:
			// The log is older than the snapshot (received from a
			// leader, the crash came before the log was rewritten).
		}
	}
	if s.hs.GetCommit() < s.snapIndex() {
		s.hs.Commit = new(s.snapIndex())
	}
	if s.hs.GetCommit() > s.lastIndex() {
		return fmt.Errorf("cannot open the quorum log %q: commit index %d is past its last entry %d", path, s.hs.GetCommit(), s.lastIndex())
	}
	return nil
}

// InitialState implements raft.Storage.
func (s *DiskStorage) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := proto.Clone(raftpb.EnsureConfState(s.snap.GetMetadata().GetConfState())).(*raftpb.ConfState)
	return proto.Clone(s.hs).(*raftpb.HardState), cs, nil
}

// Entries implements raft.Storage.
func (s *DiskStorage) Entries(lo, hi, maxSize uint64) ([]*raftpb.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo <= s.snapIndex() {
		return nil, raft.ErrCompacted
	}
	if hi > s.lastIndex()+1 || lo > hi {
		return nil, fmt.Errorf("cannot read entries [%d, %d) of the quorum log ending at %d: %w", lo, hi, s.lastIndex(), raft.ErrUnavailable)
	}
	ents := s.ents[lo-s.snapIndex() : hi-s.snapIndex()]
	var size uint64
	for i, e := range ents {
		size += uint64(proto.Size(e))
		if i > 0 && size > maxSize {
			ents = ents[:i]
			break
		}
	}
	return append([]*raftpb.Entry(nil), ents...), nil
}

// Term implements raft.Storage.
func (s *DiskStorage) Term(i uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < s.snapIndex() {
		return 0, raft.ErrCompacted
	}
	if i > s.lastIndex() {
		return 0, raft.ErrUnavailable
	}
	return s.ents[i-s.snapIndex()].GetTerm(), nil
}

// LastIndex implements raft.Storage.
func (s *DiskStorage) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastIndex(), nil
}

// FirstIndex implements raft.Storage.
func (s *DiskStorage) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapIndex() + 1, nil
}

// Snapshot implements raft.Storage.
func (s *DiskStorage) Snapshot() (*raftpb.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return proto.Clone(s.snap).(*raftpb.Snapshot), nil
}

// Append implements Storage: the entries' records, then the hard
// state's, in one write.
func (s *DiskStorage) Append(hs *raftpb.HardState, ents []*raftpb.Entry, sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	// Drop what a snapshot already covers.
	for len(ents) > 0 && ents[0].GetIndex() <= s.snapIndex() {
		ents = ents[1:]
	}
	if len(ents) > 0 && ents[0].GetIndex() > s.lastIndex()+1 {
		return fmt.Errorf("cannot append entry %d to the quorum log ending at %d: a gap", ents[0].GetIndex(), s.lastIndex())
	}
	newHS := hs != nil && !raft.IsEmptyHardState(hs) && !proto.Equal(hs, s.hs)
	if len(ents) == 0 && !newHS {
		if sync {
			return s.sync()
		}
		return nil
	}
	s.buf = s.buf[:0]
	for _, e := range ents {
		s.buf = appendEntryRecord(s.buf, e)
	}
	if newHS {
		s.buf = appendHardStateRecord(s.buf, hs)
	}
	if _, err := s.f.WriteAt(s.buf, s.size); err != nil {
		s.broken = fmt.Errorf("cannot write %d bytes to the quorum log at %d: %w", len(s.buf), s.size, err)
		return s.broken
	}
	s.size += int64(len(s.buf))
	if sync {
		if err := s.sync(); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		s.ents = append(s.ents[:ents[0].GetIndex()-s.snapIndex():ents[0].GetIndex()-s.snapIndex()], ents...)
	}
	if newHS {
		s.hs = proto.Clone(hs).(*raftpb.HardState)
	}
	return nil
}

func (s *DiskStorage) sync() error {
	if err := s.f.Sync(); err != nil {
		s.broken = fmt.Errorf("cannot sync the quorum log: %w", err)
		return s.broken
	}
	return nil
}

// ApplySnapshot implements Storage.
func (s *DiskStorage) ApplySnapshot(snap *raftpb.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	idx, term := snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm()
	if idx <= s.snapIndex() {
		return raft.ErrSnapOutOfDate
	}
	var keep []*raftpb.Entry
	if idx <= s.lastIndex() && s.ents[idx-s.snapIndex()].GetTerm() == term {
		keep = s.ents[idx-s.snapIndex()+1:]
	}
	if err := s.writeSnapshot(snap); err != nil {
		return err
	}
	s.snap = proto.Clone(snap).(*raftpb.Snapshot)
	s.ents = append([]*raftpb.Entry{{Index: new(idx), Term: new(term)}}, keep...)
	if s.hs.GetCommit() < idx {
		s.hs.Commit = new(idx)
	}
	return s.rewriteLog()
}

// CreateSnapshot implements Storage.
func (s *DiskStorage) CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if i <= s.snapIndex() {
		return raft.ErrSnapOutOfDate
	}
	if i > s.lastIndex() {
		return fmt.Errorf("cannot snapshot the quorum log at %d: it ends at %d", i, s.lastIndex())
	}
	term := s.ents[i-s.snapIndex()].GetTerm()
	snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
		Index: new(i), Term: new(term), ConfState: proto.Clone(raftpb.EnsureConfState(cs)).(*raftpb.ConfState),
	}}
	if err := s.writeSnapshot(snap); err != nil {
		return err
	}
	keep := s.ents[i-s.snapIndex()+1:]
	s.snap = snap
	s.ents = append([]*raftpb.Entry{{Index: new(i), Term: new(term)}}, keep...)
	return s.rewriteLog()
}

// writeSnapshot replaces the snapshot file with snap, atomically.
func (s *DiskStorage) writeSnapshot(snap *raftpb.Snapshot) error {
	body, err := proto.Marshal(snap)
	if err != nil {
		return fmt.Errorf("cannot encode the snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), crc32.Checksum(body, castagnoli))
	b = append(b, body...)
	if err := s.replaceFile(snapshotFileName, b); err != nil {
		s.broken = err
		return err
	}
	return nil
}

// rewriteLog replaces the log file with the entries in memory and the
// hard state, atomically, and reopens it.
func (s *DiskStorage) rewriteLog() error {
	s.buf = s.buf[:0]
	for _, e := range s.ents[1:] {
		s.buf = appendEntryRecord(s.buf, e)
	}
	s.buf = appendHardStateRecord(s.buf, s.hs)
	if err := s.replaceFile(logFileName, s.buf); err != nil {
		s.broken = err
		return err
	}
	path := filepath.Join(s.dir, logFileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		s.broken = fmt.Errorf("cannot reopen the quorum log %q: %w", path, err)
		return s.broken
	}
	s.f.Close()
	s.f, s.size = f, int64(len(s.buf))
	return nil
}

// replaceFile writes data to dir/name through a temporary file, fsync,
// rename and a directory fsync.
func (s *DiskStorage) replaceFile(name string, data []byte) error {
	path := filepath.Join(s.dir, name)
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %d bytes to %q: %w", len(data), tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot sync %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot close %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot rename %q to %q: %w", tmp, path, err)
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("cannot open the directory %q: %w", s.dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot sync the directory %q: %w", s.dir, err)
	}
	return nil
}

// readSnapshotFile reads the snapshot at path; a missing file is the
// empty snapshot.
func readSnapshotFile(path string) (*raftpb.Snapshot, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{ConfState: &raftpb.ConfState{}}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the quorum snapshot %q: %w", path, err)
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("cannot read the quorum snapshot %q: %d bytes", path, len(b))
	}
	if got, want := crc32.Checksum(b[4:], castagnoli), binary.BigEndian.Uint32(b); got != want {
		return nil, fmt.Errorf("cannot read the quorum snapshot %q: crc32c %08x, want %08x", path, got, want)
	}
	var snap raftpb.Snapshot
	if err := proto.Unmarshal(b[4:], &snap); err != nil {
		return nil, fmt.Errorf("cannot decode the quorum snapshot %q: %w", path, err)
	}
	return &snap, nil
}

// Close implements Storage: it closes the log file.
func (s *DiskStorage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if s.broken == nil {
		s.broken = errors.New("quorum storage closed")
	}
	if err != nil {
		return fmt.Errorf("cannot close the quorum log in %q: %w", s.dir, err)
	}
	return nil
}
