package share

// ShareGroupHeartbeat (key 76), v1 (KIP-932, "ShareGroupHeartbeat API").
//
// Joins (MemberEpoch 0, with the member id the client generated and a
// non-empty SubscribedTopicNames), leaves (-1) or heartbeats a share group
// member on the group's coordinator (Manager.heartbeat). The answer carries
// the member epoch, the heartbeat interval (share.heartbeat.interval.ms,
// 5000 by default) and the member's assignment by topic id. A member that
// sends nothing for share.session.timeout.ms (45000) is removed and the
// records it holds are released. Errors: INVALID_REQUEST for an empty
// group or member id, a joining member without topics or an epoch below
// -1; UNKNOWN_MEMBER_ID for a member the group does not know (the client
// rejoins with epoch 0); FENCED_MEMBER_EPOCH for an epoch that is neither
// the member's current nor its previous one; GROUP_ID_NOT_FOUND when the id
// names a classic group; GROUP_MAX_SIZE_REACHED past group.share.max.size
// (200) members; GROUP_AUTHORIZATION_FAILED without READ on the
// group.

import (
	"slices"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) shareGroupHeartbeatAPI() wire.API {
	return wire.API{Key: 76, Min: 1, Max: 1, Handle: h.handleShareGroupHeartbeat}
}

func (h *handlers) handleShareGroupHeartbeat(r *wire.Request) any {
	req := r.Req.(*kmsg.ShareGroupHeartbeatRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		fail := func(err error) any {
			resp.ErrorCode = wire.ErrCode(err)
			resp.ErrorMessage = wire.ErrMessage(err)
			return resp
		}
		if h.groupDenied(r, kmsg.ACLOperationRead, req.GroupID) {
			return fail(kerr.GroupAuthorizationFailed)
		}
		s := h.host.Store()
		if s == nil {
			return fail(kerr.CoordinatorNotAvailable)
		}
		im := h.host.Image()
		settings := s.cfg.settings(im.GroupConfigs(req.GroupID))
		args := shareHeartbeatArgs{group: req.GroupID, member: req.MemberID, clientID: r.ClientID, clientHost: clientHost(r),
			memberEpoch: req.MemberEpoch, rack: req.RackID, topics: req.SubscribedTopicNames, settings: settings, im: im}
		res, ok := askShare(s, req.GroupID, func(sm *Manager, reply func(shareHeartbeatResult)) { reply(sm.heartbeat(args)) }).Wait()
		if !ok {
			return fail(kerr.CoordinatorNotAvailable)
		}
		if res.err != nil {
			return fail(res.err)
		}
		resp.MemberID = kmsg.StringPtr(req.MemberID)
		resp.MemberEpoch = res.epoch
		resp.HeartbeatIntervalMillis = int32(settings.heartbeatInterval.Milliseconds())
		if res.epoch >= 0 {
			a := kmsg.NewShareGroupHeartbeatResponseAssignment()
			ids := make([]TopicID, 0, len(res.assignment))
			for id := range res.assignment {
				ids = append(ids, id)
			}
			slices.SortFunc(ids, func(x, y TopicID) int { return slices.Compare(x[:], y[:]) })
			for _, id := range ids {
				tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
				tp.TopicID = id
				tp.Partitions = slices.Clone(res.assignment[id])
				a.TopicPartitions = append(a.TopicPartitions, tp)
			}
			resp.Assignment = &a
		}
		return resp
	})
}
