package appliance

// The transaction coordinator's place in the broker. Transactional id x is
// coordinated by __transaction_state partition
// abs(javaHashCode(x)) % transaction.state.log.num.partitions, and its state
// lives in that partition's txnManager on the partition's owner shard, the
// same pattern as the group coordinator: handlers post closures there and
// wait for the answer off the shard; a ticker posts the timeout check
// (transaction.abort.timed.out.transaction.cleanup.interval.ms) to every
// partition's shard.
//
// Markers are control batches (attributes control|transactional, producer
// id and epoch of the transaction, base sequence -1) with one record: key
// version int16 0 + type int16 (0 abort, 1 commit), value version int16 0 +
// coordinator epoch int32. They are appended with acks=-1 on each
// partition's owner shard; on a __consumer_offsets partition the group
// coordinator then makes the transaction's pending offsets visible (commit)
// or drops them (abort).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringbroker/ringbroker/appliance/txn"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnTopic is Kafka's internal topic for transaction state.
const txnTopic = txn.Topic

// txnCoordinator routes transaction requests to the owner shard of their
// __transaction_state partition.
type txnCoordinator struct {
	b     *Broker
	cfg   txn.Config
	topic *TopicImage
	parts []*txnPartition
}

// txnPartition is one __transaction_state partition's coordinator state.
type txnPartition struct {
	tc    *txnCoordinator
	st    *shardState
	key   tpKey
	index int32
	mgr   *txn.Manager
}

// startTxnCoordinator creates __transaction_state when missing, replays it,
// completes what a restart left half done and starts the timeout check. It
// runs in Start, after the group coordinator, before serving.
func (b *Broker) startTxnCoordinator() error {
	cfg, err := txn.ConfigFromProps(b.cfg.Props)
	if err != nil {
		return err
	}
	t := b.currentImage().Topics[txnTopic]
	if t == nil {
		t, err = b.createTopic(TopicSpec{Name: txnTopic, Partitions: cfg.NumPartitions, ReplicationFactor: 1,
			Configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": b.propOr("transaction.state.log.segment.bytes", "104857600"), "compression.type": "uncompressed"}}, false)
		if err != nil {
			return fmt.Errorf("cannot create %s: %w", txnTopic, err)
		}
	}
	tc := &txnCoordinator{b: b, cfg: cfg, topic: t}
	for _, p := range t.Partitions {
		tp := &txnPartition{tc: tc, st: b.shardFor(t, p.Partition), key: tpKey{t.ID, p.Partition}, index: p.Partition}
		tp.mgr = txn.NewManager(tp, cfg, p.LeaderEpoch)
		tc.parts = append(tc.parts, tp)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var loadErr error
	start := time.Now()
	for _, tp := range tc.parts {
		wg.Add(1)
		tp.st.loop.Post(func() {
			defer wg.Done()
			if err := tp.load(); err != nil {
				mu.Lock()
				loadErr = errors.Join(loadErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if loadErr != nil {
		return loadErr
	}
	b.txn = tc
	b.txnInit = tc.handleInit
	for _, tp := range tc.parts {
		tc.post(tp.st, tp.mgr.FinishLoad)
	}
	b.log.Info("transaction coordinator loaded", "partitions", len(tc.parts), "took", time.Since(start).Round(time.Millisecond).String())
	go tc.timeoutLoop()
	return nil
}

// load replays the partition's log into its txnManager (on its shard).
func (tp *txnPartition) load() error {
	part := tp.st.parts[tp.key]
	if part == nil {
		return fmt.Errorf("cannot load %s-%d: partition not open", txnTopic, tp.index)
	}
	name := fmt.Sprintf("%s-%d", txnTopic, tp.index)
	return replayLog(part.log, name, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
		if b.Attributes&0x20 != 0 { // markers in __transaction_state carry no state
			return nil
		}
		return tp.mgr.LoadRecord(r.Key, r.Value)
	})
}

// timeoutLoop runs the timeout check on every partition's shard.
func (tc *txnCoordinator) timeoutLoop() {
	tc.b.every(tc.cfg.CleanupInterval, func() {
		for _, tp := range tc.parts {
			tc.post(tp.st, tp.mgr.CheckTimeouts)
		}
	})
}

// post runs fn on st unless the broker is closing.
func (tc *txnCoordinator) post(st *shardState, fn func()) { tc.b.postUnlessClosing(st, fn) }

// partitionOf is the coordinator partition of a transactional id.
func (tc *txnCoordinator) partitionOf(id string) *txnPartition {
	return tc.parts[groupPartition(id, int32(len(tc.parts)))]
}

// askTxn runs fn with id's manager on its coordinator shard (wire.Ask);
// the Reply is the zero one when the coordinator is not running.
func askTxn[T any](b *Broker, id string, fn func(m *txn.Manager, reply func(T))) wire.Reply[T] {
	tc := b.txn
	if tc == nil {
		return wire.Reply[T]{}
	}
	tp := tc.partitionOf(id)
	return wire.Ask(b.closing, tp.st.loop.Post, func(reply func(T)) { fn(tp.mgr, reply) })
}

// handleInit answers InitProducerId for a transactional id (b.txnInit); it
// runs on the request's own goroutine.
func (tc *txnCoordinator) handleInit(r *wire.Request, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	spare, err := tc.b.newProducerID()
	if err != nil {
		resp.ErrorCode = wire.ErrCode(err)
		return resp
	}
	a := txn.InitArgs{ID: *req.TransactionalID, TimeoutMs: req.TransactionTimeoutMillis, PID: -1, Epoch: -1, Spare: spare}
	if r.Version >= 3 {
		a.PID, a.Epoch = req.ProducerID, req.ProducerEpoch
	}
	res, ok := askTxn(tc.b, a.ID, func(m *txn.Manager, reply func(txn.InitResult)) {
		m.InitProducer(a, reply)
	}).Wait()
	if !ok {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ErrorCode = txn.FencedCode(res.Err, r.Version >= 4)
	resp.ProducerID, resp.ProducerEpoch = res.PID, res.Epoch
	return resp
}

// txn.Env on the broker.

func (tp *txnPartition) Now() time.Time { return time.Now() }

// Persist appends recs as one uncompressed batch with acks=-1 and calls
// done on the shard after the fdatasync.
func (tp *txnPartition) Persist(recs []kmsg.Record, done func(error)) {
	part := tp.st.parts[tp.key]
	if part == nil || part.log == nil {
		done(kerr.NotCoordinator)
		return
	}
	batch := appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
	part.append(batch, -1, func(res produceResult) {
		go tp.tc.post(tp.st, func() { done(res.err) })
	})
}

// markerBatch is one transaction marker as a control batch.
func markerBatch(job txn.MarkerJob, nowMs int64) []byte {
	key := make([]byte, 4)
	if job.Commit {
		binary.BigEndian.PutUint16(key[2:], 1)
	}
	val := make([]byte, 6)
	binary.BigEndian.PutUint32(val[2:], uint32(job.CoordEpoch))
	return appendBatch(nil, nowMs, 0x30, job.PID, job.Epoch, -1, []kmsg.Record{{Key: key, Value: val}})
}

// WriteMarkers appends the job's marker to each of its partitions on their
// owner shards and calls done on tp's shard when every append is durable
// (or failed: a partition that is gone or refuses the marker is logged and
// skipped).
func (tp *txnPartition) WriteMarkers(job txn.MarkerJob, done func()) {
	b := tp.tc.b
	if len(job.Parts) == 0 {
		done()
		return
	}
	im := b.currentImage()
	var mu sync.Mutex
	remaining := len(job.Parts)
	finish := func() {
		mu.Lock()
		remaining--
		last := remaining == 0
		mu.Unlock()
		if last {
			go tp.tc.post(tp.st, done)
		}
	}
	now := time.Now().UnixMilli()
	for _, p := range job.Parts {
		t := im.Topics[p.Topic]
		if t == nil || p.Partition < 0 || int(p.Partition) >= len(t.Partitions) {
			finish()
			continue
		}
		batch := markerBatch(job, now)
		p := p
		// From a goroutine: a shard never waits on another shard's inbox.
		go b.withPartition(t, p.Partition, func(part *partition) {
			if part == nil {
				finish()
				return
			}
			st := part.st
			part.append(batch, -1, func(res produceResult) {
				if res.err != nil {
					b.log.Warn("cannot write transaction marker", "topic", p.Topic, "partition", p.Partition,
						"producer_id", job.PID, "commit", job.Commit, "err", res.err)
					finish()
					return
				}
				if p.Topic != offsetsTopic || b.groups == nil || int(p.Partition) >= len(b.groups.parts) {
					finish()
					return
				}
				// The group coordinator completes the pending offsets on
				// the __consumer_offsets partition's shard.
				op := b.groups.parts[p.Partition]
				go b.groups.post(st, func() {
					op.mgr.completeTxn(job.PID, job.Commit)
					finish()
				})
			})
		})
	}
}
