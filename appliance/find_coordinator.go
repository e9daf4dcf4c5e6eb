package appliance

// FindCoordinator (key 10), v0-v6.
//
// Group keys (type 0) are coordinated by this broker, the leader of every
// __consumer_offsets partition: the answer is our node id and the
// advertised address of the listener the request came in on. Transaction
// keys (type 1) likewise: this broker leads every
// __transaction_state partition (COORDINATOR_NOT_AVAILABLE until the
// transaction coordinator is loaded); other types INVALID_REQUEST. v4+
// batches keys (KIP-699) and answers one coordinator per key.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var findCoordinatorAPI = apiDef{key: 10, min: 0, max: 6, handle: handleFindCoordinator}

func handleFindCoordinator(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	answer := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Port = -1, -1
		err := b.findCoordinatorDenied(r, req.CoordinatorType, key)
		switch {
		case err != nil:
		case req.CoordinatorType == 0 && !b.groupsReady():
			err = kerr.CoordinatorNotAvailable
		case req.CoordinatorType == 0:
			c.NodeID = b.cfg.NodeID
			c.Host, c.Port = b.advertisedFor(r)
		case req.CoordinatorType == 1 && b.coord.txn == nil:
			err = kerr.CoordinatorNotAvailable
		case req.CoordinatorType == 1:
			c.NodeID = b.cfg.NodeID
			c.Host, c.Port = b.advertisedFor(r)
		default:
			err = kerr.InvalidRequest
		}
		if err != nil {
			c.ErrorCode = err.Code
			c.ErrorMessage = strPtr(err.Message)
		}
		return c
	}
	if r.Version >= 4 {
		for _, k := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, answer(k))
		}
		return resp
	}
	c := answer(req.CoordinatorKey)
	resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
	if c.ErrorCode != 0 {
		resp.ErrorMessage = c.ErrorMessage
	}
	return resp
}
