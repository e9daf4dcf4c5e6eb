package group

// ConsumerGroupHeartbeat (key 68), v0-v1 (KIP-848).
//
// A member of a consumer-protocol group joins (member epoch 0), heartbeats
// (its current member epoch, the partitions it owns, and whatever of its
// subscription changed), and leaves (epoch -1, or -2 for a static member
// that will come back). The answer carries the member id, the member epoch,
// the heartbeat interval (group.consumer.heartbeat.interval.ms) and, on a
// join, on a full heartbeat or when it changed, the member's assignment as
// topic ids and partitions. The group state machine is Manager.consumerHeartbeat.
//
// Field checks, in Kafka's order (INVALID_REQUEST): a member id on v1
// always, on v0 for epochs above 0 and -1 (a v0 join without one is named by
// the coordinator); a group id; no blank instance or rack id; on a join a
// rebalance timeout, an empty (not null) owned-partition list and a
// subscription (topic names or, v1, a regex; empty ones are allowed); an
// instance id to leave with -2; a member epoch >= -2. A regex that does not
// compile (RE2 syntax; it must match the whole topic name) answers
// INVALID_REGULAR_EXPRESSION, an assignor not in group.consumer.assignors
// UNSUPPORTED_ASSIGNOR. With "consumer" absent from
// group.coordinator.rebalance.protocols the API is not advertised and
// answers UNSUPPORTED_VERSION.

import (
	"regexp"
	"slices"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var consumerGroupHeartbeatAPI = apiDef{key: 68, min: 0, max: 1, handle: handleConsumerGroupHeartbeat}

func handleConsumerGroupHeartbeat(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fill := func(res cgHeartbeatResult) kmsg.Response {
		if res.err != nil {
			resp.ErrorCode = res.err.Code
			if res.msg != "" {
				resp.ErrorMessage = strPtr(res.msg)
			}
			return resp
		}
		resp.MemberID = strPtr(res.memberID)
		resp.MemberEpoch = res.epoch
		if h.coord() != nil {
			resp.HeartbeatIntervalMillis = int32(h.coord().cfg.consumerHeartbeatInterval.Milliseconds())
		}
		if res.assignment != nil {
			as := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			as.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
			ids, parts := res.assignment.byTopic()
			for _, id := range ids {
				t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				t.TopicID = id
				t.Partitions = parts[id]
				as.Topics = append(as.Topics, t)
			}
			resp.Assignment = &as
		}
		return resp
	}
	if h.coord() == nil {
		return fill(cgError(kerr.CoordinatorNotAvailable, ""))
	}
	if !h.coord().cfg.consumerProtocol {
		return fill(cgError(kerr.UnsupportedVersion, "the consumer rebalance protocol is disabled (group.coordinator.rebalance.protocols)"))
	}
	a, err, msg := consumerHeartbeatArgs(req, r.Version)
	if err != nil {
		return fill(cgError(err, msg))
	}
	if h.groupDenied(r, kmsg.ACLOperationRead, req.Group) {
		return fill(cgError(kerr.GroupAuthorizationFailed, ""))
	}
	a.clientID, a.clientHost, a.image = r.ClientID, clientHost(r), h.image()
	if a.assignor != nil && !slices.Contains(h.coord().cfg.consumerAssignors, *a.assignor) {
		return fill(cgError(kerr.UnsupportedAssignor, "assignor "+*a.assignor+" is not one of group.consumer.assignors"))
	}
	ch := ask(h, req.Group, func(m *Manager, reply func(cgHeartbeatResult)) {
		m.consumerHeartbeat(a, reply)
	})
	if !ch.Posted() {
		return fill(cgError(kerr.CoordinatorNotAvailable, ""))
	}
	return wire.Deferred(func() any {
		v, ok := ch.Wait()
		if !ok {
			return fill(cgError(kerr.CoordinatorNotAvailable, ""))
		}
		return fill(v)
	})
}

// consumerHeartbeatArgs checks req's fields (see the file comment) and
// converts them.
func consumerHeartbeatArgs(req *kmsg.ConsumerGroupHeartbeatRequest, version int16) (cgHeartbeatArgs, *kerr.Error, string) {
	a := cgHeartbeatArgs{group: req.Group, memberID: req.MemberID, epoch: req.MemberEpoch, instanceID: req.InstanceID,
		rackID: req.RackID, rebalanceTimeoutMillis: req.RebalanceTimeoutMillis, names: req.SubscribedTopicNames,
		namesSet: req.SubscribedTopicNames != nil, assignor: req.ServerAssignor}
	if version >= 1 {
		a.regex = req.SubscribedTopicRegex
	}
	bad := func(msg string) (cgHeartbeatArgs, *kerr.Error, string) { return a, kerr.InvalidRequest, msg }
	blank := func(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }
	switch {
	case (version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == cgLeaveEpoch) && blank(&req.MemberID):
		return bad("MemberId can't be empty.")
	case blank(&req.Group):
		return bad("GroupId can't be empty.")
	case blank(req.InstanceID):
		return bad("InstanceId can't be empty.")
	case blank(req.RackID):
		return bad("RackId can't be empty.")
	case req.MemberEpoch == cgJoinEpoch && req.RebalanceTimeoutMillis == -1:
		return bad("RebalanceTimeoutMs must be provided in first request.")
	case req.MemberEpoch == cgJoinEpoch && (req.Topics == nil || len(req.Topics) > 0):
		return bad("TopicPartitions must be empty when (re-)joining.")
	case req.MemberEpoch == cgJoinEpoch && !a.namesSet && a.regex == nil:
		return bad("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
	case req.MemberEpoch == cgStaticLeaveEpoch && req.InstanceID == nil:
		return bad("InstanceId can't be null.")
	case req.MemberEpoch < cgStaticLeaveEpoch:
		return bad("MemberEpoch is invalid.")
	}
	if a.regex != nil && *a.regex != "" {
		re, err := regexp.Compile("^(?:" + *a.regex + ")$")
		if err != nil {
			return a, kerr.InvalidRegularExpression, "SubscribedTopicRegex " + *a.regex + " is not a valid regular expression: " + err.Error()
		}
		a.re = re
	}
	if req.Topics != nil {
		a.owned = partSet{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				a.owned[tpID{TopicID(t.TopicID), p}] = true
			}
		}
	}
	return a, nil, ""
}
