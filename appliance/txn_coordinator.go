package appliance

// The transaction coordinator (appliance/txn) wired to the broker: the
// txn.Broker, txn.Log and txn.Groups adapters. The coordinator itself,
// its state machine and the transaction APIs live in appliance/txn; what
// stays here is what reaches the broker's partitions, shards, metadata
// image and group coordinator.
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
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/txn"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnTopic is Kafka's internal topic for transaction state.
const txnTopic = txn.Topic

// startTxnCoordinator starts the transaction coordinator (txn.Start). It
// runs in Start, after the group coordinator, before serving.
func (b *Broker) startTxnCoordinator() error {
	c, err := txn.Start(txnBroker{b}, b.cfg.Txn, b.log)
	if err != nil {
		return err
	}
	b.coord.txn = c
	return nil
}

// txnBroker is the broker as the transaction coordinator sees it.
type txnBroker struct{ b *Broker }

// Coordinator implements txn.Broker.
func (a txnBroker) Coordinator() *txn.Coordinator { return a.b.coord.txn }

// Closing implements txn.Broker.
func (a txnBroker) Closing() <-chan struct{} { return a.b.life.closing }

// NewProducerID implements txn.Broker.
func (a txnBroker) NewProducerID() (int64, error) { return a.b.newProducerID() }

// PartitionCount implements txn.Broker.
func (a txnBroker) PartitionCount(topic string) int32 {
	if t := a.b.currentImage().Topics[topic]; t != nil {
		return int32(len(t.Partitions))
	}
	return 0
}

// StateLogs implements txn.Broker: __transaction_state's partitions,
// created when missing.
func (a txnBroker) StateLogs(cfg txn.Config) ([]txn.Log, error) {
	b := a.b
	t := b.currentImage().Topics[txnTopic]
	if t == nil {
		var err error
		t, err = b.createTopic(TopicSpec{Name: txnTopic, Partitions: cfg.NumPartitions, ReplicationFactor: 1,
			Configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": strconv.Itoa(int(b.cfg.TxnSegmentBytes)), "compression.type": "uncompressed"}}, false)
		if err != nil {
			return nil, fmt.Errorf("cannot create %s: %w", txnTopic, err)
		}
	}
	var out []txn.Log
	for _, p := range t.Partitions {
		out = append(out, &txnLog{st: b.shardFor(t, p.Partition), key: tpKey{t.ID, p.Partition}, index: p.Partition, epoch: p.LeaderEpoch})
	}
	return out, nil
}

// txnLog is one __transaction_state partition (txn.Log).
type txnLog struct {
	st    *shardState
	key   tpKey
	index int32
	epoch int32
}

// Post implements txn.Log.
func (l *txnLog) Post(fn func()) { l.st.loop.Post(fn) }

// LeaderEpoch implements txn.Log.
func (l *txnLog) LeaderEpoch() int32 { return l.epoch }

// Replay implements txn.Log (on the shard).
func (l *txnLog) Replay(fn func(control bool, key, value []byte) error) error {
	part := l.st.parts[l.key]
	if part == nil {
		return fmt.Errorf("cannot load %s-%d: partition not open", txnTopic, l.index)
	}
	name := fmt.Sprintf("%s-%d", txnTopic, l.index)
	return replayLog(part.log, name, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
		return fn(b.Attributes&0x20 != 0, r.Key, r.Value)
	})
}

// Append implements txn.Log (on the shard): one uncompressed batch,
// acks=-1.
func (l *txnLog) Append(recs []kmsg.Record, done func(error)) error {
	part := l.st.parts[l.key]
	if part == nil || part.log == nil {
		return kerr.NotCoordinator
	}
	batch := appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
	part.append(batch, -1, func(res produceResult) { done(res.err) })
	return nil
}

// txnGroups is the group coordinator as the transaction handlers see it.
type txnGroups struct{ b *Broker }

// OffsetsPartition implements txn.Groups.
func (g txnGroups) OffsetsPartition(group string) (int32, bool) {
	if g.b.coord.groups == nil {
		return 0, false
	}
	return groupPartition(group, int32(len(g.b.coord.groups.parts))), true
}

// CommitOffsets implements txn.Groups.
func (g txnGroups) CommitOffsets(c txn.OffsetCommit) wire.Reply[[]*kerr.Error] {
	tc := group.TxnCommit{Group: c.Group, MemberID: c.MemberID, InstanceID: c.InstanceID, Generation: c.Generation,
		ProducerID: c.PID, ProducerEpoch: c.Epoch, Offsets: make([]group.TxnOffset, len(c.Items))}
	for i, it := range c.Items {
		tc.Offsets[i] = group.TxnOffset{Topic: it.Topic, Partition: it.Partition, Offset: it.Offset, LeaderEpoch: it.LeaderEpoch, Metadata: it.Metadata}
	}
	return askGroup(g.b, c.Group, func(m *groupManager, reply func([]*kerr.Error)) {
		m.TxnCommitOffsets(tc, reply)
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

// WriteMarkers implements txn.Broker: it appends the job's marker to each
// of its partitions on their owner shards and calls done when every append
// is durable (or failed: a partition that is gone or refuses the marker is
// logged and skipped).
func (a txnBroker) WriteMarkers(job txn.MarkerJob, done func()) {
	b := a.b
	im := b.currentImage()
	var mu sync.Mutex
	remaining := len(job.Parts)
	finish := func() {
		mu.Lock()
		remaining--
		last := remaining == 0
		mu.Unlock()
		if last {
			done()
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
				if p.Topic != offsetsTopic || b.coord.groups == nil || int(p.Partition) >= len(b.coord.groups.parts) {
					finish()
					return
				}
				// The group coordinator completes the pending offsets on
				// the __consumer_offsets partition's shard.
				op := b.coord.groups.parts[p.Partition]
				go b.coord.groups.post(st, func() {
					op.mgr.completeTxn(job.PID, job.Commit)
					finish()
				})
			})
		})
	}
}
