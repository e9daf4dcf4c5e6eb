package txn

// The transaction coordinator's place in the broker. Transactional id x is
// coordinated by __transaction_state partition
// abs(javaHashCode(x)) % transaction.state.log.num.partitions, and its state
// lives in that partition's Manager on the partition's owner shard, the
// same pattern as the group coordinator: handlers post closures there and
// wait for the answer off the shard; a ticker posts the timeout check
// (transaction.abort.timed.out.transaction.cleanup.interval.ms) to every
// partition's shard.
//
// Markers are control batches (attributes control|transactional, producer
// id and epoch of the transaction, base sequence -1) with one record: key
// version int16 0 + type int16 (0 abort, 1 commit), value version int16 0 +
// coordinator epoch int32. The broker appends them with acks=-1 on each
// partition's owner shard (Broker.WriteMarkers); on a __consumer_offsets
// partition the group coordinator then makes the transaction's pending
// offsets visible (commit) or drops them (abort).

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Log is one __transaction_state partition as the coordinator reaches it.
type Log interface {
	// Post runs fn on the partition's owner shard; it does not wait.
	Post(fn func())
	// Append appends recs as one uncompressed batch with acks=-1 (on the
	// owner shard) and calls done once the batch is durable, or failed,
	// from any goroutine but never from a shard loop's own call stack
	// waiting on another shard. An error returned at once (the partition
	// is not open here) means done is not called.
	Append(recs []kmsg.Record, done func(error)) error
	// Replay calls fn with every record of the partition's log, in order,
	// and whether its batch is a control batch. It runs on the owner shard.
	Replay(fn func(control bool, key, value []byte) error) error
	// LeaderEpoch is the partition's leader epoch, the coordinator epoch
	// its markers carry.
	LeaderEpoch() int32
}

// Broker is what the transaction coordinator and its handlers need of the
// broker that runs them.
type Broker interface {
	// Coordinator is the running coordinator, nil before Start (or when
	// it failed).
	Coordinator() *Coordinator
	// StateLogs returns the __transaction_state partitions in partition
	// order, creating the topic with cfg.NumPartitions when missing.
	StateLogs(cfg Config) ([]Log, error)
	// WriteMarkers appends job's marker to each of its partitions on their
	// owner shards and calls done once, from any goroutine, when every
	// append is durable or failed (a partition that is gone or refuses the
	// marker is skipped); job.Parts is never empty.
	WriteMarkers(job MarkerJob, done func())
	// NewProducerID returns a producer id never handed out before (its
	// errors wrap a Kafka error for the answer).
	NewProducerID() (int64, error)
	// Closing is closed when the broker starts to close.
	Closing() <-chan struct{}
	// PartitionCount is the number of partitions of topic in the current
	// metadata image, 0 when it does not exist.
	PartitionCount(topic string) int32
}

// Coordinator routes transaction requests to the owner shard of their
// __transaction_state partition.
type Coordinator struct {
	b     Broker
	cfg   Config
	parts []*partition
}

// partition is one __transaction_state partition's coordinator state; it
// is the Env of its Manager.
type partition struct {
	c   *Coordinator
	log Log
	mgr *Manager
}

// Start creates __transaction_state when missing, replays it, completes
// what a restart left half done and starts the timeout check (until
// b.Closing). The broker runs it once, after the group coordinator, before
// serving, and stores the Coordinator where Broker.Coordinator finds it.
//
// cfg is the parsed configuration (ConfigFromProps, done once at startup by
// the broker); a cfg without partitions is an error.
func Start(b Broker, cfg Config, log *slog.Logger) (*Coordinator, error) {
	if cfg.NumPartitions < 1 {
		return nil, fmt.Errorf("cannot start the transaction coordinator: transaction.state.log.num.partitions must be >= 1, got %d", cfg.NumPartitions)
	}
	logs, err := b.StateLogs(cfg)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{b: b, cfg: cfg}
	for _, l := range logs {
		p := &partition{c: c, log: l}
		p.mgr = NewManager(p, cfg, l.LeaderEpoch())
		c.parts = append(c.parts, p)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var loadErr error
	start := time.Now()
	for _, p := range c.parts {
		wg.Add(1)
		p.log.Post(func() {
			defer wg.Done()
			if err := p.load(); err != nil {
				mu.Lock()
				loadErr = errors.Join(loadErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if loadErr != nil {
		return nil, loadErr
	}
	for _, p := range c.parts {
		c.post(p.log, p.mgr.FinishLoad)
	}
	log.Info("transaction coordinator loaded", "partitions", len(c.parts), "took", time.Since(start).Round(time.Millisecond).String())
	go c.timeoutLoop()
	return c, nil
}

// load replays the partition's log into its Manager (on its shard).
func (p *partition) load() error {
	return p.log.Replay(func(control bool, key, value []byte) error {
		if control { // markers in __transaction_state carry no state
			return nil
		}
		return p.mgr.LoadRecord(key, value)
	})
}

// timeoutLoop runs the timeout check on every partition's shard until the
// broker closes.
func (c *Coordinator) timeoutLoop() {
	t := time.NewTicker(c.cfg.CleanupInterval)
	defer t.Stop()
	for {
		select {
		case <-c.b.Closing():
			return
		case <-t.C:
			for _, p := range c.parts {
				c.post(p.log, p.mgr.CheckTimeouts)
			}
		}
	}
}

// post runs fn on l's shard unless the broker is closing.
func (c *Coordinator) post(l Log, fn func()) {
	select {
	case <-c.b.Closing():
		return
	default:
	}
	l.Post(fn)
}

// PartitionFor is the partition of n that coordinates key:
// abs(javaHashCode(key)) % n, as Kafka places transactional ids and groups.
func PartitionFor(key string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(key)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0 // Kafka's Utils.abs
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// partitionOf is the coordinator partition of a transactional id.
func (c *Coordinator) partitionOf(id string) *partition {
	return c.parts[PartitionFor(id, int32(len(c.parts)))]
}

// Ask runs fn with id's Manager on its coordinator shard (wire.Ask); the
// Reply is the zero one when c is nil (the coordinator is not running).
func Ask[T any](c *Coordinator, id string, fn func(m *Manager, reply func(T))) wire.Reply[T] {
	if c == nil {
		return wire.Reply[T]{}
	}
	p := c.partitionOf(id)
	return wire.Ask(c.b.Closing(), p.log.Post, func(reply func(T)) { fn(p.mgr, reply) })
}

// Manager's environment on the broker.

// Now is the wall clock.
func (p *partition) Now() time.Time { return time.Now() }

// Persist appends recs with acks=-1 and calls done on the shard after the
// fdatasync.
func (p *partition) Persist(recs []kmsg.Record, done func(error)) {
	err := p.log.Append(recs, func(err error) {
		go p.c.post(p.log, func() { done(err) })
	})
	if err != nil {
		done(err)
	}
}

// WriteMarkers has the broker write job's markers and calls done on p's
// shard when they are written.
func (p *partition) WriteMarkers(job MarkerJob, done func()) {
	if len(job.Parts) == 0 {
		done()
		return
	}
	p.c.b.WriteMarkers(job, func() { go p.c.post(p.log, done) })
}
