package group

// LeaveGroup (key 13), v0-v5.
//
// v0-v2 remove one member (member_id); v3+ remove a batch, by member id or
// group.instance.id (KIP-345), with an error per member. A leaving member
// triggers a rebalance of the others (or completes a pending join).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var leaveGroupAPI = apiDef{key: 13, min: 0, max: 5, handle: handleLeaveGroup}

type leaveAnswer struct {
	top *kerr.Error
	per []*kerr.Error
}

func handleLeaveGroup(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	var members []leaveMember
	if r.Version < 3 {
		members = []leaveMember{{memberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			lm := leaveMember{memberID: m.MemberID}
			if m.InstanceID != nil {
				lm.instanceID = *m.InstanceID
			}
			members = append(members, lm)
		}
	}
	fill := func(a leaveAnswer) kmsg.Response {
		if a.top != nil {
			resp.ErrorCode = a.top.Code
			return resp
		}
		if r.Version < 3 {
			if len(a.per) == 1 && a.per[0] != nil {
				resp.ErrorCode = a.per[0].Code
			}
			return resp
		}
		for i, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
			if i < len(a.per) && a.per[i] != nil {
				rm.ErrorCode = a.per[i].Code
			}
			resp.Members = append(resp.Members, rm)
		}
		return resp
	}
	if h.groupDenied(r, kmsg.ACLOperationRead, req.Group) {
		return fill(leaveAnswer{top: kerr.GroupAuthorizationFailed})
	}
	ch := ask(h, req.Group, func(m *Manager, reply func(leaveAnswer)) {
		top, per := m.leave(req.Group, members)
		reply(leaveAnswer{top, per})
	})
	if !ch.Posted() {
		return fill(leaveAnswer{top: kerr.CoordinatorNotAvailable})
	}
	return wire.Deferred(func() any {
		v, ok := ch.Wait()
		if !ok {
			return fill(leaveAnswer{top: kerr.CoordinatorNotAvailable})
		}
		return fill(v)
	})
}
