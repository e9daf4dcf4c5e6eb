package brokerlife

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultHeartbeatInterval is Kafka's broker.heartbeat.interval.ms
// default.
const DefaultHeartbeatInterval = 2 * time.Second

// Channel sends one request to the active controller and returns its
// response (*kmsg.BrokerRegistrationResponse for a
// *kmsg.BrokerRegistrationRequest, *kmsg.BrokerHeartbeatResponse for a
// *kmsg.BrokerHeartbeatRequest). An error means no answer (no active
// controller known, connection lost, ctx done); the manager retries at its
// next heartbeat interval. Send must be safe to call from the manager's
// goroutine while the caller uses the channel elsewhere.
type Channel interface {
	Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// Config configures a Manager.
type Config struct {
	// NodeID is node.id; ClusterID the cluster.id of meta.properties.
	NodeID    int32
	ClusterID string
	// IncarnationID identifies this run of the process (a random UUID per
	// start).
	IncarnationID [16]byte
	// Listeners are the advertised listeners; Rack is broker.rack (nil:
	// unset); Features the supported feature level ranges; LogDirs the log
	// directory ids.
	Listeners []kmsg.BrokerRegistrationRequestListener
	Rack      *string
	Features  []kmsg.BrokerRegistrationRequestFeature
	LogDirs   [][16]byte
	// HeartbeatInterval is broker.heartbeat.interval.ms
	// (DefaultHeartbeatInterval when zero).
	HeartbeatInterval time.Duration
	// MetadataOffset returns the offset of the last metadata record this
	// broker applied (-1 for none); HighWatermark the metadata log's high
	// watermark (exclusive end of the committed records) as the broker
	// last learned it. The broker asks to be unfenced once it has applied
	// every record below the high watermark it saw after registering.
	MetadataOffset func() int64
	HighWatermark  func() int64
	// Logger gets state changes; nil discards.
	Logger *slog.Logger
}

// State is the broker's lifecycle state.
type State int8

// The lifecycle states.
const (
	// Registering: no registration has been answered yet.
	Registering State = iota
	// Fenced: registered, fenced by the controller (not caught up yet, or
	// its session expired).
	Fenced
	// Running: registered and unfenced.
	Running
	// PendingShutdown: a controlled shutdown was asked for and the
	// controller has not let the broker go yet.
	PendingShutdown
	// ShutDown: the controller let it go, or the manager stopped.
	ShutDown
)

// String is the state's name.
func (s State) String() string {
	switch s {
	case Registering:
		return "REGISTERING"
	case Fenced:
		return "FENCED"
	case Running:
		return "RUNNING"
	case PendingShutdown:
		return "PENDING_CONTROLLED_SHUTDOWN"
	case ShutDown:
		return "SHUTDOWN"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// Manager runs a broker's registration, heartbeats and controlled
// shutdown.
type Manager struct {
	cfg Config
	ch  Channel
	log *slog.Logger

	mu       sync.Mutex
	state    State
	epoch    int64
	caughtUp bool  // reached the high watermark seen at registration
	target   int64 // that high watermark
	changed  chan struct{}

	shutdown chan struct{} // closed by Shutdown: ask for it
	stop     chan struct{} // closed by Close: leave now
	done     chan struct{} // closed when the loop ends
	once     sync.Once
	stopOnce sync.Once
}

// New returns a manager that talks to the controller through ch; it fails
// when cfg lacks the offset functions.
func New(cfg Config, ch Channel) (*Manager, error) {
	if cfg.MetadataOffset == nil || cfg.HighWatermark == nil || ch == nil {
		return nil, errors.New("cannot start broker lifecycle manager: no metadata offset, high watermark or controller channel")
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, ch: ch, log: log, epoch: -1, changed: make(chan struct{}),
		shutdown: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start runs the manager's loop on a goroutine of its own until Shutdown
// completes or Close.
func (m *Manager) Start() { go m.run() }

// State returns the current state.
func (m *Manager) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Epoch returns the broker epoch of the current registration, -1 before
// one.
func (m *Manager) Epoch() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// WaitFor blocks until the state is want, ctx is done (its error) or the
// loop ended in another state.
func (m *Manager) WaitFor(ctx context.Context, want State) error {
	for {
		m.mu.Lock()
		st, ch := m.state, m.changed
		m.mu.Unlock()
		if st == want {
			return nil
		}
		select {
		case <-ch:
		case <-m.done:
			if s := m.State(); s != want {
				return fmt.Errorf("broker lifecycle ended in state %s, not %s", s, want)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("broker lifecycle state %s, waiting for %s: %w", st, want, ctx.Err())
		}
	}
}

// Shutdown asks the controller for a controlled shutdown (the heartbeats
// carry WantShutdown) and waits until it lets the broker go or ctx is
// done; either way the loop stops. A broker that never registered stops
// at once.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.once.Do(func() { close(m.shutdown) })
	var err error
	select {
	case <-m.done:
	case <-ctx.Done():
		err = fmt.Errorf("controlled shutdown not finished: %w", ctx.Err())
		m.log.Warn("controlled shutdown did not finish; stopping anyway", "err", err)
	}
	m.Close()
	return err
}

// Close stops the loop without a controlled shutdown and waits for it.
func (m *Manager) Close() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
}

func (m *Manager) setState(s State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == s {
		return
	}
	m.log.Info("broker lifecycle state changes", "broker", m.cfg.NodeID, "from", m.state, "to", s, "epoch", m.epoch)
	m.state = s
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *Manager) shuttingDown() bool {
	select {
	case <-m.shutdown:
		return true
	default:
		return false
	}
}

func (m *Manager) run() {
	defer close(m.done)
	defer m.setState(ShutDown)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	shutdown := m.shutdown // nil once seen: it cuts one wait short
	wait := time.Duration(0)
	for {
		t := time.NewTimer(wait)
		select {
		case <-m.stop:
			t.Stop()
			return
		case <-t.C:
		case <-shutdown:
			t.Stop()
			shutdown = nil // ask at once, then at every interval
		}
		wait = m.cfg.HeartbeatInterval
		if m.Epoch() < 0 {
			if m.shuttingDown() {
				return // never registered: nothing to hand over
			}
			m.register(ctx)
		} else if m.heartbeat(ctx) {
			return
		}
	}
}

// register sends a BrokerRegistration; on success the broker is Fenced
// with its new epoch and must catch up to the high watermark it sees now.
func (m *Manager) register(ctx context.Context) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = m.cfg.NodeID, m.cfg.ClusterID, m.cfg.IncarnationID
	req.Listeners, req.Rack, req.Features, req.LogDirs = m.cfg.Listeners, m.cfg.Rack, m.cfg.Features, m.cfg.LogDirs
	resp, err := m.ch.Send(ctx, req)
	if err != nil {
		m.log.Debug("broker registration not answered; retrying", "err", err)
		return
	}
	r, ok := resp.(*kmsg.BrokerRegistrationResponse)
	if !ok {
		m.log.Warn("broker registration answered with the wrong response", "type", fmt.Sprintf("%T", resp))
		return
	}
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		m.log.Warn("broker registration refused; retrying", "err", err)
		return
	}
	m.mu.Lock()
	m.epoch = r.BrokerEpoch
	m.caughtUp = false
	m.target = m.cfg.HighWatermark()
	m.mu.Unlock()
	m.setState(Fenced)
}

// heartbeat sends one BrokerHeartbeat and applies the answer; it returns
// true when the controller let a shutting-down broker go.
func (m *Manager) heartbeat(ctx context.Context) bool {
	off := m.cfg.MetadataOffset()
	m.mu.Lock()
	if !m.caughtUp && off+1 >= m.target {
		m.caughtUp = true
		m.log.Info("broker caught up with the metadata log", "broker", m.cfg.NodeID, "offset", off, "highWatermark", m.target)
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = m.cfg.NodeID, m.epoch, off
	req.WantFence = !m.caughtUp
	m.mu.Unlock()
	req.WantShutdown = m.shuttingDown()
	resp, err := m.ch.Send(ctx, req)
	if err != nil {
		m.log.Debug("broker heartbeat not answered", "err", err)
		return false
	}
	r, ok := resp.(*kmsg.BrokerHeartbeatResponse)
	if !ok {
		m.log.Warn("broker heartbeat answered with the wrong response", "type", fmt.Sprintf("%T", resp))
		return false
	}
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		if errors.Is(err, kerr.StaleBrokerEpoch) {
			// The controller no longer has this registration (it was
			// unregistered, or replaced): register again.
			m.log.Warn("broker heartbeat names a stale epoch; registering again", "broker", m.cfg.NodeID, "epoch", req.BrokerEpoch)
			m.mu.Lock()
			m.epoch = -1
			m.mu.Unlock()
			m.setState(Registering)
		} else {
			m.log.Debug("broker heartbeat refused", "err", err)
		}
		return false
	}
	switch {
	case req.WantShutdown && r.ShouldShutdown:
		return true
	case req.WantShutdown:
		m.setState(PendingShutdown)
	case r.IsFenced:
		m.setState(Fenced)
	default:
		m.setState(Running)
	}
	return false
}
