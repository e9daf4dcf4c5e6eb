package txn

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeLog is a __transaction_state partition whose "shard" is one
// goroutine draining a channel.
type fakeLog struct {
	inbox    chan func()
	mu       sync.Mutex
	records  []kmsg.Record // replayed, then appended to
	notOpen  bool
	appended chan struct{} // one value per Append
}

func newFakeLog(t *testing.T, recs []kmsg.Record) *fakeLog {
	l := &fakeLog{inbox: make(chan func(), 64), records: recs, appended: make(chan struct{}, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for fn := range l.inbox {
			fn()
		}
	}()
	t.Cleanup(func() { close(l.inbox); <-done })
	return l
}

func (l *fakeLog) Post(fn func())     { l.inbox <- fn }
func (l *fakeLog) LeaderEpoch() int32 { return 7 }

func (l *fakeLog) Append(recs []kmsg.Record, done func(error)) error {
	if l.notOpen {
		return kerr.NotCoordinator
	}
	l.mu.Lock()
	l.records = append(l.records, recs...)
	l.mu.Unlock()
	l.appended <- struct{}{}
	go done(nil)
	return nil
}

func (l *fakeLog) Replay(fn func(control bool, key, value []byte) error) error {
	l.mu.Lock()
	recs := append([]kmsg.Record(nil), l.records...)
	l.mu.Unlock()
	for _, r := range recs {
		if err := fn(false, r.Key, r.Value); err != nil {
			return err
		}
	}
	return nil
}

type fakeBroker struct {
	coord   *Coordinator
	logs    []Log
	closing chan struct{}
	markers chan MarkerJob
	nextPID int64
	mu      sync.Mutex
}

func (b *fakeBroker) Coordinator() *Coordinator           { return b.coord }
func (b *fakeBroker) StateLogs(cfg Config) ([]Log, error) { return b.logs, nil }
func (b *fakeBroker) Closing() <-chan struct{}            { return b.closing }
func (b *fakeBroker) PartitionCount(string) int32         { return 1 }
func (b *fakeBroker) WriteMarkers(job MarkerJob, done func()) {
	b.markers <- job
	go done()
}
func (b *fakeBroker) NewProducerID() (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextPID++
	return b.nextPID, nil
}

// wait receives from ch or fails after a bound.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestCoordinatorLoadCompletesPrepared: Start replays every partition,
// completes a transaction left in PrepareCommit (markers with the
// partition's leader epoch, then CompleteCommit written), and serves Ask.
func TestCoordinatorLoadCompletesPrepared(t *testing.T) {
	const n = 3
	id := "tx-1"
	home := PartitionFor(id, n)
	now := time.UnixMilli(1_700_000_000_000)
	prepared := txnRecord(&txnMeta{id: id, pid: 42, epoch: 2, timeout: time.Minute, state: txnPrepareCommit,
		parts: map[TP]bool{{Topic: "a", Partition: 0}: true}, start: now, updated: now})
	b := &fakeBroker{closing: make(chan struct{}), markers: make(chan MarkerJob, 4)}
	var logs []*fakeLog
	for i := int32(0); i < n; i++ {
		var recs []kmsg.Record
		if i == home {
			recs = []kmsg.Record{prepared}
		}
		l := newFakeLog(t, recs)
		logs = append(logs, l)
		b.logs = append(b.logs, l)
	}
	defer close(b.closing)
	c, err := Start(b, withPartitions(3), discard())
	if err != nil {
		t.Fatal(err)
	}
	job := wait(t, b.markers, "the markers of the prepared transaction")
	if !job.Commit || job.PID != 42 || job.Epoch != 2 || job.CoordEpoch != 7 || len(job.Parts) != 1 || job.Parts[0] != (TP{Topic: "a", Partition: 0}) {
		t.Fatalf("marker job %+v", job)
	}
	wait(t, logs[home].appended, "the CompleteCommit write")
	// The write is applied by a post that follows it to the shard: ask
	// until it is, a bounded number of round trips through the shard.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		s, ok := Ask(c, id, func(m *Manager, reply func(Summary)) {
			s, _ := m.Summary(id)
			reply(s)
		}).Wait()
		if !ok {
			t.Fatal("Ask not answered")
		}
		if s.State == "CompleteCommit" {
			if s.PID != 42 || s.Epoch != 2 || len(s.Parts) != 0 {
				t.Fatalf("completed summary %+v", s)
			}
			break
		}
		if i == 100000 || time.Now().After(deadline) {
			t.Fatalf("state %q after %d asks, want CompleteCommit", s.State, i)
		}
	}
	logs[home].mu.Lock()
	written := len(logs[home].records)
	logs[home].mu.Unlock()
	if written != 2 {
		t.Fatalf("%d records on the home partition, want the replayed one and CompleteCommit", written)
	}
	if _, ok := Ask[int](nil, id, nil).Wait(); ok {
		t.Fatal("Ask on a nil coordinator answered")
	}
}

// withPartitions is Kafka's default transaction config with n
// __transaction_state partitions.
func withPartitions(n int32) Config {
	c := DefaultConfig()
	c.NumPartitions = n
	return c
}

// TestCoordinatorStartErrors: a bad setting fails ConfigFromProps, a
// config without partitions and a replay error fail Start.
func TestCoordinatorStartErrors(t *testing.T) {
	log := discard()
	b := &fakeBroker{closing: make(chan struct{}), markers: make(chan MarkerJob, 1)}
	defer close(b.closing)
	if _, err := ConfigFromProps(map[string]string{"transaction.max.timeout.ms": "x"}); err == nil || !strings.Contains(err.Error(), "transaction.max.timeout.ms") {
		t.Fatalf("a bad transaction.max.timeout.ms: err = %v, want one naming the key", err)
	}
	if _, err := Start(b, Config{}, log); err == nil {
		t.Fatal("Start accepted a config without partitions")
	}
	bad := newFakeLog(t, []kmsg.Record{{Key: (&kmsg.TxnMetadataKey{TransactionalID: "x"}).AppendTo(nil), Value: []byte{0, 0, 1}}})
	b.logs = []Log{bad}
	if _, err := Start(b, DefaultConfig(), log); err == nil {
		t.Fatal("Start ignored a record that does not decode")
	}
}

// TestPersistNotOpen: a write to a partition that is not open fails at
// once with NOT_COORDINATOR, so the init answers NOT_COORDINATOR.
func TestPersistNotOpen(t *testing.T) {
	l := newFakeLog(t, nil)
	l.notOpen = true
	b := &fakeBroker{closing: make(chan struct{})}
	defer close(b.closing)
	p := &partition{c: &Coordinator{b: b}, log: l}
	var got error = errors.New("not called")
	p.Persist([]kmsg.Record{{}}, func(err error) { got = err })
	if got != kerr.NotCoordinator {
		t.Fatalf("persist on a closed partition: %v", got)
	}
}

// TestProducerIDs: ids come from reserved blocks, one reservation per
// ProducerIDBlockSize ids, and a failed reservation hands out nothing.
func TestProducerIDs(t *testing.T) {
	var p ProducerIDs
	reserved := int64(0)
	reserve := func(size int64) (int64, error) {
		start := reserved
		reserved += size
		return start, nil
	}
	for want := int64(0); want < ProducerIDBlockSize+2; want++ {
		got, err := p.Next(reserve)
		if err != nil || got != want {
			t.Fatalf("id %d: got %d, %v", want, got, err)
		}
	}
	if reserved != 2*ProducerIDBlockSize {
		t.Fatalf("reserved %d ids", reserved)
	}
	var q ProducerIDs
	if id, err := q.Next(func(int64) (int64, error) { return 0, kerr.KafkaStorageError }); err == nil || id != -1 {
		t.Fatalf("failed reservation: %d, %v", id, err)
	}
}

// FuzzLoadRecord: replaying arbitrary __transaction_state records never
// panics, and a record that loads re-encodes to one that loads the same.
func FuzzLoadRecord(f *testing.F) {
	now := time.UnixMilli(1_700_000_000_000)
	r := txnRecord(&txnMeta{id: "x", pid: 7, epoch: 3, timeout: time.Second, state: txnOngoing,
		parts: map[TP]bool{{Topic: "a", Partition: 1}: true}, start: now, updated: now})
	f.Add(r.Key, r.Value)
	f.Add(r.Key, []byte(nil))
	f.Add([]byte{0, 1}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		m := NewManager(&fakeTxnEnv{}, DefaultConfig(), 0)
		if err := m.LoadRecord(key, value); err != nil {
			return
		}
		for id, tm := range m.txns {
			rec := txnRecord(tm)
			m2 := NewManager(&fakeTxnEnv{}, DefaultConfig(), 0)
			if err := m2.LoadRecord(rec.Key, rec.Value); err != nil {
				t.Fatalf("re-encoded %q does not load: %v", id, err)
			}
			got := m2.txns[id]
			if got == nil || got.pid != tm.pid || got.epoch != tm.epoch || got.state != tm.state || len(got.parts) != len(tm.parts) {
				t.Fatalf("round trip of %q: %+v, want %+v", id, got, tm)
			}
		}
	})
}

// discard is a logger that drops everything.
func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
