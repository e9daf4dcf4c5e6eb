package txn

// Produce with a transactional id: each partition's batch is checked with
// the transaction coordinator before it is appended (KIP-890 part 1's
// verification, done locally since this broker is the coordinator). The
// check runs on the coordinator's shard, which then posts the appends to the
// partitions' owner shards: requests of one connection reach the
// coordinator in order, so their appends keep that order, and the
// dispatcher (a reader goroutine, or the shard loop with io.engine=uring)
// never waits.

import (
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ProduceTarget is one partition's pending append of a transactional
// produce, held by the broker's produce path.
type ProduceTarget interface {
	// Fail answers the partition with err; nothing is appended.
	Fail(err error)
	// Post posts the append to the partition's owner shard; it does not
	// wait.
	Post()
}

// ProduceItem is one partition of a transactional produce.
type ProduceItem struct {
	TP      TP
	Records []byte // the partition's record batch
	Target  ProduceTarget
}

// Produce checks each item's batch (transactional, not control, with a
// producer id) and, on tid's coordinator shard, that its partition is in
// the producer's open transaction; items that pass are posted in order,
// the others failed (INVALID_RECORD, INVALID_TXN_STATE,
// INVALID_PRODUCER_EPOCH; COORDINATOR_NOT_AVAILABLE when c is nil or the
// broker is closing). It does not wait.
func (c *Coordinator) Produce(tid string, items []ProduceItem) {
	type check struct {
		i     int
		pid   int64
		epoch int16
	}
	var checks []check
	for i, it := range items {
		h, err := nvme.ParseBatchHeader(it.Records)
		switch {
		case err != nil:
			it.Target.Fail(err)
		case !h.IsTransactional() || h.IsControl() || h.ProducerID < 0:
			it.Target.Fail(kerr.InvalidRecord)
		default:
			checks = append(checks, check{i, h.ProducerID, h.ProducerEpoch})
		}
	}
	if len(checks) == 0 {
		return
	}
	// The check and the appends run on the coordinator's shard, which posts
	// the appends in the order the requests arrived there; the dispatching
	// goroutine or loop never waits.
	ch := Ask(c, tid, func(m *Manager, _ func(struct{})) {
		for _, ck := range checks {
			it := items[ck.i]
			if err := m.Verify(tid, ck.pid, ck.epoch, it.TP); err != nil {
				if err == kerr.InvalidProducerIDMapping {
					err = kerr.InvalidTxnState
				}
				it.Target.Fail(err)
				continue
			}
			it.Target.Post()
		}
	})
	if !ch.Posted() {
		for _, ck := range checks {
			items[ck.i].Target.Fail(kerr.CoordinatorNotAvailable)
		}
	}
}
