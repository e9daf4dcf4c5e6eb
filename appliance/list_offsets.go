package appliance

// ListOffsets (key 2), v1-v8.
//
// Per partition, on its owner shard: timestamp -2 gives the log start
// offset, -1 the high watermark (the last stable offset for read_committed,
// which never passes it), -3 (v7+) the offset and timestamp of the record
// with the largest timestamp, -4 (v8+, KIP-405) the local log start offset;
// any other timestamp the first offset whose timestamp is at least it, or
// -1/-1 when there is none. v4+ checks current_leader_epoch (FENCED or
// UNKNOWN_LEADER_EPOCH) and returns the leader epoch.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var listOffsetsAPI = apiDef{key: 2, min: 1, max: 8, handle: handleListOffsets}

func handleListOffsets(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	im := b.currentImage()
	// Build the whole response first: shards write into it concurrently
	// afterwards, each into its own element.
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		topic := im.Topics[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
			if b.topicDenied(r, kmsg.ACLOperationDescribe, t.Topic) {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	var waits []chan struct{}
	for ti, t := range req.Topics {
		topic := im.Topics[t.Topic]
		for pi, p := range t.Partitions {
			out := &resp.Topics[ti].Partitions[pi]
			if out.ErrorCode != 0 {
				continue
			}
			ch := make(chan struct{})
			waits = append(waits, ch)
			in, isolation, version := p, req.IsolationLevel, r.Version
			b.withPartition(topic, p.Partition, func(part *partition) {
				defer close(ch)
				listOffset(part, in, isolation, version, out)
			})
		}
	}
	if len(waits) == 0 {
		return resp
	}
	return wire.Deferred(func() any {
		for _, ch := range waits {
			<-ch
		}
		return resp
	})
}

func listOffset(part *partition, in kmsg.ListOffsetsRequestTopicPartition, isolation int8, version int16, out *kmsg.ListOffsetsResponseTopicPartition) {
	if part == nil {
		out.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	if part.offline != nil {
		out.ErrorCode = kerr.KafkaStorageError.Code
		return
	}
	if version >= 4 && in.CurrentLeaderEpoch >= 0 {
		switch {
		case in.CurrentLeaderEpoch < part.epoch:
			out.ErrorCode = kerr.FencedLeaderEpoch.Code
			return
		case in.CurrentLeaderEpoch > part.epoch:
			out.ErrorCode = kerr.UnknownLeaderEpoch.Code
			return
		}
	}
	out.LeaderEpoch = part.epoch
	// The last offset a consumer of this isolation level may read, plus
	// one: an offset found by timestamp at or past it is not answered, as
	// Kafka filters them.
	bound := part.highWatermark()
	if isolation == 1 {
		bound = min(bound, part.log.LastStableOffset())
	}
	switch in.Timestamp {
	case -2, -4:
		out.Offset = part.log.LogStartOffset()
	case -1:
		out.Offset = bound
	case -3:
		ts, off := part.log.MaxTimestamp()
		out.Timestamp, out.Offset = ts, off
		if off < 0 || off >= bound {
			out.Timestamp, out.Offset = -1, -1
		}
	default:
		off, ts, ok := part.log.OffsetForTimestamp(in.Timestamp)
		if ok && off < bound {
			out.Offset, out.Timestamp = off, ts
		} else {
			out.Offset, out.Timestamp = -1, -1
		}
	}
}
