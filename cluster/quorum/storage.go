package quorum

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Storage is the Raft log, hard state and snapshot of one node: what
// raft.Storage reads, plus the writes the Node makes while handling a
// Ready. Writes are durable when they return (Append with sync=false
// may defer its fsync to a later synced call). Only the Node's loop
// calls the writes; the reads are also called from that loop (by
// RawNode), so implementations need no locking beyond their own.
type Storage interface {
	raft.Storage
	// Append persists hs (unless nil or empty) and ents, replacing the
	// entries at and after ents[0]'s index (a conflicting tail). With
	// sync it returns only once both are on stable storage.
	Append(hs *raftpb.HardState, ents []*raftpb.Entry, sync bool) error
	// ApplySnapshot replaces the log with snap, a snapshot received
	// from a leader (or the bootstrap snapshot), durably; entries after
	// snap's index are kept only when the entry at its index has its
	// term.
	ApplySnapshot(snap *raftpb.Snapshot) error
	// CreateSnapshot records data, the application's state at applied
	// index i (at most LastIndex) with configuration cs, durably, and
	// discards the entries up to i. It fails with
	// raft.ErrSnapOutOfDate when i is not after the current snapshot.
	CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) error
	// Close releases the storage's files.
	Close() error
}

// MemStorage is a Storage in memory (raft.MemoryStorage), for tests
// and for nodes that need no durability. It survives a Node's Stop,
// so a test can restart a node on it.
type MemStorage struct {
	*raft.MemoryStorage
}

// NewMemStorage returns an empty MemStorage.
func NewMemStorage() *MemStorage { return &MemStorage{raft.NewMemoryStorage()} }

// Append implements Storage.
func (s *MemStorage) Append(hs *raftpb.HardState, ents []*raftpb.Entry, _ bool) error {
	if err := s.MemoryStorage.Append(ents); err != nil {
		return fmt.Errorf("cannot append %d entries: %w", len(ents), err)
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if err := s.SetHardState(hs); err != nil {
			return fmt.Errorf("cannot set hard state: %w", err)
		}
	}
	return nil
}

// ApplySnapshot implements Storage.
func (s *MemStorage) ApplySnapshot(snap *raftpb.Snapshot) error {
	if err := s.MemoryStorage.ApplySnapshot(snap); err != nil {
		return fmt.Errorf("cannot apply snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
	}
	return nil
}

// CreateSnapshot implements Storage.
func (s *MemStorage) CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) error {
	if _, err := s.MemoryStorage.CreateSnapshot(i, cs, data); err != nil {
		return fmt.Errorf("cannot create snapshot at %d: %w", i, err)
	}
	if err := s.MemoryStorage.Compact(i); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return fmt.Errorf("cannot compact at %d: %w", i, err)
	}
	return nil
}

// Close implements Storage; a MemStorage keeps its state.
func (s *MemStorage) Close() error { return nil }
