package appliance

// The seam between the transaction coordinator and the group coordinator
// (appliance/group). Transactional offset commits (TxnOffsetCommit) are
// written by the group coordinator as a transactional batch of the
// producer and completed by the transaction's marker on the
// __consumer_offsets partition. The transaction code (txn_*.go) reaches the
// group coordinator only through what this file declares: groupManager's
// txnCommitOffsets and completeTxn, askGroup, offsetsPartition.PersistTxn.
// When the transaction coordinator moves to its own package, it declares
// this as an interface and appliance keeps these as its adapter.

import (
	"time"

	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupManager is a partition's group.Manager as the transaction code
// sees it.
type groupManager struct{ *group.Manager }

// askGroup runs fn with groupID's manager on its coordinator shard
// (group.Ask): fn answers through reply, once. The Reply is the zero one
// when the coordinator is not available (not started, or closing).
func askGroup[T any](b *Broker, groupID string, fn func(m *groupManager, reply func(T))) wire.Reply[T] {
	gc := b.coord.groups
	if gc == nil {
		return wire.Reply[T]{}
	}
	return group.Ask(gc.gc, groupID, func(_ *group.Manager, reply func(T)) {
		fn(gc.partitionOf(groupID).mgr, reply)
	})
}

// offsetCommitItem is one partition's offset of a TxnOffsetCommit.
type offsetCommitItem struct {
	topic       string
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
	expireTime  int64 // ms, -1 for the retention (unused by transactions)
}

// txnOffsetArgs is a TxnOffsetCommit that passed the handler's checks.
type txnOffsetArgs struct {
	group, memberID, instanceID string
	generation                  int32
	pid                         int64
	epoch                       int16
	items                       []offsetCommitItem
}

// txnCommitOffsets hands a TxnOffsetCommit to the group coordinator; done
// gets one error per item, on the shard.
func (m *groupManager) txnCommitOffsets(a txnOffsetArgs, done func([]*kerr.Error)) {
	c := group.TxnCommit{Group: a.group, MemberID: a.memberID, InstanceID: a.instanceID, Generation: a.generation,
		ProducerID: a.pid, ProducerEpoch: a.epoch, Offsets: make([]group.TxnOffset, len(a.items))}
	for i, it := range a.items {
		c.Offsets[i] = group.TxnOffset{Topic: it.topic, Partition: it.partition, Offset: it.offset,
			LeaderEpoch: it.leaderEpoch, Metadata: it.metadata}
	}
	m.TxnCommitOffsets(c, done)
}

// completeTxn applies the marker of producer pid's transaction to the
// partition's pending transactional offsets.
func (m *groupManager) completeTxn(pid int64, commit bool) { m.CompleteTxn(pid, commit) }

// PersistTxn appends recs as producer pid's transactional batch with
// acks=-1 and calls done on the shard after the fdatasync (group.TxnPersister).
func (op *offsetsPartition) PersistTxn(recs []kmsg.Record, pid int64, epoch int16, done func(error)) {
	part := op.st.parts[op.key]
	if part == nil || part.log == nil {
		done(kerr.NotCoordinator)
		return
	}
	batch := appendBatch(nil, time.Now().UnixMilli(), 0x10, pid, epoch, -1, recs)
	part.append(batch, -1, func(res produceResult) {
		go op.gc.post(op.st, func() { done(res.err) })
	})
}
