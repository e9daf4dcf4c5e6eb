package txn

// InitProducerId (key 22), v0-v5.
//
// Without a transactional id the producer is idempotent only: it gets a new
// producer id with epoch 0 (a producer that already has an id and asks for
// a bump, KIP-360, also gets a fresh id: this broker cannot tell it from a
// zombie without a transactional id). Ids come from blocks of
// ProducerIDBlockSize recorded in the metadata log (ProducerIDs), so they are never
// handed out twice across restarts. With a transactional id the request
// goes to the transaction coordinator.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) initProducerIDAPI() wire.API {
	return wire.API{Key: 22, Min: 0, Max: 5, Handle: h.handleInitProducerID}
}

func (h *handlers) handleInitProducerID(r *wire.Request) any {
	req := r.Req.(*kmsg.InitProducerIDRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if code := h.initProducerIDDenied(r, req); code != 0 {
			resp.ErrorCode = code
			return resp
		}
		if req.TransactionalID != nil && *req.TransactionalID != "" {
			c := h.b.Coordinator()
			if c == nil {
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				return resp
			}
			return c.handleInit(r, req)
		}
		id, err := h.b.NewProducerID()
		if err != nil {
			resp.ErrorCode = wire.ErrCode(err)
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	})
}

// handleInit answers InitProducerId for a transactional id; it runs on the
// request's own goroutine.
func (c *Coordinator) handleInit(r *wire.Request, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	spare, err := c.b.NewProducerID()
	if err != nil {
		resp.ErrorCode = wire.ErrCode(err)
		return resp
	}
	a := InitArgs{ID: *req.TransactionalID, TimeoutMs: req.TransactionTimeoutMillis, PID: -1, Epoch: -1, Spare: spare}
	if r.Version >= 3 {
		a.PID, a.Epoch = req.ProducerID, req.ProducerEpoch
	}
	res, ok := Ask(c, a.ID, func(m *Manager, reply func(InitResult)) {
		m.InitProducer(a, reply)
	}).Wait()
	if !ok {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ErrorCode = FencedCode(res.Err, r.Version >= 4)
	resp.ProducerID, resp.ProducerEpoch = res.PID, res.Epoch
	return resp
}
