package group

// Transactional offset commits of a Manager (KIP-98, TxnOffsetCommit).
// The offsets are appended to the group's __consumer_offsets partition as a
// transactional batch of the producer (OffsetCommitKey/Value records, like
// plain commits) and kept pending by producer id; the transaction's marker
// on that partition makes them visible (COMMIT) or drops them (ABORT).
// Replaying the log at start does the same: transactional batches are
// pending until their producer's marker. While an offset is pending,
// OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for it.

import (
	"errors"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnPendingOffset is one offset of an open transaction.
type txnPendingOffset struct {
	group string
	tp    groupTP
	o     groupOffset
}

// TxnPersister is an Env that can also append a producer's transactional
// batch (attributes 0x10, the producer's id and epoch); with an Env
// without it (tests) the offsets are appended with Persist.
type TxnPersister interface {
	PersistTxn(recs []kmsg.Record, pid int64, epoch int16, done func(error))
}

// txnCommitOffsets handles a TxnOffsetCommit; done gets one error per item.
// The offsets stay pending until the transaction's marker (CompleteTxn).
func (m *Manager) txnCommitOffsets(a offsetCommitArgs, done func([]*kerr.Error)) {
	_, out, recs, vals, ok := m.prepareCommit(a, true, done)
	if !ok {
		return
	}
	pend := make([]txnPendingOffset, len(vals))
	for i, v := range vals {
		pend[i] = txnPendingOffset{group: a.group, tp: v.tp, o: v.o}
	}
	finish := func(err error) {
		if err != nil {
			code := kerr.NotCoordinator
			if errors.Is(err, nvme.ErrInvalidProducerEpoch) {
				code = kerr.InvalidProducerEpoch
			}
			for i := range out {
				if out[i] == nil {
					out[i] = code
				}
			}
			done(out)
			return
		}
		if m.txnOffsets == nil {
			m.txnOffsets = map[int64][]txnPendingOffset{}
		}
		m.txnOffsets[a.pid] = append(m.txnOffsets[a.pid], pend...)
		done(out)
	}
	if tp, ok := m.env.(TxnPersister); ok {
		tp.PersistTxn(recs, a.pid, a.epoch, finish)
	} else {
		m.env.Persist(recs, finish)
	}
}

// CompleteTxn applies the marker of producer pid's transaction: its
// pending offsets become the committed ones (commit) or are dropped.
func (m *Manager) CompleteTxn(pid int64, commit bool) {
	pend := m.txnOffsets[pid]
	delete(m.txnOffsets, pid)
	if !commit {
		return
	}
	for _, p := range pend {
		g := m.groups[p.group]
		if g == nil {
			g = m.newGroup(p.group)
		}
		if cur, have := g.offsets[p.tp]; !have || cur.seq < p.o.seq {
			g.offsets[p.tp] = p.o
		}
	}
}

// unstableOffset reports whether a transactional commit of group/tp is
// pending.
func (m *Manager) unstableOffset(group string, tp groupTP) bool {
	for _, pend := range m.txnOffsets {
		for _, p := range pend {
			if p.group == group && p.tp == tp {
				return true
			}
		}
	}
	return false
}

// LoadTxnRecord replays one record of producer pid's transactional batch.
func (m *Manager) LoadTxnRecord(pid int64, key, value []byte) error {
	if len(key) < 2 || value == nil {
		return nil
	}
	if v := int16(key[0])<<8 | int16(key[1]); v != 0 && v != 1 {
		return nil
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return err
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return err
	}
	le := v.LeaderEpoch
	if v.Version < 3 {
		le = -1
	}
	m.commitSeq++
	if m.txnOffsets == nil {
		m.txnOffsets = map[int64][]txnPendingOffset{}
	}
	m.txnOffsets[pid] = append(m.txnOffsets[pid], txnPendingOffset{group: k.Group, tp: groupTP{k.Topic, k.Partition},
		o: groupOffset{offset: v.Offset, leaderEpoch: le, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1, seq: m.commitSeq}})
	return nil
}

// LoadTxnMarker replays a marker of producer pid (key: version, type).
func (m *Manager) LoadTxnMarker(pid int64, key []byte) {
	if len(key) < 4 {
		return
	}
	m.CompleteTxn(pid, int16(key[2])<<8|int16(key[3]) == nvme.ControlCommit)
}

// TxnCommit is a TxnOffsetCommit (KIP-98) that passed the handler's checks:
// the transactional producer's offsets for one group.
type TxnCommit struct {
	// Group, MemberID, InstanceID and Generation identify the committer
	// within the group (v3+; Generation -1 and MemberID "" outside it).
	Group, MemberID, InstanceID string
	Generation                  int32
	// ProducerID and ProducerEpoch are the transactional producer's.
	ProducerID    int64
	ProducerEpoch int16
	// Offsets are the partitions' offsets to commit.
	Offsets []TxnOffset
}

// TxnOffset is one partition's offset in a TxnCommit.
type TxnOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
}

// TxnCommitOffsets appends c's offsets to the partition as a transactional
// batch of the producer and keeps them pending until CompleteTxn (the
// transaction's marker). done gets one error (or nil) per offset, in order,
// on the shard.
func (m *Manager) TxnCommitOffsets(c TxnCommit, done func([]*kerr.Error)) {
	a := offsetCommitArgs{group: c.Group, memberID: c.MemberID, instanceID: c.InstanceID, generation: c.Generation,
		pid: c.ProducerID, epoch: c.ProducerEpoch, items: make([]offsetCommitItem, len(c.Offsets))}
	for i, o := range c.Offsets {
		a.items[i] = offsetCommitItem{topic: o.Topic, partition: o.Partition, offset: o.Offset, leaderEpoch: o.LeaderEpoch,
			metadata: o.Metadata, expireTime: -1}
	}
	m.txnCommitOffsets(a, done)
}
