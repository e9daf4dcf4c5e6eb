package txn

// EndTxn (key 26), v0-v5.
//
// Commits or aborts the producer's transaction (two-phase, see
// Manager.EndTxn): PrepareCommit/PrepareAbort is written to
// __transaction_state, a COMMIT/ABORT marker is appended to every partition
// of the transaction, then CompleteCommit/CompleteAbort is written; the
// answer comes after that, so a read_committed consumer or an OffsetFetch
// that starts after the answer sees the outcome. A retried EndTxn of a
// completed transaction answers NONE, one that asks for the other outcome
// INVALID_TXN_STATE; CONCURRENT_TRANSACTIONS while another change of the id
// is in flight. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2. v5
// answers the producer id and epoch, which stay as they are (this
// coordinator runs transaction version 1: no epoch bump per transaction).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) endTxnAPI() wire.API {
	return wire.API{Key: 26, Min: 0, Max: 5, Handle: h.handleEndTxn}
}

func (h *handlers) handleEndTxn(r *wire.Request) any {
	req := r.Req.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	if h.txnIDDenied(r, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	ch := Ask(h.b.Coordinator(), req.TransactionalID, func(m *Manager, reply func(*kerr.Error)) {
		m.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, reply)
	})
	if !ch.Posted() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	return wire.Deferred(func() any {
		err, ok := ch.Wait()
		if !ok {
			err = kerr.CoordinatorNotAvailable
		}
		resp.ErrorCode = FencedCode(err, r.Version >= 2)
		return resp
	})
}
