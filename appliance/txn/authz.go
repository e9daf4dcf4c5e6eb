package txn

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorization checks of the transaction APIs (true when the broker runs
// without an authorizer).

// txnIDDenied reports whether the principal lacks WRITE on a transactional id.
func (h *handlers) txnIDDenied(r *wire.Request, id string) bool {
	return !h.allowed(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id)
}

// initProducerIDDenied returns InitProducerId's authorization error code,
// or 0: a transactional id needs WRITE on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (CLUSTER_AUTHORIZATION_FAILED), as since KIP-679.
func (h *handlers) initProducerIDDenied(r *wire.Request, req *kmsg.InitProducerIDRequest) int16 {
	if h.authz == nil {
		return 0
	}
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		if h.txnIDDenied(r, *req.TransactionalID) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return 0
	}
	if h.allowed(r, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, wire.ClusterResource) || (h.authz == nil || h.authz.AuthorizeAny(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic)) {
		return 0
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// addTxnDenied answers an AddPartitionsToTxn transaction the principal may
// not change, or returns nil: every partition gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED without WRITE on the id; otherwise,
// when a topic lacks WRITE, its partitions get TOPIC_AUTHORIZATION_FAILED
// and the others OPERATION_NOT_ATTEMPTED.
func (h *handlers) addTxnDenied(r *wire.Request, id string, topics []kmsg.AddPartitionsToTxnRequestTopic) []kmsg.AddPartitionsToTxnResponseTopic {
	if h.authz == nil {
		return nil
	}
	codes := make([]int16, len(topics))
	anyDenied := false
	for i, t := range topics {
		switch {
		case h.txnIDDenied(r, id):
			codes[i], anyDenied = kerr.TransactionalIDAuthorizationFailed.Code, true
		case !h.allowed(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Topic):
			codes[i], anyDenied = kerr.TopicAuthorizationFailed.Code, true
		default:
			codes[i] = kerr.OperationNotAttempted.Code
		}
	}
	if !anyDenied {
		return nil
	}
	out := make([]kmsg.AddPartitionsToTxnResponseTopic, 0, len(topics))
	for i, t := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[i]
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// txnOffsetCommitDenied returns the code every partition of a
// TxnOffsetCommit gets, or 0: TRANSACTIONAL_ID_AUTHORIZATION_FAILED without
// WRITE on the id, GROUP_AUTHORIZATION_FAILED without READ on the group.
func (h *handlers) txnOffsetCommitDenied(r *wire.Request, req *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case h.authz == nil:
		return 0
	case h.txnIDDenied(r, req.TransactionalID):
		return kerr.TransactionalIDAuthorizationFailed.Code
	case !h.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		return kerr.GroupAuthorizationFailed.Code
	}
	return 0
}

// allowed reports whether r may perform op on the resource: true when the
// broker runs without an authorizer.
func (h *handlers) allowed(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return h.authz == nil || h.authz.Authorize(r, op, rt, name)
}
