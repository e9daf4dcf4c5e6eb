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
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
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

// Send sends a BrokerRegistration or BrokerHeartbeat request to the
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
				resp = q.serveMember(req)
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
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	version := req.GetVersion()
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
