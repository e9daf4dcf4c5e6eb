package txn

// ListTransactions (key 66), v0-v1 (KIP-664, KIP-994).
//
// Lists the transactional ids of every __transaction_state partition with
// their producer id and state, filtered by state names (any of them; names
// Kafka does not know are echoed in unknown_state_filters), by producer
// ids, and (v1) by transactions open for longer than duration_filter_ms.

import (
	"slices"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) listTransactionsAPI() wire.API {
	return wire.API{Key: 66, Min: 0, Max: 1, Handle: h.handleListTransactions}
}

var txnStateNames = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (h *handlers) handleListTransactions(r *wire.Request) any {
	req := r.Req.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, s := range req.StateFilters {
		if !slices.Contains(txnStateNames, s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	tc := h.b.Coordinator()
	if tc == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	chans := make([]chan []Summary, len(tc.parts))
	for i, tp := range tc.parts {
		ch := make(chan []Summary, 1)
		chans[i] = ch
		tc.post(tp.log, func() { ch <- tp.mgr.List() })
	}
	minDur := int64(-1)
	if r.Version >= 1 {
		minDur = req.DurationFilterMillis
	}
	return wire.Deferred(func() any {
		now := time.Now().UnixMilli()
		for _, ch := range chans {
			var list []Summary
			select {
			case list = <-ch:
			case <-h.b.Closing():
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				return resp
			}
			for _, s := range list {
				if len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, s.State) {
					continue
				}
				if len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, s.PID) {
					continue
				}
				if minDur >= 0 && (s.StartMs < 0 || now-s.StartMs < minDur) {
					continue
				}
				st := kmsg.NewListTransactionsResponseTransactionState()
				st.TransactionalID, st.ProducerID, st.TransactionState = s.ID, s.PID, s.State
				resp.TransactionStates = append(resp.TransactionStates, st)
			}
		}
		return resp
	})
}
