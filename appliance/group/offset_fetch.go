package group

// OffsetFetch (key 9), v0-v9.
//
// Returns a group's committed offsets and their metadata strings. A group
// or partition without a commit answers offset -1 with no error. A null
// topic list (v2+) returns every committed partition. v8+ asks for several
// groups at once (each answered by its own coordinator shard). v7+
// require_stable answers UNSTABLE_OFFSET_COMMIT (offset -1) for a partition
// while a transactional commit of it is pending (Manager.unstableOffset). v9 carries
// the member id and member epoch of a KIP-848 consumer: when a member id is
// given for a consumer-protocol group, an unknown member answers
// UNKNOWN_MEMBER_ID and another epoch STALE_MEMBER_EPOCH (group level).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var offsetFetchAPI = apiDef{key: 9, min: 0, max: 9, handle: handleOffsetFetch}

// fetchMember is the member id and member epoch of an OffsetFetch v9 group.
type fetchMember struct {
	id    string
	epoch int32
}

type offsetFetchAnswer struct {
	err *kerr.Error
	out []fetchedOffset
}

// askOffsets starts a fetch for one group; topics nil asks for all. member
// is the v9 member id and epoch, checked against a consumer-protocol group
// when given.
func (h *handlers) askOffsets(group string, topics map[string][]int32, order []string, requireStable bool, member *fetchMember) wire.Reply[offsetFetchAnswer] {
	return ask(h, group, func(m *Manager, reply func(offsetFetchAnswer)) {
		if member != nil {
			if err := m.checkFetchMember(group, member.id, member.epoch); err != nil {
				reply(offsetFetchAnswer{err: err})
				return
			}
		}
		out := m.fetchOffsets(group, topics, order)
		if requireStable {
			for i := range out {
				if m.unstableOffset(group, groupTP{out[i].topic, out[i].partition}) {
					out[i].offset, out[i].err = -1, kerr.UnstableOffsetCommit
				}
			}
		}
		reply(offsetFetchAnswer{out: out})
	})
}

// waitOffsets waits for askOffsets' answer; COORDINATOR_NOT_AVAILABLE when
// no coordinator was asked or the broker closes first.
func waitOffsets(ch wire.Reply[offsetFetchAnswer]) offsetFetchAnswer {
	ans, ok := ch.Wait()
	if !ok {
		return offsetFetchAnswer{err: kerr.CoordinatorNotAvailable}
	}
	return ans
}

func handleOffsetFetch(h *handlers, r *wire.Request) any {
	req := r.Req.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version >= 8 {
		chans := make([]wire.Reply[offsetFetchAnswer], len(req.Groups))
		for i, g := range req.Groups {
			var topics map[string][]int32
			var order []string
			if g.Topics != nil {
				topics = map[string][]int32{}
				for _, t := range g.Topics {
					if _, ok := topics[t.Topic]; !ok {
						order = append(order, t.Topic)
					}
					topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
				}
			}
			if h.groupDenied(r, kmsg.ACLOperationDescribe, g.Group) {
				continue // answered GROUP_AUTHORIZATION_FAILED below
			}
			var member *fetchMember
			if r.Version >= 9 && g.MemberID != nil {
				member = &fetchMember{id: *g.MemberID, epoch: g.MemberEpoch}
			}
			chans[i] = h.askOffsets(g.Group, topics, order, req.RequireStable, member)
		}
		return wire.Deferred(func() any {
			for i, g := range req.Groups {
				ans := waitOffsets(chans[i])
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group = g.Group
				if !chans[i].Posted() && h.groupDenied(r, kmsg.ACLOperationDescribe, g.Group) {
					rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
					resp.Groups = append(resp.Groups, rg)
					continue
				}
				if ans.err != nil {
					rg.ErrorCode = ans.err.Code
				}
				for _, o := range ans.out {
					if n := len(rg.Topics); n == 0 || rg.Topics[n-1].Topic != o.topic {
						rt := kmsg.NewOffsetFetchResponseGroupTopic()
						rt.Topic = o.topic
						rg.Topics = append(rg.Topics, rt)
					}
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.partition, o.offset, o.leaderEpoch, strPtr(o.metadata)
					if o.err != nil {
						rp.ErrorCode = o.err.Code
					}
					rt := &rg.Topics[len(rg.Topics)-1]
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Groups = append(resp.Groups, rg)
			}
			return resp
		})
	}
	var topics map[string][]int32
	var order []string
	if req.Topics != nil || r.Version < 2 {
		topics = map[string][]int32{}
		for _, t := range req.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
	}
	if h.groupDenied(r, kmsg.ACLOperationDescribe, req.Group) {
		return offsetFetchGroupDenied(req, resp)
	}
	ch := h.askOffsets(req.Group, topics, order, r.Version >= 7 && req.RequireStable, nil)
	return wire.Deferred(func() any {
		ans := waitOffsets(ch)
		if ans.err != nil {
			resp.ErrorCode = ans.err.Code
		}
		for _, o := range ans.out {
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != o.topic {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = o.topic
				resp.Topics = append(resp.Topics, rt)
			}
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.partition, o.offset, o.leaderEpoch, strPtr(o.metadata)
			if ans.err != nil {
				rp.ErrorCode = ans.err.Code
			} else if o.err != nil {
				rp.ErrorCode = o.err.Code
			}
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		return resp
	})
}

// offsetFetchGroupDenied answers an OffsetFetch v0-v7 whose principal may
// not DESCRIBE the group: GROUP_AUTHORIZATION_FAILED at the top (v2+) and on
// every requested partition, as Kafka's getErrorResponse.
func offsetFetchGroupDenied(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) kmsg.Response {
	resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
