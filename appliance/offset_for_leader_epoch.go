package appliance

// OffsetForLeaderEpoch (key 23), v0-v4 (KIP-101, KIP-279, KIP-320).
//
// Per partition, on its owner shard, the log's leader-epoch cache answers
// (nvme.Log.EndOffsetForEpoch, Kafka's LeaderEpochFileCache.endOffsetFor):
// for the current epoch the log end offset; for an older one the largest
// epoch at or below it (returned from v1) and the start offset of the next
// larger epoch; -1/-1 for an epoch above every known one. v2+ checks
// current_leader_epoch (-1 skips the check): an older one answers
// FENCED_LEADER_EPOCH (74), a newer one UNKNOWN_LEADER_EPOCH (75).
// An unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION (3), a
// partition not open on its shard NOT_LEADER_FOR_PARTITION (6), an offline
// one KAFKA_STORAGE_ERROR (56). replica_id (v3+) is ignored: there are no
// followers, and with one replica a consumer sees the same answer (the high
// watermark is the log end offset).

import (
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var offsetForLeaderEpochAPI = apiDef{key: 23, min: 0, max: 4, handle: handleOffsetForLeaderEpoch}

type epochEndResult struct {
	errCode     int16
	leaderEpoch int32
	endOffset   int64
}

type epochEndWait struct {
	ti, pi int
	ch     chan epochEndResult
}

func handleOffsetForLeaderEpoch(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.OffsetForLeaderEpochRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		im := b.currentImage()
		var waits []epochEndWait
		for ti, t := range req.Topics {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			topic := im.Topics[t.Topic]
			for pi, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition = p.Partition
				rp.LeaderEpoch, rp.EndOffset = -1, -1
				if b.topicDenied(r, kmsg.ACLOperationDescribe, t.Topic) {
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				} else if topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else {
					ch := make(chan epochEndResult, 1)
					current := int32(-1)
					if r.Version >= 2 {
						current = p.CurrentLeaderEpoch
					}
					epoch := p.LeaderEpoch
					b.withPartition(topic, p.Partition, func(part *partition) { ch <- epochEndOn(part, current, epoch) })
					waits = append(waits, epochEndWait{ti, pi, ch})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		// A shard answers at once; the timer only guards against a shard
		// that stopped (broker shutting down).
		timer := time.NewTimer(30 * time.Second)
		defer timer.Stop()
		for _, w := range waits {
			rp := &resp.Topics[w.ti].Partitions[w.pi]
			select {
			case res := <-w.ch:
				rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = res.errCode, res.leaderEpoch, res.endOffset
			case <-timer.C:
				rp.ErrorCode = kerr.RequestTimedOut.Code
				timer.Reset(0)
			}
		}
		return resp
	})
}

// epochEndOn runs on part's shard. current is the client's current leader
// epoch (-1: no check).
func epochEndOn(part *partition, current, epoch int32) epochEndResult {
	res := epochEndResult{leaderEpoch: -1, endOffset: -1}
	switch {
	case part == nil || part.log == nil:
		res.errCode = kerr.NotLeaderForPartition.Code
	case part.offline != nil:
		res.errCode = kerr.KafkaStorageError.Code
	case current != -1 && current < part.epoch:
		res.errCode = kerr.FencedLeaderEpoch.Code
	case current > part.epoch:
		res.errCode = kerr.UnknownLeaderEpoch.Code
	default:
		res.leaderEpoch, res.endOffset = part.log.EndOffsetForEpoch(epoch)
	}
	return res
}
