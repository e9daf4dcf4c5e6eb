package appliance

// Produce with a transactional id goes through the transaction coordinator
// (txn.Coordinator.Produce), which checks each partition's batch against
// the producer's open transaction on the coordinator's shard and then posts
// the appends to the partitions' owner shards.

import (
	"github.com/ringbroker/ringbroker/appliance/txn"
)

// txnTP is a partition of a transaction (handleProduce names it).
type txnTP = txn.TP

// txnProduceItem is one partition of a transactional produce.
type txnProduceItem struct {
	tp      txnTP
	records []byte
	w       *produceWait // posts the append to the owner shard and takes its answer
}

// txnTarget is a produceWait as a txn.ProduceTarget.
type txnTarget produceWait

// Fail implements txn.ProduceTarget.
func (t *txnTarget) Fail(err error) {
	(*produceWait)(t).done(produceResult{err: err, baseOffset: -1, logAppendTime: -1, logStartOffset: -1})
}

// Post implements txn.ProduceTarget.
func (t *txnTarget) Post() { t.st.loop.Post(t.postFn) }

// txnProduce hands a transactional produce's partitions to the coordinator.
func (b *Broker) txnProduce(tid string, items []txnProduceItem) {
	out := make([]txn.ProduceItem, len(items))
	for i, it := range items {
		out[i] = txn.ProduceItem{TP: it.tp, Records: it.records, Target: (*txnTarget)(it.w)}
	}
	b.coord.txn.Produce(tid, out)
}
