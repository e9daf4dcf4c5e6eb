package group

// Heartbeat (key 12), v0-v4.
//
// Keeps a member's session alive. REBALANCE_IN_PROGRESS tells the member
// to rejoin; UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION and (v3+, static
// members) FENCED_INSTANCE_ID tell it its membership is gone.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var heartbeatAPI = apiDef{key: 12, min: 0, max: 4, handle: handleHeartbeat}

func handleHeartbeat(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	if h.groupDenied(r, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	ch := ask(h, req.Group, func(m *Manager, reply func(*kerr.Error)) {
		reply(m.heartbeat(req.Group, req.MemberID, instance, req.Generation))
	})
	if !ch.Posted() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	return wire.Deferred(func() any {
		v, ok := ch.Wait()
		if !ok {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		} else if err := v; err != nil {
			resp.ErrorCode = err.Code
		}
		return resp
	})
}
