package txn

// AddOffsetsToTxn (key 25), v0-v4.
//
// Adds the group's __consumer_offsets partition (abs(javaHashCode(group)) %
// offsets.topic.num.partitions) to the producer's transaction, so that
// EndTxn writes a marker there that makes the transaction's
// TxnOffsetCommit offsets visible or drops them. Errors as
// AddPartitionsToTxn; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) addOffsetsToTxnAPI() wire.API {
	return wire.API{Key: 25, Min: 0, Max: 4, Handle: h.handleAddOffsetsToTxn}
}

// offsetsTopic is Kafka's internal topic for group offsets.
const offsetsTopic = "__consumer_offsets"

func (h *handlers) handleAddOffsetsToTxn(r *wire.Request) any {
	req := r.Req.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	gp, ok := h.groups.OffsetsPartition(req.Group)
	if !ok {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if h.txnIDDenied(r, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	if !h.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	tp := TP{Topic: offsetsTopic, Partition: gp}
	ch := h.addTxnPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TP{tp}, false)
	if !ch.Posted() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	return wire.Deferred(func() any {
		resp.ErrorCode = FencedCode(waitTxnErrs(ch, 1)[0], r.Version >= 2)
		return resp
	})
}
