package controller

// AllocateProducerIds (67) over the quorum: producer ids come from the
// active controller in blocks (a ProducerIdsRecord per block, KRaft's
// ProducerIdControlManager), so that every node of a cluster hands out
// ids that no other node hands out. A broker asks through Channel (the
// active controller's controller listener, in process when that is this
// node); the active controller answers with the allocator its node set.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProducerIDAllocator reserves size producer ids for brokerID by a
// committed ProducerIdsRecord and returns the first.
type ProducerIDAllocator func(brokerID int32, size int64) (int64, error)

// ProducerIDBlock is the number of ids one AllocateProducerIds hands out
// (Kafka's ProducerIdsBlock size).
const ProducerIDBlock = 1000

// SetProducerIDAllocator makes f answer AllocateProducerIds while this
// node is the active controller.
func (q *Quorum) SetProducerIDAllocator(f ProducerIDAllocator) { q.pids.Store(&f) }

// serveAllocate answers AllocateProducerIds: NOT_CONTROLLER unless this
// node is the active controller with an allocator.
func (q *Quorum) serveAllocate(req *kmsg.AllocateProducerIDsRequest) *kmsg.AllocateProducerIDsResponse {
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	resp.SetVersion(req.GetVersion())
	f := q.pids.Load()
	if f == nil || !q.IsLeader() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	start, err := (*f)(req.BrokerID, ProducerIDBlock)
	if err != nil {
		q.log.Warn("cannot allocate producer ids", "broker", req.BrokerID, "err", err)
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	resp.ProducerIDStart, resp.ProducerIDLen = start, ProducerIDBlock
	return resp
}

// AllocateProducerIDs asks the active controller for a block of producer
// ids for this node and returns its first id and length.
func (q *Quorum) AllocateProducerIDs(ctx context.Context) (start int64, n int32, err error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = q.opts.NodeID, -1
	resp, err := q.Channel().Send(ctx, req)
	if err != nil {
		return -1, 0, err
	}
	r, ok := resp.(*kmsg.AllocateProducerIDsResponse)
	if !ok {
		return -1, 0, fmt.Errorf("AllocateProducerIds answered with %T", resp)
	}
	if r.ErrorCode != 0 {
		return -1, 0, kerr.ErrorForCode(r.ErrorCode)
	}
	return r.ProducerIDStart, r.ProducerIDLen, nil
}
