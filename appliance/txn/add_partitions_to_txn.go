package txn

// AddPartitionsToTxn (key 24), v0-v5.
//
// v0-v3 (clients): adds partitions to the producer's transaction on its
// coordinator, starting the transaction (Ongoing) if none is open, and
// answers one error per partition: unknown partitions
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED;
// INVALID_PRODUCER_ID_MAPPING for an unknown producer id, PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2) for an old epoch,
// CONCURRENT_TRANSACTIONS while a commit or abort is completing. v4+ is the
// batched broker-to-broker form (KIP-890): several transactions, each
// either added or, with verify_only, checked (INVALID_TXN_STATE when a
// partition is not in the open transaction).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) addPartitionsToTxnAPI() wire.API {
	return wire.API{Key: 24, Min: 0, Max: 5, Handle: h.handleAddPartitionsToTxn}
}

// txnPartsIn resolves requested partitions against the current image; bad reports
// whether any is unknown.
func (h *handlers) txnPartsIn(topic string, parts []int32) (ok []TP, bad []bool) {
	n := h.b.PartitionCount(topic)
	for _, p := range parts {
		unknown := p < 0 || p >= n || topic == Topic
		bad = append(bad, unknown)
		ok = append(ok, TP{Topic: topic, Partition: p})
	}
	return ok, bad
}

// addTxnPartitions asks id's coordinator to add (or, with verify, check)
// parts; the answer is one *kerr.Error per part.
func (h *handlers) addTxnPartitions(id string, pid int64, epoch int16, parts []TP, verify bool) wire.Reply[[]*kerr.Error] {
	return Ask(h.b.Coordinator(), id, func(m *Manager, reply func([]*kerr.Error)) {
		if verify {
			out := make([]*kerr.Error, len(parts))
			for i, p := range parts {
				out[i] = m.Verify(id, pid, epoch, p)
			}
			reply(out)
			return
		}
		m.AddPartitions(id, pid, epoch, parts, func(err *kerr.Error) {
			out := make([]*kerr.Error, len(parts))
			for i := range out {
				out[i] = err
			}
			reply(out)
		})
	})
}

// waitTxnErrs waits for addTxnPartitions' answer: n times
// COORDINATOR_NOT_AVAILABLE when the coordinator was not asked or the broker
// closes first.
func waitTxnErrs(ch wire.Reply[[]*kerr.Error], n int) []*kerr.Error {
	v, ok := ch.Wait()
	if !ok {
		out := make([]*kerr.Error, n)
		for i := range out {
			out[i] = kerr.CoordinatorNotAvailable
		}
		return out
	}
	return v
}

type txnAddReq struct {
	id     string
	pid    int64
	epoch  int16
	verify bool
	topics []kmsg.AddPartitionsToTxnRequestTopic
}

// addTxnTopics runs one transaction's part of the request and returns the
// per-topic answers.
func (h *handlers) addTxnTopics(a txnAddReq, version int16) func() []kmsg.AddPartitionsToTxnResponseTopic {
	var parts []TP
	var bad []bool
	for _, t := range a.topics {
		ok, bd := h.txnPartsIn(t.Topic, t.Partitions)
		parts = append(parts, ok...)
		bad = append(bad, bd...)
	}
	anyBad := false
	for _, x := range bad {
		anyBad = anyBad || x
	}
	var ch wire.Reply[[]*kerr.Error]
	if !anyBad && len(parts) > 0 {
		ch = h.addTxnPartitions(a.id, a.pid, a.epoch, parts, a.verify)
	}
	return func() []kmsg.AddPartitionsToTxnResponseTopic {
		errs := make([]*kerr.Error, len(parts))
		switch {
		case anyBad:
			for i := range errs {
				errs[i] = kerr.OperationNotAttempted
				if bad[i] {
					errs[i] = kerr.UnknownTopicOrPartition
				}
			}
		case len(parts) > 0:
			errs = waitTxnErrs(ch, len(parts))
		}
		var out []kmsg.AddPartitionsToTxnResponseTopic
		i := 0
		for _, t := range a.topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode = FencedCode(errs[i], version >= 2)
				i++
				rt.Partitions = append(rt.Partitions, rp)
			}
			out = append(out, rt)
		}
		return out
	}
}

func (h *handlers) handleAddPartitionsToTxn(r *wire.Request) any {
	req := r.Req.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version < 4 {
		if denied := h.addTxnDenied(r, req.TransactionalID, req.Topics); denied != nil {
			resp.Topics = denied
			return resp
		}
		wait := h.addTxnTopics(txnAddReq{id: req.TransactionalID, pid: req.ProducerID, epoch: req.ProducerEpoch, topics: req.Topics}, r.Version)
		return wire.Deferred(func() any {
			resp.Topics = wait()
			return resp
		})
	}
	var waits []func() []kmsg.AddPartitionsToTxnResponseTopic
	for _, tx := range req.Transactions {
		a := txnAddReq{id: tx.TransactionalID, pid: tx.ProducerID, epoch: tx.ProducerEpoch, verify: tx.VerifyOnly}
		for _, t := range tx.Topics {
			a.topics = append(a.topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		if denied := h.addTxnDenied(r, a.id, a.topics); denied != nil {
			waits = append(waits, func() []kmsg.AddPartitionsToTxnResponseTopic { return denied })
			continue
		}
		waits = append(waits, h.addTxnTopics(a, r.Version))
	}
	return wire.Deferred(func() any {
		for i, tx := range req.Transactions {
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = tx.TransactionalID
			for _, t := range waits[i]() {
				rtt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rtt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
					rtt.Partitions = append(rtt.Partitions, rp)
				}
				rt.Topics = append(rt.Topics, rtt)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		return resp
	})
}
