package brokerlife

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/cluster/membership"
	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeController is an active controller in process: a
// membership.Registry and a MemTable behind the Channel, committing each
// decided batch at the next offsets of an in-memory log.
type fakeController struct {
	t     *testing.T
	mu    sync.Mutex
	reg   *membership.Registry
	parts *membership.MemTable
	end   int64 // the log's end offset (its high watermark)
	down  atomic.Bool
	beats atomic.Int64
}

func newFakeController(t *testing.T, session time.Duration) *fakeController {
	reg, err := membership.NewRegistry(membership.Config{ClusterID: "cid", SessionTimeout: session, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeController{t: t, reg: reg, parts: membership.NewMemTable()}
}

// commit applies recs at the next offsets.
func (f *fakeController) commit(recs []records.Record) {
	for _, r := range recs {
		if reg, ok := r.(*records.RegisterBrokerRecord); ok {
			reg.BrokerEpoch = f.end
		}
		if err := f.reg.Apply(f.end, r); err != nil {
			f.t.Error(err)
		}
		if err := f.parts.Apply(r); err != nil {
			f.t.Error(err)
		}
		f.end++
	}
}

func (f *fakeController) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if f.down.Load() {
		return nil, errors.New("controller unreachable")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch req := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		recs, err := f.reg.Register(req, f.end, f.parts)
		if err != nil {
			resp.ErrorCode = errCode(err)
			return resp, nil
		}
		f.commit(recs)
		b, _ := f.reg.Broker(req.BrokerID)
		resp.BrokerEpoch = b.Epoch
		return resp, nil
	case *kmsg.BrokerHeartbeatRequest:
		f.beats.Add(1)
		resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		reply, recs, err := f.reg.Heartbeat(req, f.parts)
		if err != nil {
			resp.ErrorCode = errCode(err)
			return resp, nil
		}
		f.commit(recs)
		resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = reply.IsCaughtUp, reply.IsFenced, reply.ShouldShutDown
		return resp, nil
	}
	f.t.Errorf("unexpected request %T", req)
	return nil, errors.New("unexpected request")
}

func errCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// fenceStale runs the controller's fencing once.
func (f *fakeController) fenceStale() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for recs := f.reg.FenceStale(f.parts); len(recs) > 0; recs = f.reg.FenceStale(f.parts) {
		f.commit(recs)
	}
}

func (f *fakeController) broker(id int32) (membership.Broker, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reg.Broker(id)
}

func (f *fakeController) hwm() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.end
}

// waitUntil checks cond every 2 ms until it holds, failing the test
// after d.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func newManager(t *testing.T, f *fakeController, applied *atomic.Int64) *Manager {
	t.Helper()
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", 9092
	rack := "r1"
	m, err := New(Config{NodeID: 1, ClusterID: "cid", IncarnationID: [16]byte{1}, Listeners: []kmsg.BrokerRegistrationRequestListener{l},
		Rack: &rack, HeartbeatInterval: 10 * time.Millisecond, MetadataOffset: applied.Load, HighWatermark: f.hwm}, f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestManagerLifecycle: the broker registers, stays fenced until it has
// caught up with the metadata log, is unfenced, is fenced by the
// controller after its heartbeats stop reaching it, is unfenced again when
// they resume, and at shutdown the controller lets it go.
func TestManagerLifecycle(t *testing.T) {
	f := newFakeController(t, 300*time.Millisecond)
	// Records before the broker's registration: it must apply them.
	f.commit([]records.Record{&records.NoOpRecord{}, &records.NoOpRecord{}, &records.NoOpRecord{}})
	var applied atomic.Int64
	applied.Store(-1)
	m := newManager(t, f, &applied)
	m.Start()
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := m.WaitFor(ctx, Fenced); err != nil {
		t.Fatal(err)
	}
	b, ok := f.broker(1)
	if !ok || b.Epoch != 3 || m.Epoch() != 3 || *b.Rack != "r1" || b.Endpoints[0].Port != 9092 {
		t.Fatalf("registration %+v (ok %v), manager epoch %d", b, ok, m.Epoch())
	}
	// Heartbeats go on while it is behind; it stays fenced.
	start := f.beats.Load()
	waitUntil(t, "heartbeats while behind", 5*time.Second, func() bool { return f.beats.Load() >= start+3 })
	if b, _ := f.broker(1); !b.Fenced || m.State() != Fenced {
		t.Fatalf("unfenced before catching up: %+v, state %s", b, m.State())
	}
	// It applies up to its registration record: unfenced.
	applied.Store(3)
	if err := m.WaitFor(ctx, Running); err != nil {
		t.Fatal(err)
	}
	if b, _ := f.broker(1); b.Fenced {
		t.Fatal("manager running, controller has it fenced")
	}

	// The controller stops hearing from it: fenced after the session
	// timeout.
	f.down.Store(true)
	waitUntil(t, "fencing after the session timeout", 5*time.Second, func() bool {
		f.fenceStale()
		b, _ := f.broker(1)
		return b.Fenced
	})
	applied.Store(f.hwm() - 1)
	f.down.Store(false)
	// It never saw its fencing; its next answered heartbeat, caught up,
	// unfences it with the same epoch.
	waitUntil(t, "unfencing after the heartbeats resume", 5*time.Second, func() bool { b, _ := f.broker(1); return !b.Fenced })
	if b, _ := f.broker(1); b.Epoch != 3 || m.State() != Running {
		t.Fatalf("after return: %+v, state %s", b, m.State())
	}

	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if m.State() != ShutDown {
		t.Fatalf("state after shutdown %s", m.State())
	}
	if b, _ := f.broker(1); !b.Fenced {
		t.Fatalf("after controlled shutdown the broker is %+v, want fenced", b)
	}
}

// TestManagerRegistersAgain: a broker whose registration the controller
// dropped (its heartbeat answered STALE_BROKER_EPOCH) registers again.
func TestManagerRegistersAgain(t *testing.T) {
	f := newFakeController(t, time.Hour)
	var applied atomic.Int64
	applied.Store(100)
	m := newManager(t, f, &applied)
	m.Start()
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.WaitFor(ctx, Running); err != nil {
		t.Fatal(err)
	}
	first := m.Epoch()
	// The controller unregisters it: the next heartbeat is stale and the
	// manager registers again, with a new epoch.
	f.mu.Lock()
	recs, err := f.reg.Unregister(&kmsg.UnregisterBrokerRequest{BrokerID: 1}, f.parts)
	if err != nil {
		t.Fatal(err)
	}
	f.commit(recs)
	f.mu.Unlock()
	applied.Store(100)
	waitUntil(t, "a new registration", 5*time.Second, func() bool { b, ok := f.broker(1); return ok && b.Epoch > first })
	if err := m.WaitFor(ctx, Running); err != nil {
		t.Fatal(err)
	}
	if m.Epoch() <= first {
		t.Fatalf("epoch %d after re-registering, first %d", m.Epoch(), first)
	}
}

// TestManagerShutdownUnregistered: a manager that never reached a
// controller stops at Shutdown without one.
func TestManagerShutdownUnregistered(t *testing.T) {
	f := newFakeController(t, time.Hour)
	f.down.Store(true)
	var applied atomic.Int64
	m := newManager(t, f, &applied)
	m.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if m.State() != ShutDown || m.Epoch() != -1 {
		t.Fatalf("state %s epoch %d", m.State(), m.Epoch())
	}
	if _, err := New(Config{}, f); err == nil {
		t.Fatal("config without offset functions accepted")
	}
}
