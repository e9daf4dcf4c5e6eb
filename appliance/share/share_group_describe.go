package share

// ShareGroupDescribe (key 77), v1 (KIP-932, "ShareGroupDescribe API").
//
// Describes share groups: state (Empty without members, Stable with
// them), group and assignment epochs, the assignor ("simple"), and each
// member's id, rack, epoch, client id and host, subscribed topic names and
// assignment (topic id, name, partitions). An id that is no share group
// answers GROUP_ID_NOT_FOUND (69), an empty id INVALID_GROUP_ID (24),
// without DESCRIBE on the group GROUP_AUTHORIZATION_FAILED. Authorized
// operations are not computed and stay at Kafka's "not requested" value.

import (
	"slices"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) shareGroupDescribeAPI() wire.API {
	return wire.API{Key: 77, Min: 1, Max: 1, Handle: h.handleShareGroupDescribe}
}

func (h *handlers) handleShareGroupDescribe(r *wire.Request) any {
	req := r.Req.(*kmsg.ShareGroupDescribeRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		im := h.host.Image()
		s := h.host.Store()
		for _, id := range req.GroupIDs {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID = id
			fail := func(err *kerr.Error) {
				g.ErrorCode = err.Code
				resp.Groups = append(resp.Groups, g)
			}
			if err := h.groupRefusal(r, kmsg.ACLOperationDescribe, id); err != nil {
				fail(err)
				continue
			}
			ans, ok := askShare(s, id, func(sm *Manager, reply func(shareViewAnswer)) {
				view, found := sm.view(id)
				reply(shareViewAnswer{view, found})
			}).Wait()
			if !ok {
				fail(kerr.CoordinatorNotAvailable)
				continue
			}
			if !ans.found {
				g.ErrorMessage = kmsg.StringPtr("group " + id + " is not a share group")
				fail(kerr.GroupIDNotFound)
				continue
			}
			view := ans.view
			g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = view.state, view.epoch, view.assignEpoch, "simple"
			for _, m := range view.members {
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
				if m.rack != "" {
					dm.RackID = kmsg.StringPtr(m.rack)
				}
				dm.SubscribedTopicNames = m.topics
				if dm.SubscribedTopicNames == nil {
					dm.SubscribedTopicNames = []string{}
				}
				ids := make([]TopicID, 0, len(m.assignment))
				for tid := range m.assignment {
					ids = append(ids, tid)
				}
				slices.SortFunc(ids, func(x, y TopicID) int { return slices.Compare(x[:], y[:]) })
				for _, tid := range ids {
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.TopicID = tid
					if t, ok := im.TopicByID(tid); ok {
						tp.Topic = t.Name
					}
					tp.Partitions = slices.Clone(m.assignment[tid])
					dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
				}
				g.Members = append(g.Members, dm)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	})
}

type shareViewAnswer struct {
	view  shareGroupView
	found bool
}
