package group

// DescribeGroups (key 15), v0-v5.
//
// A group's state, protocol type and name, and members (client id and
// host; metadata and assignment while Stable). A group this broker does not
// know is described as Dead with no error, as Kafka does before v6. v4+
// carries group.instance.id. A KIP-848 consumer-protocol group is not a
// classic group, nor is a KIP-932 share group: as Kafka 4 does, they are
// answered GROUP_ID_NOT_FOUND with state Dead and no members (clients
// describe it with ConsumerGroupDescribe, handleConsumerGroupDescribe, and
// fall back to DescribeGroups on GROUP_ID_NOT_FOUND from there); authorized operations are not computed (no
// ACLs), so they stay at Kafka's "not requested" value.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var describeGroupsAPI = apiDef{key: 15, min: 0, max: 5, handle: handleDescribeGroups}

func handleDescribeGroups(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	chans := make([]wire.Reply[groupSummary], len(req.Groups))
	for i, g := range req.Groups {
		chans[i] = ask(h, g, func(m *Manager, reply func(groupSummary)) { reply(m.describe(g)) })
	}
	return wire.Deferred(func() any {
		for i, id := range req.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group = id
			if h.groupDenied(r, kmsg.ACLOperationDescribe, id) {
				dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
				resp.Groups = append(resp.Groups, dg)
				continue
			}
			s, ok := chans[i].Wait()
			if !ok {
				dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
				resp.Groups = append(resp.Groups, dg)
				continue
			}
			dg.State, dg.ProtocolType, dg.Protocol = s.state, s.protocolType, s.protocolName
			if id == "" {
				dg.ErrorCode = kerr.InvalidGroupID.Code
			}
			if s.groupType == "consumer" || s.groupType == "share" {
				dg.ErrorCode = kerr.GroupIDNotFound.Code
			}
			for _, m := range s.members {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.clientHost
				if m.instanceID != "" {
					dm.InstanceID = strPtr(m.instanceID)
				}
				dm.ProtocolMetadata, dm.MemberAssignment = m.metadata, m.assignment
				if dm.ProtocolMetadata == nil {
					dm.ProtocolMetadata = []byte{}
				}
				if dm.MemberAssignment == nil {
					dm.MemberAssignment = []byte{}
				}
				dg.Members = append(dg.Members, dm)
			}
			resp.Groups = append(resp.Groups, dg)
		}
		return resp
	})
}
