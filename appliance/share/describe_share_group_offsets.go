package share

// DescribeShareGroupOffsets (key 90), v0-v1 (KIP-932, "Share group
// administration"; v1 adds Lag, KIP-1226).
//
// Per group, the persisted share-partition start offset of the requested
// partitions (Topics null: every initialized share-partition of the
// group). A partition whose share-partition was never initialized answers
// StartOffset -1. The SPSO is the live one when the share-partition is
// loaded, else the persisted one. Lag (v1) is the high watermark less the
// SPSO less the in-flight records already Acknowledged or Archived; -1 for
// an uninitialized share-partition. An id that is no share group answers GROUP_ID_NOT_FOUND, an
// empty one INVALID_GROUP_ID; an unknown topic answers
// UNKNOWN_TOPIC_OR_PARTITION for its partitions.

import (
	"sort"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) describeShareGroupOffsetsAPI() wire.API {
	return wire.API{Key: 90, Min: 0, Max: 1, Handle: h.handleDescribeShareGroupOffsets}
}

func (h *handlers) handleDescribeShareGroupOffsets(r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeShareGroupOffsetsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		im := h.host.Image()
		store := h.host.Store()
		for _, rg := range req.Groups {
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID = rg.GroupID
			fail := func(err *kerr.Error) {
				g.ErrorCode = err.Code
				resp.Groups = append(resp.Groups, g)
			}
			if err := h.groupRefusal(r, kmsg.ACLOperationDescribe, rg.GroupID); err != nil {
				fail(err)
				continue
			}
			ans, ok := askShare(store, rg.GroupID, func(sm *Manager, reply func(shareViewAnswer)) {
				view, found := sm.view(rg.GroupID)
				reply(shareViewAnswer{view, found})
			}).Wait()
			if !ok {
				fail(kerr.CoordinatorNotAvailable)
				continue
			}
			if !ans.found {
				fail(kerr.GroupIDNotFound)
				continue
			}
			part := func(t *Topic, p int32) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				if !t.has(p) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					return rp
				}
				if s, ok := ans.view.parts[shareTP{t.ID, p}]; ok {
					rp.StartOffset = s.offset
					_, rp.LeaderEpoch = im.Leader(t.ID, p)
					spso, lag, hw, live := store.liveStart(rg.GroupID, t.ID, p)
					switch {
					case live:
						rp.StartOffset, rp.Lag = spso, lag
					case hw >= 0:
						rp.Lag = max(hw-s.offset, 0)
					}
				}
				return rp
			}
			if rg.Topics == nil {
				byTopic := map[TopicID][]int32{}
				for tp := range ans.view.parts {
					byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
				}
				var names []string
				for id := range byTopic {
					if t, ok := im.TopicByID(id); ok && !h.topicDenied(r, kmsg.ACLOperationDescribe, t.Name) {
						names = append(names, t.Name)
					}
				}
				sort.Strings(names)
				for _, name := range names {
					t := topicByName(im, name)
					rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
					rt.Topic, rt.TopicID = name, t.ID
					ps := byTopic[t.ID]
					sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
					for _, p := range ps {
						rt.Partitions = append(rt.Partitions, part(t, p))
					}
					g.Topics = append(g.Topics, rt)
				}
			} else {
				for _, qt := range rg.Topics {
					t := topicByName(im, qt.Topic)
					rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
					rt.Topic = qt.Topic
					if t != nil {
						rt.TopicID = t.ID
					}
					for _, p := range qt.Partitions {
						rp := part(t, p)
						if t != nil && h.topicDenied(r, kmsg.ACLOperationDescribe, t.Name) {
							rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
						}
						rt.Partitions = append(rt.Partitions, rp)
					}
					g.Topics = append(g.Topics, rt)
				}
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	})
}
