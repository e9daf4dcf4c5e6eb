package appliance

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

var describeShareGroupOffsetsAPI = apiDef{key: 90, min: 0, max: 1, handle: handleDescribeShareGroupOffsets}

func handleDescribeShareGroupOffsets(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeShareGroupOffsetsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		im := b.currentImage()
		for _, rg := range req.Groups {
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID = rg.GroupID
			fail := func(err *kerr.Error) {
				g.ErrorCode = err.Code
				resp.Groups = append(resp.Groups, g)
			}
			if err := b.groupRefusal(r, kmsg.ACLOperationDescribe, rg.GroupID); err != nil {
				fail(err)
				continue
			}
			ans, ok := askShare(b, rg.GroupID, func(sm *shareManager, reply func(shareViewAnswer)) {
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
			part := func(t *TopicImage, p int32) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				if t == nil || p < 0 || int(p) >= len(t.Partitions) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					return rp
				}
				if s, ok := ans.view.parts[shareTP{t.ID, p}]; ok {
					rp.StartOffset = s.offset
					rp.LeaderEpoch = t.Partitions[p].LeaderEpoch
					spso, lag, hw, live := b.coord.groups.share.liveStart(rg.GroupID, t, p)
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
					if t := im.TopicsByID[id]; t != nil && !b.topicDenied(r, kmsg.ACLOperationDescribe, t.Name) {
						names = append(names, t.Name)
					}
				}
				sort.Strings(names)
				for _, name := range names {
					t := im.Topics[name]
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
					t := im.Topics[qt.Topic]
					rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
					rt.Topic = qt.Topic
					if t != nil {
						rt.TopicID = t.ID
					}
					for _, p := range qt.Partitions {
						rp := part(t, p)
						if t != nil && b.topicDenied(r, kmsg.ACLOperationDescribe, t.Name) {
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
