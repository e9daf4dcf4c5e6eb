package txn

// This file is the transaction coordinator's state machine (KIP-98), as
// Kafka's TransactionCoordinator runs it with transaction version 1.
//
// A Manager owns the transactional ids of one __transaction_state
// partition. It is driven by method calls on the partition's owner shard and
// never blocks: every state change is first written to the partition
// (Env.Persist, Kafka's TxnMetadataKey/TxnMetadataValue v0 schemas) and
// applied in memory when the write is durable; while a write or a round of
// markers is in flight the id is busy and other requests answer
// CONCURRENT_TRANSACTIONS.
//
// States: Empty -> Ongoing (AddPartitionsToTxn / AddOffsetsToTxn) ->
// PrepareCommit|PrepareAbort (EndTxn, or a timeout/fence abort) -> markers
// written to every partition of the transaction (Env.WriteMarkers) ->
// CompleteCommit|CompleteAbort -> Ongoing again with the next
// AddPartitionsToTxn. InitProducerId bumps the epoch; an open transaction is
// aborted first with a bumped epoch (fencing the old producer), as are
// transactions that pass transaction.timeout.ms. After a restart Prepare*
// states are completed at once and Ongoing ones time out.
// Tests drive it with a fake clock (TestTxnScripts, testdata/).

import (
	"math"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction states as stored in TxnMetadataValue.State.
const (
	txnEmpty             kmsg.TransactionState = 0
	txnOngoing           kmsg.TransactionState = 1
	txnPrepareCommit     kmsg.TransactionState = 2
	txnPrepareAbort      kmsg.TransactionState = 3
	txnCompleteCommit    kmsg.TransactionState = 4
	txnCompleteAbort     kmsg.TransactionState = 5
	txnDead              kmsg.TransactionState = 6
	txnPrepareEpochFence kmsg.TransactionState = 7
)

// TP is a partition taking part in a transaction.
type TP struct {
	Topic     string
	Partition int32
}

// txnMeta is one transactional id's state.
type txnMeta struct {
	id               string
	pid, lastPid     int64
	epoch, lastEpoch int16
	timeout          time.Duration
	state            kmsg.TransactionState
	parts            map[TP]bool
	start, updated   time.Time
	// busy: a state write or a round of markers is in flight.
	busy bool
	// fenced: the coordinator bumped the epoch itself (timeout or fence);
	// the producer may still re-init with the epoch before it (KIP-360).
	fenced bool
}

// sortedParts is t.parts sorted by topic and partition.
func (t *txnMeta) sortedParts() []TP {
	out := make([]TP, 0, len(t.parts))
	for p := range t.parts {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Config holds the broker's transaction settings.
type Config struct {
	NumPartitions   int32         // transaction.state.log.num.partitions
	MaxTimeout      time.Duration // transaction.max.timeout.ms
	CleanupInterval time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms
	IDExpiration    time.Duration // transactional.id.expiration.ms
}

// DefaultConfig is Kafka's defaults for the transaction settings.
func DefaultConfig() Config {
	return Config{NumPartitions: 50, MaxTimeout: 15 * time.Minute, CleanupInterval: 10 * time.Second, IDExpiration: 7 * 24 * time.Hour}
}

// MarkerJob is one round of transaction markers.
type MarkerJob struct {
	PID        int64 // the transaction's producer id
	Epoch      int16 // and epoch
	Commit     bool  // COMMIT (true) or ABORT markers
	CoordEpoch int32 // the coordinator epoch the marker carries
	Parts      []TP  // the partitions that get a marker, sorted
}

// Env is what a Manager needs from the broker: a clock, durable
// appends to its __transaction_state partition, and marker writes to the
// transaction's partitions. Callbacks run on the owning shard.
type Env interface {
	Now() time.Time
	Persist(recs []kmsg.Record, done func(error))
	WriteMarkers(job MarkerJob, done func())
}

// Manager owns the transactional ids of one __transaction_state partition.
type Manager struct {
	env        Env
	cfg        Config
	coordEpoch int32
	txns       map[string]*txnMeta
}

// NewManager returns an empty Manager; coordEpoch is the leader epoch of
// its __transaction_state partition, written into markers.
func NewManager(env Env, cfg Config, coordEpoch int32) *Manager {
	return &Manager{env: env, cfg: cfg, coordEpoch: coordEpoch, txns: map[string]*txnMeta{}}
}

// txnRecord encodes t as a __transaction_state record.
func txnRecord(t *txnMeta) kmsg.Record {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: t.id}
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID, v.ProducerEpoch = t.pid, t.epoch
	v.TimeoutMillis = int32(t.timeout / time.Millisecond)
	v.State = t.state
	v.Topics = []kmsg.TxnMetadataValueTopic{}
	for _, p := range t.sortedParts() {
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != p.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: p.Topic})
		}
		vt := &v.Topics[len(v.Topics)-1]
		vt.Partitions = append(vt.Partitions, p.Partition)
	}
	v.LastUpdateTimestamp = t.updated.UnixMilli()
	v.StartTimestamp = -1
	if !t.start.IsZero() {
		v.StartTimestamp = t.start.UnixMilli()
	}
	return kmsg.Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// write persists next as t's new state and applies it once durable.
func (m *Manager) write(t *txnMeta, next txnMeta, done func(error)) {
	t.busy = true
	next.busy = false
	next.updated = m.env.Now()
	m.env.Persist([]kmsg.Record{txnRecord(&next)}, func(err error) {
		t.busy = false
		if err == nil {
			*t = next
		}
		done(err)
	})
}

// InitArgs is an InitProducerId with a transactional id.
type InitArgs struct {
	ID        string
	TimeoutMs int32
	PID       int64 // KIP-360: the producer's current id, or -1
	Epoch     int16
	Spare     int64 // a fresh producer id, used when one is needed
}

// InitResult is InitProducerId's answer: an error, or the id and epoch.
type InitResult struct {
	Err   *kerr.Error
	PID   int64
	Epoch int16
}

// InitProducer handles InitProducerId for a transactional id.
func (m *Manager) InitProducer(a InitArgs, done func(InitResult)) {
	fail := func(err *kerr.Error) { done(InitResult{Err: err, PID: -1, Epoch: -1}) }
	timeout := time.Duration(a.TimeoutMs) * time.Millisecond
	if a.TimeoutMs <= 0 || timeout > m.cfg.MaxTimeout {
		fail(kerr.InvalidTransactionTimeout)
		return
	}
	t := m.txns[a.ID]
	if t == nil {
		if a.PID >= 0 {
			// The producer's id is unknown here (KIP-360): it may start over.
			a.PID = -1
		}
		t = &txnMeta{id: a.ID, pid: -1, lastPid: -1, epoch: -1, lastEpoch: -1}
		m.txns[a.ID] = t
		next := *t
		next.pid, next.epoch, next.timeout, next.state, next.parts = a.Spare, 0, timeout, txnEmpty, nil
		next.start = time.Time{}
		m.write(t, next, func(err error) {
			if err != nil {
				if t.pid < 0 {
					delete(m.txns, a.ID)
				}
				fail(kerr.NotCoordinator)
				return
			}
			done(InitResult{PID: t.pid, Epoch: t.epoch})
		})
		return
	}
	if t.busy {
		fail(kerr.ConcurrentTransactions)
		return
	}
	if a.PID >= 0 {
		switch {
		case a.PID == t.pid && a.Epoch == t.epoch:
		case a.PID == t.pid && t.fenced && a.Epoch == t.epoch-1:
		case a.PID == t.lastPid && a.Epoch == t.lastEpoch && t.state == txnEmpty:
			// A retry of the InitProducerId that gave the current epoch.
			done(InitResult{PID: t.pid, Epoch: t.epoch})
			return
		default:
			fail(kerr.ProducerFenced)
			return
		}
	}
	switch t.state {
	case txnPrepareCommit, txnPrepareAbort:
		fail(kerr.ConcurrentTransactions)
		return
	case txnOngoing:
		// Fence the old producer: abort its transaction with a bumped
		// epoch first; the client retries.
		m.fenceAbort(t, func() {})
		fail(kerr.ConcurrentTransactions)
		return
	}
	next := *t
	next.lastPid, next.lastEpoch = t.pid, t.epoch
	if t.epoch >= math.MaxInt16-1 {
		next.pid, next.epoch = a.Spare, 0 // epoch exhausted: a new producer id
	} else {
		next.epoch = t.epoch + 1
	}
	next.timeout, next.state, next.parts, next.start, next.fenced = timeout, txnEmpty, nil, time.Time{}, false
	m.write(t, next, func(err error) {
		if err != nil {
			fail(kerr.NotCoordinator)
			return
		}
		done(InitResult{PID: t.pid, Epoch: t.epoch})
	})
}

// check is the common producer check of AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn.
func (m *Manager) check(id string, pid int64, epoch int16) (*txnMeta, *kerr.Error) {
	t := m.txns[id]
	switch {
	case t == nil || t.pid != pid:
		return nil, kerr.InvalidProducerIDMapping
	case epoch != t.epoch:
		return nil, kerr.ProducerFenced
	case t.busy:
		return nil, kerr.ConcurrentTransactions
	}
	return t, nil
}

// AddPartitions adds partitions to the producer's transaction, starting
// one if none is open.
func (m *Manager) AddPartitions(id string, pid int64, epoch int16, parts []TP, done func(*kerr.Error)) {
	t, err := m.check(id, pid, epoch)
	if err != nil {
		done(err)
		return
	}
	if t.state == txnPrepareCommit || t.state == txnPrepareAbort {
		done(kerr.ConcurrentTransactions)
		return
	}
	if t.state == txnOngoing {
		all := true
		for _, p := range parts {
			all = all && t.parts[p]
		}
		if all {
			done(nil)
			return
		}
	}
	next := *t
	next.parts = map[TP]bool{}
	if t.state == txnOngoing {
		for p := range t.parts {
			next.parts[p] = true
		}
	} else {
		next.start = m.env.Now()
	}
	for _, p := range parts {
		next.parts[p] = true
	}
	next.state = txnOngoing
	m.write(t, next, func(err error) {
		if err != nil {
			done(kerr.NotCoordinator)
			return
		}
		done(nil)
	})
}

// Verify answers whether a produce of pid/epoch to tp belongs to the
// producer's open transaction (the partition was added to it).
func (m *Manager) Verify(id string, pid int64, epoch int16, tp TP) *kerr.Error {
	t := m.txns[id]
	switch {
	case t == nil || t.pid != pid:
		return kerr.InvalidProducerIDMapping
	case epoch < t.epoch:
		return kerr.InvalidProducerEpoch
	case epoch != t.epoch || t.state != txnOngoing || !t.parts[tp]:
		return kerr.InvalidTxnState
	}
	return nil
}

// EndTxn commits or aborts the producer's transaction: Prepare* is
// written, the markers go to every partition, Complete* is written, and
// then done runs.
func (m *Manager) EndTxn(id string, pid int64, epoch int16, commit bool, done func(*kerr.Error)) {
	t, err := m.check(id, pid, epoch)
	if err != nil {
		done(err)
		return
	}
	switch {
	case t.state == txnOngoing:
	case t.state == txnPrepareCommit && commit, t.state == txnPrepareAbort && !commit:
		done(kerr.ConcurrentTransactions)
		return
	case t.state == txnCompleteCommit && commit, t.state == txnCompleteAbort && !commit:
		done(nil) // a retry
		return
	default:
		done(kerr.InvalidTxnState)
		return
	}
	next := *t
	next.state = txnPrepareAbort
	if commit {
		next.state = txnPrepareCommit
	}
	m.write(t, next, func(err error) {
		if err != nil {
			done(kerr.NotCoordinator)
			return
		}
		m.complete(t, func() { done(nil) })
	})
}

// fenceAbort aborts t's open transaction with a bumped epoch.
func (m *Manager) fenceAbort(t *txnMeta, done func()) {
	next := *t
	if t.epoch < math.MaxInt16-1 {
		next.epoch = t.epoch + 1
		next.fenced = true
	}
	next.state = txnPrepareAbort
	m.write(t, next, func(err error) {
		if err != nil {
			done()
			return
		}
		m.complete(t, done)
	})
}

// complete writes the markers of a Prepare* state and then Complete*.
func (m *Manager) complete(t *txnMeta, done func()) {
	commit := t.state == txnPrepareCommit
	job := MarkerJob{PID: t.pid, Epoch: t.epoch, Commit: commit, CoordEpoch: m.coordEpoch, Parts: t.sortedParts()}
	t.busy = true
	m.env.WriteMarkers(job, func() {
		t.busy = false
		next := *t
		next.state = txnCompleteAbort
		if commit {
			next.state = txnCompleteCommit
		}
		next.parts = nil
		m.write(t, next, func(error) { done() })
	})
}

// CheckTimeouts aborts transactions open longer than their timeout,
// completes Prepare* states left unfinished (after a restart or a failed
// write), and forgets idle ids after transactional.id.expiration.ms.
func (m *Manager) CheckTimeouts() {
	now := m.env.Now()
	ids := make([]string, 0, len(m.txns))
	for id := range m.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t := m.txns[id]
		if t.busy {
			continue
		}
		switch t.state {
		case txnOngoing:
			if now.Sub(t.start) > t.timeout {
				m.fenceAbort(t, func() {})
			}
		case txnPrepareCommit, txnPrepareAbort:
			m.complete(t, func() {})
		case txnEmpty, txnCompleteCommit, txnCompleteAbort:
			if m.cfg.IDExpiration > 0 && now.Sub(t.updated) > m.cfg.IDExpiration {
				t.busy = true
				k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
				m.env.Persist([]kmsg.Record{{Key: k.AppendTo(nil)}}, func(err error) {
					t.busy = false
					if err == nil && m.txns[id] == t {
						delete(m.txns, id)
					}
				})
			}
		}
	}
}

// LoadRecord applies one record replayed from the partition's log.
func (m *Manager) LoadRecord(key, value []byte) error {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil || k.Version != 0 {
		return nil // not a transaction record: skip it
	}
	if value == nil {
		delete(m.txns, k.TransactionalID)
		return nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return err
	}
	t := m.txns[k.TransactionalID]
	if t == nil {
		t = &txnMeta{id: k.TransactionalID, lastPid: -1, lastEpoch: -1}
		m.txns[k.TransactionalID] = t
	}
	if t.pid != v.ProducerID {
		t.lastPid, t.lastEpoch = t.pid, t.epoch
	} else if t.epoch != v.ProducerEpoch {
		t.lastEpoch = t.epoch
	}
	t.pid, t.epoch = v.ProducerID, v.ProducerEpoch
	t.timeout = time.Duration(v.TimeoutMillis) * time.Millisecond
	t.state = v.State
	t.parts = map[TP]bool{}
	for _, vt := range v.Topics {
		for _, p := range vt.Partitions {
			t.parts[TP{vt.Topic, p}] = true
		}
	}
	t.updated = time.UnixMilli(v.LastUpdateTimestamp)
	t.start = time.Time{}
	if v.StartTimestamp >= 0 {
		t.start = time.UnixMilli(v.StartTimestamp)
	}
	return nil
}

// FinishLoad completes the transactions a restart left in Prepare*.
func (m *Manager) FinishLoad() {
	ids := make([]string, 0, len(m.txns))
	for id, t := range m.txns {
		if t.state == txnPrepareCommit || t.state == txnPrepareAbort {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		m.complete(m.txns[id], func() {})
	}
}

// Summary is one transactional id as DescribeTransactions and
// ListTransactions show it.
type Summary struct {
	ID        string
	State     string // Kafka's state name
	PID       int64
	Epoch     int16
	TimeoutMs int32
	StartMs   int64 // start of the open transaction, or -1
	Parts     []TP  // sorted
}

func txnStateName(s kmsg.TransactionState) string { return s.String() }

// Summary describes one transactional id; false when it is unknown.
func (m *Manager) Summary(id string) (Summary, bool) {
	t := m.txns[id]
	if t == nil {
		return Summary{}, false
	}
	s := Summary{ID: id, State: txnStateName(t.state), PID: t.pid, Epoch: t.epoch, TimeoutMs: int32(t.timeout / time.Millisecond), StartMs: -1, Parts: t.sortedParts()}
	if !t.start.IsZero() && t.state != txnEmpty {
		s.StartMs = t.start.UnixMilli()
	}
	return s, true
}

// List describes every transactional id, sorted by id.
func (m *Manager) List() []Summary {
	out := make([]Summary, 0, len(m.txns))
	for id := range m.txns {
		s, _ := m.Summary(id)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
