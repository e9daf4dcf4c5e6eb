package appliance

// InitProducerId (key 22), v0-v5.
//
// Without a transactional id the producer is idempotent only: it gets a new
// producer id with epoch 0 (a producer that already has an id and asks for
// a bump, KIP-360, also gets a fresh id: this broker cannot tell it from a
// zombie without a transactional id). Ids come from blocks of
// producerIDBlockSize recorded in the metadata log, so they are never
// handed out twice across restarts. With a transactional id the request
// goes to the transaction coordinator.

import (
	"fmt"
	"sync"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var initProducerIDAPI = apiDef{key: 22, min: 0, max: 5, handle: handleInitProducerID}

// producerIDBlockSize is how many producer ids one metadata record reserves.
const producerIDBlockSize = 1000

// producerIDs hands out producer ids from the current block.
type producerIDs struct {
	mu        sync.Mutex
	next, end int64
}

// newProducerID returns an unused producer id, reserving a new block in the
// metadata log when the current one is used up.
func (b *Broker) newProducerID() (int64, error) {
	b.pids.mu.Lock()
	defer b.pids.mu.Unlock()
	if b.pids.next < b.pids.end {
		id := b.pids.next
		b.pids.next++
		return id, nil
	}
	b.ctrlMu.Lock()
	defer b.ctrlMu.Unlock()
	im := b.currentImage()
	start := im.NextProducerID
	next, err := b.meta.Commit(im, []MetadataRecord{{ProducerIDs: &ProducerIDsRecord{BrokerID: b.cfg.NodeID, NextProducerID: start + producerIDBlockSize}}})
	if err != nil {
		return -1, commitErr(fmt.Errorf("cannot reserve producer ids: %w", err))
	}
	b.image.Store(next)
	b.pids.next, b.pids.end = start+1, start+producerIDBlockSize
	return start, nil
}

func handleInitProducerID(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.InitProducerIDRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if code := b.initProducerIDDenied(r, req); code != 0 {
			resp.ErrorCode = code
			return resp
		}
		if req.TransactionalID != nil && *req.TransactionalID != "" {
			if b.txnInit == nil {
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				return resp
			}
			return b.txnInit(r, req)
		}
		id, err := b.newProducerID()
		if err != nil {
			resp.ErrorCode = wire.ErrCode(err)
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	})
}
