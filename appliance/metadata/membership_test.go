package metadata

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/cluster/membership"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type listenerConn struct{ name string }

func (listenerConn) Principal() string       { return "User:ANONYMOUS" }
func (listenerConn) PeerAddr() string        { return "127.0.0.1:1" }
func (listenerConn) PeerHost() string        { return "127.0.0.1" }
func (c listenerConn) Listener() string      { return c.name }
func (listenerConn) Closed() <-chan struct{} { return nil }
func (f *fakeClock) now() time.Time          { return f.t }
func (f *fakeClock) advance(d time.Duration) { f.t = f.t.Add(d) }
func newMembershipHost(t *testing.T) (*fakeHost, *Membership, *fakeClock) {
	t.Helper()
	h := newFakeHost(t)
	clk := &fakeClock{t: time.Unix(1000, 0)}
	cfg := MembershipConfig{Registry: membership.Config{ClusterID: "cid", SessionTimeout: 9 * time.Second, Now: clk.now},
		ControllerListeners: []string{"CONTROLLER"}}
	m, err := NewMembership(h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, m, clk
}

type fakeClock struct{ t time.Time }

func register(t *testing.T, m *Membership, id int32, rack string) *kmsg.BrokerRegistrationResponse {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID, req.ClusterID, req.IncarnationID = id, "cid", [16]byte{byte(id)}
	if rack != "" {
		req.Rack = &rack
	}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9090+id)
	req.Listeners = append(req.Listeners, l)
	out := m.handleRegistration(&wire.Request{Key: 62, Version: 4, Req: req, Conn: listenerConn{"CONTROLLER"}})
	return out.(*kmsg.BrokerRegistrationResponse)
}

func heartbeat(t *testing.T, m *Membership, id int32, epoch, offset int64, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = id, epoch, offset, shutdown
	return m.handleHeartbeat(&wire.Request{Key: 63, Version: 1, Req: req, Conn: listenerConn{"CONTROLLER"}}).(*kmsg.BrokerHeartbeatResponse)
}

// TestMembershipHandlers: three brokers register (epoch = the offset of
// their record), are unfenced once caught up, new topics are placed across
// them, a broker that misses heartbeats is fenced and its partitions lose
// their leader, and it gets them back when it returns.
func TestMembershipHandlers(t *testing.T) {
	h, m, clk := newMembershipHost(t)
	epochs := map[int32]int64{}
	for id, rack := range map[int32]string{1: "a", 2: "b", 3: "a"} {
		resp := register(t, m, id, rack)
		if resp.ErrorCode != 0 {
			t.Fatalf("register %d: error %d", id, resp.ErrorCode)
		}
		b := h.im.Registered[id]
		if b == nil || b.Epoch != resp.BrokerEpoch || b.Epoch != h.im.Offset || !b.Fenced || *b.Rack != rack {
			t.Fatalf("broker %d registered as %+v, response epoch %d, image offset %d", id, b, resp.BrokerEpoch, h.im.Offset)
		}
		epochs[id] = resp.BrokerEpoch
	}
	if h.im.LiveBrokers() != nil {
		t.Fatal("brokers live before their heartbeats")
	}
	// Behind its registration: stays fenced.
	if r := heartbeat(t, m, 1, epochs[1], epochs[1]-1, false); r.ErrorCode != 0 || !r.IsFenced || r.IsCaughtUp {
		t.Fatalf("heartbeat behind: %+v", r)
	}
	for id, e := range epochs {
		if r := heartbeat(t, m, id, e, h.im.Offset, false); r.ErrorCode != 0 || r.IsFenced || !r.IsCaughtUp {
			t.Fatalf("heartbeat %d caught up: %+v", id, r)
		}
	}
	if got := len(h.im.LiveBrokers()); got != 3 {
		t.Fatalf("%d live brokers, want 3", got)
	}
	if r := heartbeat(t, m, 2, epochs[2]+100, h.im.Offset, false); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("heartbeat with a wrong epoch: error %d", r.ErrorCode)
	}

	// Placement: 6 partitions, each broker leads 2; none on this node (7).
	ctl := NewController(h)
	tp, err := ctl.CreateTopic(TopicSpec{Name: "t", Partitions: 6, ReplicationFactor: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	leads := map[int32]int{}
	for _, p := range tp.Partitions {
		if len(p.Replicas) != 1 || p.Leader != p.Replicas[0] || len(p.ISR) != 1 {
			t.Fatalf("partition %+v", p)
		}
		leads[p.Leader]++
	}
	if leads[1] != 2 || leads[2] != 2 || leads[3] != 2 {
		t.Fatalf("leaders %v, want 2 each on 1, 2, 3", leads)
	}
	if _, err := ctl.CreateTopic(TopicSpec{Name: "rf3", Partitions: 1, ReplicationFactor: 3}, false); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("replication factor 3: %v", err)
	}

	// Broker 3 misses its heartbeats: fenced, its partitions leaderless.
	clk.advance(5 * time.Second)
	heartbeat(t, m, 1, epochs[1], h.im.Offset, false)
	heartbeat(t, m, 2, epochs[2], h.im.Offset, false)
	clk.advance(5 * time.Second)
	if _, _, err := m.FenceStale(); err != nil {
		t.Fatal(err)
	}
	if b := h.im.Registered[3]; !b.Fenced {
		t.Fatal("broker 3 not fenced after the session timeout")
	}
	for _, p := range h.im.Topics["t"].Partitions {
		if p.Replicas[0] == 3 && (p.Leader != -1 || p.LeaderEpoch != 1 || h.im.LeaderOf(&p) != -1) {
			t.Fatalf("partition on fenced broker 3: %+v", p)
		}
		if p.Replicas[0] != 3 && p.Leader != p.Replicas[0] {
			t.Fatalf("partition of a live broker lost its leader: %+v", p)
		}
	}
	// It comes back: unfenced and leading again.
	if r := heartbeat(t, m, 3, epochs[3], h.im.Offset, false); r.IsFenced {
		t.Fatalf("broker 3 heartbeat after return: %+v", r)
	}
	for _, p := range h.im.Topics["t"].Partitions {
		if p.Leader != p.Replicas[0] {
			t.Fatalf("after broker 3 returned: %+v", p)
		}
	}

	// Controlled shutdown of broker 2: leadership moves away (no other
	// ISR member: no leader), then it may stop.
	if r := heartbeat(t, m, 2, epochs[2], h.im.Offset, true); r.ShouldShutdown || !h.im.Registered[2].InControlledShutdown {
		t.Fatalf("controlled shutdown start: %+v, broker %+v", r, h.im.Registered[2])
	}
	heartbeat(t, m, 1, epochs[1], h.im.Offset, false)
	heartbeat(t, m, 3, epochs[3], h.im.Offset, false)
	if r := heartbeat(t, m, 2, epochs[2], h.im.Offset, true); !r.ShouldShutdown || !r.IsFenced {
		t.Fatalf("controlled shutdown end: %+v", r)
	}
	for _, p := range h.im.Topics["t"].Partitions {
		if p.Replicas[0] == 2 && p.Leader != -1 {
			t.Fatalf("partition still led by the stopped broker: %+v", p)
		}
	}
}

// TestMembershipRefusals: registration on a client listener closes the
// connection; a foreign cluster id, an unknown broker's unregistration
// and a broker registered again are answered as Kafka does.
func TestMembershipRefusals(t *testing.T) {
	h, m, _ := newMembershipHost(t)
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = 1, "cid"
	if _, ok := m.handleRegistration(&wire.Request{Key: 62, Version: 4, Req: req, Conn: listenerConn{"PLAINTEXT"}}).(wire.Close); !ok {
		t.Fatal("registration on a client listener not closed")
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	if _, ok := m.handleHeartbeat(&wire.Request{Key: 63, Version: 1, Req: hb, Conn: listenerConn{"PLAINTEXT"}}).(wire.Close); !ok {
		t.Fatal("heartbeat on a client listener not closed")
	}
	req.ClusterID = "other"
	if r := m.handleRegistration(&wire.Request{Key: 62, Version: 4, Req: req}).(*kmsg.BrokerRegistrationResponse); r.ErrorCode != kerr.InconsistentClusterID.Code || r.BrokerEpoch != -1 {
		t.Fatalf("foreign cluster: %+v", r)
	}
	un := kmsg.NewPtrUnregisterBrokerRequest()
	un.BrokerID = 4
	if r := m.handleUnregister(&wire.Request{Key: 64, Req: un}).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister unknown: %+v", r)
	}
	first := register(t, m, 4, "")
	if first.ErrorCode != 0 {
		t.Fatal(first.ErrorCode)
	}
	heartbeat(t, m, 4, first.BrokerEpoch, h.im.Offset, false)
	// The same incarnation again (a retried request): a new epoch.
	again := register(t, m, 4, "")
	if again.ErrorCode != 0 || again.BrokerEpoch <= first.BrokerEpoch || h.im.Registered[4].Epoch != again.BrokerEpoch {
		t.Fatalf("re-registration: %+v after %+v", again, first)
	}
	if r := m.handleUnregister(&wire.Request{Key: 64, Req: un}).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != 0 || h.im.Registered != nil {
		t.Fatalf("unregister: %+v, table %v", r, h.im.Registered)
	}
}

// TestMembershipRun: the fencing loop fences a broker whose heartbeats
// stop, on the wall clock, and ends with its context.
func TestMembershipRun(t *testing.T) {
	h := newFakeHost(t)
	m, err := NewMembership(h, MembershipConfig{Registry: membership.Config{ClusterID: "cid", SessionTimeout: 100 * time.Millisecond, Now: time.Now},
		ControllerListeners: []string{"CONTROLLER"}})
	if err != nil {
		t.Fatal(err)
	}
	resp := register(t, m, 1, "")
	h.Lock()
	off := h.im.Offset
	h.Unlock()
	if r := heartbeat(t, m, 1, resp.BrokerEpoch, off, false); r.IsFenced {
		t.Fatalf("heartbeat: %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	fenced := func() bool {
		h.Lock()
		defer h.Unlock()
		return h.im.Registered[1].Fenced
	}
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !fenced() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("broker not fenced by the loop")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with its context")
	}
}
