package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMemberRequestsNeedTheActiveController: a BrokerHeartbeat sent as a
// plain request to a controller listener is answered NOT_CONTROLLER by a
// node that is not the active controller, and by the active controller
// while it has no membership; Channel keeps trying until its context
// ends and then reports no controller. (The answered path runs in
// tests/integration TestQuorumMembership.)
func TestMemberRequestsNeedTheActiveController(t *testing.T) {
	ms := openQuorum(t, 3)
	lead, rest := leaderOf(t, ms)
	for _, m := range append(rest, lead) {
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.SetVersion(1)
		req.BrokerID, req.BrokerEpoch = 7, 3
		resp, err := lead.q.sendTo(context.Background(), m.opts.Listen, req)
		if err != nil {
			t.Fatalf("heartbeat to node %d: %v", m.opts.NodeID, err)
		}
		hb := resp.(*kmsg.BrokerHeartbeatResponse)
		if hb.ErrorCode != kerr.NotController.Code || !hb.IsFenced {
			t.Fatalf("heartbeat to node %d: %+v, want NOT_CONTROLLER and fenced", m.opts.NodeID, hb)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID = 7
	if _, err := rest[0].q.Channel().Send(ctx, reg); !errors.Is(err, ErrNoController) {
		t.Fatalf("registration with no membership anywhere: %v, want ErrNoController", err)
	}
}
