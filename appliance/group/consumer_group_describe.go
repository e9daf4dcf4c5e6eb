package group

// ConsumerGroupDescribe (key 69), v0-v1 (KIP-848).
//
// Describes consumer-protocol groups: state (Empty, Assigning, Reconciling,
// Stable), group epoch, assignment epoch, assignor, and per member its
// member epoch, client id and host, instance and rack id, subscription
// (topic names and regex), current assignment and target assignment (topic
// ids with names and partitions). v1 adds the member type, always 1 (a
// consumer-protocol member). An unknown group, or a classic one, answers
// GROUP_ID_NOT_FOUND; an empty group id INVALID_GROUP_ID. Authorized
// operations are not computed (Kafka's "not requested" value, INT32_MIN).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var consumerGroupDescribeAPI = apiDef{key: 69, min: 0, max: 1, handle: handleConsumerGroupDescribe}

func handleConsumerGroupDescribe(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	chans := make([]wire.Reply[cgSummary], len(req.Groups))
	enabled := h.coord() != nil && h.coord().cfg.consumerProtocol
	for i, g := range req.Groups {
		if g == "" || !enabled || h.groupDenied(r, kmsg.ACLOperationDescribe, g) {
			continue
		}
		chans[i] = ask(h, g, func(m *Manager, reply func(cgSummary)) { reply(m.describeConsumer(g)) })
	}
	return wire.Deferred(func() any {
		im := h.image()
		assignment := func(s partSet) kmsg.Assignment {
			out := kmsg.NewAssignment()
			out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
			ids, parts := s.byTopic()
			for _, id := range ids {
				tp := kmsg.NewAssignmentTopicPartition()
				tp.TopicID = id
				if name, _, ok := im.TopicByID(id); ok {
					tp.Topic = name
				}
				tp.Partitions = parts[id]
				out.TopicPartitions = append(out.TopicPartitions, tp)
			}
			return out
		}
		for i, id := range req.Groups {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group = id
			dg.AuthorizedOperations = -2147483648
			switch {
			case id == "":
				dg.ErrorCode = kerr.InvalidGroupID.Code
				resp.Groups = append(resp.Groups, dg)
				continue
			case !enabled:
				dg.ErrorCode = kerr.UnsupportedVersion.Code
				resp.Groups = append(resp.Groups, dg)
				continue
			case h.groupDenied(r, kmsg.ACLOperationDescribe, id):
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
			if s.err != nil {
				dg.ErrorCode = s.err.Code
				dg.ErrorMessage = strPtr("group " + id + " is not a consumer group")
			}
			dg.State, dg.Epoch, dg.AssignmentEpoch, dg.AssignorName = s.state, s.epoch, s.assignmentEpoch, s.assignor
			for _, m := range s.members {
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
				if m.instanceID != "" {
					dm.InstanceID = strPtr(m.instanceID)
				}
				if m.rackID != "" {
					dm.RackID = strPtr(m.rackID)
				}
				dm.SubscribedTopics = append([]string{}, m.names...)
				if m.regex != "" {
					dm.SubscribedTopicRegex = strPtr(m.regex)
				}
				dm.Assignment = assignment(m.assigned)
				dm.TargetAssignment = assignment(m.target)
				dm.MemberType = 1
				dg.Members = append(dg.Members, dm)
			}
			resp.Groups = append(resp.Groups, dg)
		}
		return resp
	})
}
