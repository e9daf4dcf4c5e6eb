package group

// JoinGroup (key 11), v0-v9.
//
// Classic group membership (Manager.join). v0 has no rebalance timeout
// (the session timeout stands in); v4+ answers a first join without member
// id with MEMBER_ID_REQUIRED and a member id to rejoin with (KIP-394),
// which expires after the session timeout if unused; v5+ carries
// group.instance.id (static membership, KIP-345); v7+ returns the protocol
// type; v9 skip_assignment for a static leader rejoining a stable group
// (KIP-814). The answer waits until the rebalance completes.

import (
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var joinGroupAPI = apiDef{key: 11, min: 0, max: 9, handle: handleJoinGroup}

func handleJoinGroup(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	a := joinArgs{group: req.Group, memberID: req.MemberID, clientID: r.ClientID, clientHost: clientHost(r),
		protocolType: req.ProtocolType, sessionTimeout: time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond, requireKnownMemberID: r.Version >= 4, skipAssignment: r.Version >= 9}
	if r.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		a.rebalanceTimeout = a.sessionTimeout
	}
	if req.InstanceID != nil {
		a.instanceID = *req.InstanceID
	}
	for _, p := range req.Protocols {
		a.protocols = append(a.protocols, groupProtocol{name: p.Name, metadata: p.Metadata})
	}
	fill := func(res joinResult) kmsg.Response {
		if res.err != nil {
			resp.ErrorCode = res.err.Code
		}
		resp.Generation = res.generation
		resp.MemberID = res.memberID
		resp.LeaderID = res.leader
		resp.SkipAssignment = res.skipAssignment
		if res.protocolName != "" || r.Version < 7 {
			resp.Protocol = strPtr(res.protocolName)
		}
		if res.protocolType != "" {
			resp.ProtocolType = strPtr(res.protocolType)
		}
		for _, m := range res.members {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = m.id
			if m.instanceID != "" {
				jm.InstanceID = strPtr(m.instanceID)
			}
			jm.ProtocolMetadata = m.metadata
			if jm.ProtocolMetadata == nil {
				jm.ProtocolMetadata = []byte{}
			}
			resp.Members = append(resp.Members, jm)
		}
		return resp
	}
	if h.groupDenied(r, kmsg.ACLOperationRead, req.Group) {
		return fill(joinError(kerr.GroupAuthorizationFailed, req.MemberID))
	}
	ch := ask(h, req.Group, func(m *Manager, reply func(joinResult)) {
		m.join(a, reply)
	})
	if !ch.Posted() {
		return fill(joinError(kerr.CoordinatorNotAvailable, req.MemberID))
	}
	return wire.Deferred(func() any {
		v, ok := ch.Wait()
		if !ok {
			return fill(joinError(kerr.CoordinatorNotAvailable, req.MemberID))
		}
		return fill(v)
	})
}
