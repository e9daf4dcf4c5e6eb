package txn

// DescribeTransactions (key 65), v0 (KIP-664).
//
// Describes transactional ids from their coordinators: state (Kafka's
// names: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort), timeout, start time of the open transaction (-1 when
// none), producer id and epoch, and the partitions in the transaction.
// Unknown ids answer TRANSACTIONAL_ID_NOT_FOUND.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) describeTransactionsAPI() wire.API {
	return wire.API{Key: 65, Min: 0, Max: 0, Handle: h.handleDescribeTransactions}
}

type txnDescribeAnswer struct {
	s  Summary
	ok bool
}

func (h *handlers) handleDescribeTransactions(r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	chans := make([]wire.Reply[txnDescribeAnswer], len(req.TransactionalIDs))
	for i, id := range req.TransactionalIDs {
		chans[i] = Ask(h.b.Coordinator(), id, func(m *Manager, reply func(txnDescribeAnswer)) {
			s, ok := m.Summary(id)
			reply(txnDescribeAnswer{s, ok})
		})
	}
	return wire.Deferred(func() any {
		for i, id := range req.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID = id
			st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
			v, ok := chans[i].Wait()
			switch {
			case !ok:
				st.ErrorCode = kerr.CoordinatorNotAvailable.Code
			case !v.ok:
				st.ErrorCode = kerr.TransactionalIDNotFound.Code
			default:
				s := v.s
				st.State, st.TimeoutMillis, st.StartTimestamp = s.State, s.TimeoutMs, s.StartMs
				st.ProducerID, st.ProducerEpoch = s.PID, s.Epoch
				for _, p := range s.Parts {
					if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != p.Topic {
						t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
						t.Topic = p.Topic
						st.Topics = append(st.Topics, t)
					}
					t := &st.Topics[len(st.Topics)-1]
					t.Partitions = append(t.Partitions, p.Partition)
				}
			}
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp
	})
}
