package controller

// Broker membership over the quorum: BrokerRegistration (62) and
// BrokerHeartbeat (63) arrive as plain requests (not in an Envelope, as in
// Kafka) on the active controller's controller listener and are answered
// by its metadata.Membership; the Membership's fencing loop runs on the
// node that leads the quorum only; and a broker sends its own
// registration and heartbeats to the active controller through Channel.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/cluster/brokerlife"
	"github.com/ringbroker/ringbroker/cluster/membership"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SetMembership makes m answer BrokerRegistration and BrokerHeartbeat on
// the controller listener while this node leads the quorum, and runs
// m's activation and fencing loop whenever it does (cancelled when it
// loses the leadership), until the quorum stops.
func (q *Quorum) SetMembership(m *metadata.Membership) {
	q.members.Store(m)
	go q.leadMembership(m)
}

// leadMembership activates m and runs its fencing loop while this node is
// the active controller and has applied what it knows committed.
func (q *Quorum) leadMembership(m *metadata.Membership) {
	var cancel context.CancelFunc
	var running chan struct{}
	stop := func() {
		if cancel != nil {
			cancel()
			<-running
			cancel, running = nil, nil
		}
	}
	defer stop()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-q.node.Done():
			return
		case <-t.C:
		}
		lead := q.IsLeader()
		if lead && cancel == nil {
			st, err := q.node.Status()
			if err != nil || st.Applied < st.HighWatermark {
				continue
			}
			if err := m.Activate(); err != nil {
				q.log.Warn("cannot activate the broker membership as the active controller", "err", err)
				continue
			}
			q.log.Info("active controller: broker membership activated", "node", q.opts.NodeID)
			ctx, cf := context.WithCancel(context.Background())
			cancel, running = cf, make(chan struct{})
			go func(done chan struct{}) { defer close(done); m.Run(ctx) }(running)
		} else if !lead && cancel != nil {
			q.log.Info("no longer the active controller: broker membership stopped", "node", q.opts.NodeID)
			stop()
		}
	}
}

// servePlain answers a plain (not enveloped) request on the controller
// listener: BrokerRegistration, BrokerHeartbeat or AllocateProducerIds.
func (q *Quorum) servePlain(req kmsg.Request) kmsg.Response {
	if a, ok := req.(*kmsg.AllocateProducerIDsRequest); ok {
		return q.serveAllocate(a)
	}
	return q.serveMember(req)
}

// serveMember answers a BrokerRegistration or BrokerHeartbeat request
// that came on the controller listener: NOT_CONTROLLER unless this node
// is the active controller with a membership.
func (q *Quorum) serveMember(req kmsg.Request) kmsg.Response {
	m := q.members.Load()
	if m != nil && q.IsLeader() {
		resp, err := m.Send(context.Background(), req)
		if err == nil {
			return resp
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		r.ErrorCode, r.BrokerEpoch = kerr.NotController.Code, -1
	case *kmsg.BrokerHeartbeatResponse:
		r.ErrorCode, r.IsFenced = kerr.NotController.Code, true
	}
	return resp
}

// Channel is the broker's channel to the active controller
// (cluster/brokerlife.Channel).
type Channel struct{ q *Quorum }

// Channel returns this node's channel to the active controller.
func (q *Quorum) Channel() Channel { return Channel{q} }

// Send sends a BrokerRegistration, BrokerHeartbeat or AllocateProducerIds request to the
// active controller's controller listener (answered in process when this
// node is it), trying again while no leader is known, the one tried
// cannot be reached or answers NOT_CONTROLLER, until ctx ends.
func (c Channel) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	q := c.q
	var last error
	for {
		if l, ok := q.Leader(); ok {
			var resp kmsg.Response
			var err error
			if l == q.opts.NodeID {
				resp = q.servePlain(req)
			} else {
				resp, err = q.sendTo(ctx, q.addrs[l], req)
			}
			if err == nil && !notController(resp) {
				return resp, nil
			}
			if err == nil {
				err = kerr.NotController
			}
			last = fmt.Errorf("node %d: %w", l, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ErrNoController, last)
		case <-q.node.Done():
			return nil, errors.New("the metadata quorum stopped")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func notController(resp kmsg.Response) bool {
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == kerr.NotController.Code
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == kerr.NotController.Code
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == kerr.NotController.Code
	}
	return false
}

// sendTo sends req as a plain request to the controller listener at addr
// and reads its response.
func (q *Quorum) sendTo(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	if addr == "" {
		return nil, errors.New("no controller listener address")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return q.roundTrip(ctx, addr, req, req.GetVersion())
}

// roundTrip sends req at version on a new connection to the controller
// listener at addr and reads its response, within ctx.
func (q *Quorum) roundTrip(ctx context.Context, addr string, req kmsg.Request, version int16) (kmsg.Response, error) {
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	frame := appendRequest([]byte{0, 0, 0, 0}, req.Key(), version, 1, fmt.Sprintf("ringbroker-%d", q.opts.NodeID), req)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	body, err := readFrame(bufio.NewReader(conn))
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	rest, err := readResponseHeader(body, resp.IsFlexible())
	if err == nil {
		err = resp.ReadFrom(rest)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot decode the %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// MemberOptions configures StartMembership.
type MemberOptions struct {
	// ClusterID is meta.properties' cluster.id.
	ClusterID string
	// Cluster is the node's cluster configuration (controller listeners,
	// broker.rack, broker.heartbeat.interval.ms,
	// broker.session.timeout.ms).
	Cluster config.Cluster
	// Listeners are the client listeners, advertised ports resolved.
	Listeners []config.Listener
	Logger    *slog.Logger
}

// StartMembership makes a metadata.Membership over h answer on the
// controller listener (SetMembership) and starts this broker's
// cluster/brokerlife.Manager, which registers and heartbeats through
// Channel with the metadata offset and high watermark the quorum
// applied.
func (q *Quorum) StartMembership(h metadata.Host, o MemberOptions) (*brokerlife.Manager, error) {
	c := o.Cluster
	var ctlNames []string
	for _, l := range c.ControllerListeners {
		ctlNames = append(ctlNames, l.Name)
	}
	m, err := metadata.NewMembership(h, metadata.MembershipConfig{
		Registry:            membership.Config{ClusterID: o.ClusterID, SessionTimeout: time.Duration(c.SessionTimeoutMs) * time.Millisecond, Now: time.Now, Logger: o.Logger},
		ControllerListeners: ctlNames})
	if err != nil {
		return nil, err
	}
	var ls []kmsg.BrokerRegistrationRequestListener
	for _, l := range o.Listeners {
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.AdvertisedHost, uint16(l.AdvertisedPort)
		rl.SecurityProtocol = securityProtocolID(l.Protocol)
		ls = append(ls, rl)
	}
	var rack *string
	if c.Rack != "" {
		rack = &c.Rack
	}
	var inc [16]byte
	_, _ = rand.Read(inc[:])
	// Raft indexes are metadata offsets (the image's offset is the index
	// of its last batch); an index applied is an offset applied.
	status := func() (applied, hw int64) {
		st, err := q.Status()
		if err != nil {
			return -1, 0
		}
		return int64(st.Applied), int64(st.HighWatermark) + 1
	}
	mgr, err := brokerlife.New(brokerlife.Config{NodeID: q.opts.NodeID, ClusterID: o.ClusterID, IncarnationID: inc,
		Listeners: ls, Rack: rack, HeartbeatInterval: time.Duration(c.HeartbeatIntervalMs) * time.Millisecond,
		MetadataOffset: func() int64 { a, _ := status(); return a },
		HighWatermark:  func() int64 { _, hw := status(); return hw },
		Logger:         o.Logger}, q.Channel())
	if err != nil {
		return nil, err
	}
	q.SetMembership(m)
	mgr.Start()
	return mgr, nil
}

// StopMember asks the active controller for mgr's controlled shutdown,
// waiting at most 5 s, and stops its heartbeats.
func StopMember(mgr *brokerlife.Manager, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := mgr.Shutdown(ctx); err != nil {
		log.Warn("controlled shutdown not completed", "err", err)
	}
	mgr.Close()
}

// securityProtocolID is Kafka's id of a security protocol name.
func securityProtocolID(p string) int16 {
	switch p {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return 0
}
