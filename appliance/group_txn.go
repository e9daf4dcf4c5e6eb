package appliance

// The seam between the transaction coordinator and the group coordinator
// (appliance/group). Transactional offset commits (TxnOffsetCommit) are
// written by the group coordinator as a transactional batch of the
// producer and completed by the transaction's marker on the
// __consumer_offsets partition. The transaction coordinator (appliance/txn)
// reaches the group coordinator only through its txn.Groups interface,
// which txnGroups implements with askGroup, groupManager and
// offsetsPartition.PersistTxn.

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
