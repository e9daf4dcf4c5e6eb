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
	"strconv"
	"sync"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnTopic is Kafka's internal topic for transaction state.
const txnTopic = "__transaction_state"

// txnConfigFromProps reads the transaction settings from the broker properties.
func txnConfigFromProps(props map[string]string) (txnConfig, error) {
	c := defaultTxnConfig()
	var err error
	num := func(k string, def int64) int64 {
		v, ok := props[k]
		if !ok || err != nil {
			return def
		}
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil {
			err = fmt.Errorf("cannot parse %s=%q: %w", k, v, e)
			return def
		}
		return n
	}
	ms := func(k string, def time.Duration) time.Duration {
		return time.Duration(num(k, def.Milliseconds())) * time.Millisecond
	}
	c.numPartitions = int32(num("transaction.state.log.num.partitions", int64(c.numPartitions)))
	c.maxTimeout = ms("transaction.max.timeout.ms", c.maxTimeout)
	c.cleanupInterval = ms("transaction.abort.timed.out.transaction.cleanup.interval.ms", c.cleanupInterval)
	c.idExpiration = ms("transactional.id.expiration.ms", c.idExpiration)
	if err != nil {
		return c, err
	}
	if c.numPartitions < 1 {
		return c, fmt.Errorf("transaction.state.log.num.partitions must be >= 1, got %d", c.numPartitions)
	}
	if c.cleanupInterval <= 0 {
		c.cleanupInterval = 10 * time.Second
	}
	return c, nil
}

// txnCoordinator routes transaction requests to the owner shard of their
// __transaction_state partition.
type txnCoordinator struct {
	b     *Broker
	cfg   txnConfig
	topic *TopicImage
	parts []*txnPartition
}

// txnPartition is one __transaction_state partition's coordinator state.
type txnPartition struct {
	tc    *txnCoordinator
	st    *shardState
	key   tpKey
	index int32
	mgr   *txnManager
}

// startTxnCoordinator creates __transaction_state when missing, replays it,
// completes what a restart left half done and starts the timeout check. It
// runs in Start, after the group coordinator, before serving.
func (b *Broker) startTxnCoordinator() error {
	cfg, err := txnConfigFromProps(b.cfg.Props)
	if err != nil {
		return err
	}
	t := b.currentImage().Topics[txnTopic]
	if t == nil {
		t, err = b.createTopic(TopicSpec{Name: txnTopic, Partitions: cfg.numPartitions, ReplicationFactor: 1,
			Configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": b.propOr("transaction.state.log.segment.bytes", "104857600"), "compression.type": "uncompressed"}}, false)
		if err != nil {
			return fmt.Errorf("cannot create %s: %w", txnTopic, err)
		}
	}
	tc := &txnCoordinator{b: b, cfg: cfg, topic: t}
	for _, p := range t.Partitions {
		tp := &txnPartition{tc: tc, st: b.shardFor(t, p.Partition), key: tpKey{t.ID, p.Partition}, index: p.Partition}
		tp.mgr = newTxnManager(tp, cfg, p.LeaderEpoch)
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
		tc.post(tp.st, tp.mgr.finishLoad)
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
		return tp.mgr.loadRecord(r.Key, r.Value)
	})
}

// timeoutLoop runs the timeout check on every partition's shard.
func (tc *txnCoordinator) timeoutLoop() {
	tc.b.every(tc.cfg.cleanupInterval, func() {
		for _, tp := range tc.parts {
			tc.post(tp.st, tp.mgr.checkTimeouts)
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
func askTxn[T any](b *Broker, id string, fn func(m *txnManager, reply func(T))) wire.Reply[T] {
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
	a := initArgs{id: *req.TransactionalID, timeoutMs: req.TransactionTimeoutMillis, pid: -1, epoch: -1, spare: spare}
	if r.Version >= 3 {
		a.pid, a.epoch = req.ProducerID, req.ProducerEpoch
	}
	res, ok := askTxn(tc.b, a.id, func(m *txnManager, reply func(initResult)) {
		m.initProducer(a, reply)
	}).Wait()
	if !ok {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ErrorCode = fencedCode(res.err, r.Version >= 4)
	resp.ProducerID, resp.ProducerEpoch = res.pid, res.epoch
	return resp
}

// fencedCode is err's code, with PRODUCER_FENCED answered as
// INVALID_PRODUCER_EPOCH to versions that predate it (KIP-588).
func fencedCode(err *kerr.Error, fencedKnown bool) int16 {
	if err == nil {
		return 0
	}
	if err == kerr.ProducerFenced && !fencedKnown {
		return kerr.InvalidProducerEpoch.Code
	}
	return err.Code
}

// txnManager's environment on the broker.

func (tp *txnPartition) now() time.Time { return time.Now() }

// persist appends recs as one uncompressed batch with acks=-1 and calls
// done on the shard after the fdatasync.
func (tp *txnPartition) persist(recs []kmsg.Record, done func(error)) {
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
func markerBatch(job markerJob, nowMs int64) []byte {
	key := make([]byte, 4)
	if job.commit {
		binary.BigEndian.PutUint16(key[2:], 1)
	}
	val := make([]byte, 6)
	binary.BigEndian.PutUint32(val[2:], uint32(job.coordEpoch))
	return appendBatch(nil, nowMs, 0x30, job.pid, job.epoch, -1, []kmsg.Record{{Key: key, Value: val}})
}

// writeMarkers appends the job's marker to each of its partitions on their
// owner shards and calls done on tp's shard when every append is durable
// (or failed: a partition that is gone or refuses the marker is logged and
// skipped).
func (tp *txnPartition) writeMarkers(job markerJob, done func()) {
	b := tp.tc.b
	if len(job.parts) == 0 {
		done()
		return
	}
	im := b.currentImage()
	var mu sync.Mutex
	remaining := len(job.parts)
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
	for _, p := range job.parts {
		t := im.Topics[p.topic]
		if t == nil || p.partition < 0 || int(p.partition) >= len(t.Partitions) {
			finish()
			continue
		}
		batch := markerBatch(job, now)
		p := p
		// From a goroutine: a shard never waits on another shard's inbox.
		go b.withPartition(t, p.partition, func(part *partition) {
			if part == nil {
				finish()
				return
			}
			st := part.st
			part.append(batch, -1, func(res produceResult) {
				if res.err != nil {
					b.log.Warn("cannot write transaction marker", "topic", p.topic, "partition", p.partition,
						"producer_id", job.pid, "commit", job.commit, "err", res.err)
					finish()
					return
				}
				if p.topic != offsetsTopic || b.groups == nil || int(p.partition) >= len(b.groups.parts) {
					finish()
					return
				}
				// The group coordinator completes the pending offsets on
				// the __consumer_offsets partition's shard.
				op := b.groups.parts[p.partition]
				go b.groups.post(st, func() {
					op.mgr.completeTxn(job.pid, job.commit)
					finish()
				})
			})
		})
	}
}
