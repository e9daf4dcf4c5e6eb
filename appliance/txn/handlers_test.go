package txn

import (
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// denyAll is an authorizer that allows nothing.
type denyAll struct{}

func (denyAll) Authorize(*wire.Request, kmsg.ACLOperation, kmsg.ACLResourceType, string) bool {
	return false
}
func (denyAll) AuthorizeAny(*wire.Request, kmsg.ACLOperation, kmsg.ACLResourceType) bool {
	return false
}

// noGroups is a broker without a group coordinator.
type noGroups struct{}

func (noGroups) OffsetsPartition(string) (int32, bool) { return 0, false }
func (noGroups) CommitOffsets(OffsetCommit) wire.Reply[[]*kerr.Error] {
	return wire.Reply[[]*kerr.Error]{}
}

// call runs req through t's handler at version, and its deferred part.
func call(t *testing.T, tab *wire.Table, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	api, ok := tab.Lookup(req.Key())
	if !ok {
		t.Fatalf("key %d not registered", req.Key())
	}
	req.SetVersion(version)
	out := api.Handle(&wire.Request{Key: req.Key(), Version: version, Req: req})
	if d, ok := out.(wire.Deferred); ok {
		out = d()
	}
	resp, ok := out.(kmsg.Response)
	if !ok {
		t.Fatalf("key %d: handler returned %T", req.Key(), out)
	}
	return resp
}

// TestHandlersTransaction: InitProducerId, AddPartitionsToTxn and EndTxn
// through the registered handlers run a transaction to CompleteCommit,
// which DescribeTransactions and ListTransactions then show.
func TestHandlersTransaction(t *testing.T) {
	b := &fakeBroker{closing: make(chan struct{}), markers: make(chan MarkerJob, 4)}
	defer close(b.closing)
	b.logs = []Log{newFakeLog(t, nil), newFakeLog(t, nil)}
	tab := wire.NewTable()
	Register(tab, b, noGroups{}, nil)

	id := "tx"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &id, 60000
	if r := call(t, tab, ip, 4).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("InitProducerId before Start: code %d", r.ErrorCode)
	}
	c, err := Start(b, withPartitions(2), discard())
	if err != nil {
		t.Fatal(err)
	}
	b.coord = c
	ir := call(t, tab, ip, 4).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 || ir.ProducerID != 1 || ir.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: %+v", ir)
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = id, ir.ProducerID, ir.ProducerEpoch
	ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 5}}}
	ar := call(t, tab, ap, 3).(*kmsg.AddPartitionsToTxnResponse)
	if got := ar.Topics[0].Partitions; got[0].ErrorCode != kerr.OperationNotAttempted.Code || got[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("AddPartitionsToTxn with an unknown partition: %+v", got)
	}
	ap.Topics[0].Partitions = []int32{0}
	if ar := call(t, tab, ap, 3).(*kmsg.AddPartitionsToTxnResponse); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: code %d", ar.Topics[0].Partitions[0].ErrorCode)
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	if r := call(t, tab, et, 3).(*kmsg.EndTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("EndTxn: code %d", r.ErrorCode)
	}
	if job := wait(t, b.markers, "the commit markers"); !job.Commit || job.PID != 1 || len(job.Parts) != 1 {
		t.Fatalf("markers %+v", job)
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{id, "unknown"}
	dr := call(t, tab, dt, 0).(*kmsg.DescribeTransactionsResponse)
	if s := dr.TransactionStates; len(s) != 2 || s[0].State != "CompleteCommit" || s[0].ProducerID != 1 || s[1].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("DescribeTransactions: %+v", s)
	}
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.StateFilters = []string{"CompleteCommit", "Bogus"}
	lr := call(t, tab, lt, 1).(*kmsg.ListTransactionsResponse)
	if len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != id || len(lr.UnknownStateFilters) != 1 {
		t.Fatalf("ListTransactions: %+v", lr)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.Group = id, "g"
	if r := call(t, tab, ao, 3).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("AddOffsetsToTxn without a group coordinator: code %d", r.ErrorCode)
	}
}

// TestHandlersDenied: without WRITE on the transactional id the APIs
// answer TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer
// without IDEMPOTENT_WRITE or WRITE on a topic CLUSTER_AUTHORIZATION_FAILED.
func TestHandlersDenied(t *testing.T) {
	b := &fakeBroker{closing: make(chan struct{})}
	defer close(b.closing)
	tab := wire.NewTable()
	Register(tab, b, noGroups{}, denyAll{})
	id := "tx"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID = &id
	if r := call(t, tab, ip, 4).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("InitProducerId: code %d", r.ErrorCode)
	}
	ip.TransactionalID = nil
	if r := call(t, tab, ip, 4).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("idempotent InitProducerId: code %d", r.ErrorCode)
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID = id
	if r := call(t, tab, et, 3).(*kmsg.EndTxnResponse); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("EndTxn: code %d", r.ErrorCode)
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID = id
	ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if r := call(t, tab, ap, 3).(*kmsg.AddPartitionsToTxnResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("AddPartitionsToTxn: code %d", r.Topics[0].Partitions[0].ErrorCode)
	}
}
