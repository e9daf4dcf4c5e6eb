package appliance

// AddOffsetsToTxn (key 25), v0-v4.
//
// Adds the group's __consumer_offsets partition (abs(javaHashCode(group)) %
// offsets.topic.num.partitions) to the producer's transaction, so that
// EndTxn writes a marker there that makes the transaction's
// TxnOffsetCommit offsets visible or drops them. Errors as
// AddPartitionsToTxn; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.

import (
	"github.com/ringbroker/ringbroker/appliance/txn"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var addOffsetsToTxnAPI = apiDef{key: 25, min: 0, max: 4, handle: handleAddOffsetsToTxn}

func handleAddOffsetsToTxn(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	if b.groups == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if b.txnIDDenied(r, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	if b.groupDenied(r, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	tp := txn.TP{Topic: offsetsTopic, Partition: groupPartition(req.Group, int32(len(b.groups.parts)))}
	ch := b.addTxnPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TP{tp}, false)
	if !ch.Posted() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	return wire.Deferred(func() any {
		resp.ErrorCode = txn.FencedCode(waitTxnErrs(ch, 1)[0], r.Version >= 2)
		return resp
	})
}
