package txn

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Groups is what the transaction handlers need of the group coordinator:
// AddOffsetsToTxn adds a group's __consumer_offsets partition to the
// transaction, TxnOffsetCommit hands the offsets to the group.
type Groups interface {
	// OffsetsPartition is group's __consumer_offsets partition; false when
	// the group coordinator is not running.
	OffsetsPartition(group string) (int32, bool)
	// CommitOffsets stores c's offsets as pending offsets of c.PID's
	// transaction on the group's coordinator shard; the answer is one
	// error (nil when stored) per item. The Reply is the zero one when
	// the group coordinator is not running.
	CommitOffsets(c OffsetCommit) wire.Reply[[]*kerr.Error]
}

// OffsetCommit is a TxnOffsetCommit as the group coordinator takes it.
type OffsetCommit struct {
	Group      string
	MemberID   string
	InstanceID string
	Generation int32 // -1 before v3
	PID        int64
	Epoch      int16
	Items      []OffsetItem
}

// OffsetItem is one partition's offset of an OffsetCommit.
type OffsetItem struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
}

// handlers answers the transaction APIs with its broker.
type handlers struct {
	b      Broker
	groups Groups
	authz  wire.Authorizer // nil: the authorizer is off
}

// Register adds InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// EndTxn, TxnOffsetCommit, DescribeTransactions and ListTransactions to t,
// answered with b (and its coordinator, once started) and groups; authz is
// the broker's authorizer, nil when it runs without one.
func Register(t *wire.Table, b Broker, groups Groups, authz wire.Authorizer) {
	h := &handlers{b: b, groups: groups, authz: authz}
	t.Register(h.initProducerIDAPI())
	t.Register(h.addPartitionsToTxnAPI())
	t.Register(h.addOffsetsToTxnAPI())
	t.Register(h.endTxnAPI())
	t.Register(h.txnOffsetCommitAPI())
	t.Register(h.describeTransactionsAPI())
	t.Register(h.listTransactionsAPI())
}
