package appliance

// Produce with a transactional id: each partition's batch is checked with
// the transaction coordinator before it is appended (KIP-890 part 1's
// verification, done locally since this broker is the coordinator). The
// check runs on the coordinator's shard, which then posts the appends to the
// partitions' owner shards: requests of one connection reach the
// coordinator in order, so their appends keep that order, and the
// dispatcher (a reader goroutine, or the shard loop with io.engine=uring)
// never waits.

import (
	"github.com/ringbroker/ringbroker/appliance/txn"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
)

// txnTP is a partition of a transaction (produce.go names it).
type txnTP = txn.TP

// txnProduceItem is one partition of a transactional produce.
type txnProduceItem struct {
	tp      txn.TP
	records []byte
	w       *produceWait // posts the append to the owner shard and takes its answer
}

func (b *Broker) txnProduce(tid string, items []txnProduceItem) {
	fail := func(it txnProduceItem, err error) {
		it.w.done(produceResult{err: err, baseOffset: -1, logAppendTime: -1, logStartOffset: -1})
	}
	type check struct {
		i     int
		pid   int64
		epoch int16
	}
	var checks []check
	for i, it := range items {
		h, err := nvme.ParseBatchHeader(it.records)
		switch {
		case err != nil:
			fail(it, err)
		case !h.IsTransactional() || h.IsControl() || h.ProducerID < 0:
			fail(it, kerr.InvalidRecord)
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
	ch := askTxn(b, tid, func(m *txn.Manager, _ func(struct{})) {
		for _, c := range checks {
			it := items[c.i]
			if err := m.Verify(tid, c.pid, c.epoch, it.tp); err != nil {
				if err == kerr.InvalidProducerIDMapping {
					err = kerr.InvalidTxnState
				}
				fail(it, err)
				continue
			}
			it.w.st.loop.Post(it.w.postFn)
		}
	})
	if !ch.Posted() {
		for _, c := range checks {
			fail(items[c.i], kerr.CoordinatorNotAvailable)
		}
	}
}
