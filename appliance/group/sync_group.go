package group

// SyncGroup (key 14), v0-v5.
//
// Members send SyncGroup after a JoinGroup; the leader's request carries
// every member's assignment. Followers wait until the leader's assignment
// is durably stored in __consumer_offsets (GroupMetadataValue), then every
// waiting member gets its own assignment and the group is Stable. v3+
// carries group.instance.id; v5+ checks and returns the protocol type and
// name (INCONSISTENT_GROUP_PROTOCOL on a mismatch).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var syncGroupAPI = apiDef{key: 14, min: 0, max: 5, handle: handleSyncGroup}

func handleSyncGroup(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	a := syncArgs{group: req.Group, memberID: req.MemberID, generation: req.Generation, assignments: map[string][]byte{}}
	if req.InstanceID != nil {
		a.instanceID = *req.InstanceID
	}
	if r.Version >= 5 {
		a.protocolType, a.protocolName = req.ProtocolType, req.Protocol
	}
	for _, ga := range req.GroupAssignment {
		a.assignments[ga.MemberID] = ga.MemberAssignment
	}
	fill := func(res syncResult) kmsg.Response {
		if res.err != nil {
			resp.ErrorCode = res.err.Code
		} else {
			resp.ProtocolType, resp.Protocol = strPtr(res.protocolType), strPtr(res.protocolName)
		}
		resp.MemberAssignment = res.assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		return resp
	}
	if h.groupDenied(r, kmsg.ACLOperationRead, req.Group) {
		return fill(syncResult{err: kerr.GroupAuthorizationFailed})
	}
	ch := ask(h, req.Group, func(m *Manager, reply func(syncResult)) {
		m.sync(a, reply)
	})
	if !ch.Posted() {
		return fill(syncResult{err: kerr.CoordinatorNotAvailable})
	}
	return wire.Deferred(func() any {
		v, ok := ch.Wait()
		if !ok {
			return fill(syncResult{err: kerr.CoordinatorNotAvailable})
		}
		return fill(v)
	})
}
