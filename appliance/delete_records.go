package appliance

// DeleteRecords (key 21), v0-v2.
//
// Per partition, on its owner shard: the log start offset (low watermark)
// moves up to the requested offset, -1 meaning the high watermark (all
// records). Whole segments below it are deleted by the log; reads below it
// answer OFFSET_OUT_OF_RANGE. An offset below the current log start offset
// changes nothing. The answer's low_watermark is the resulting log start
// offset, and the log-start-offset checkpoint is rewritten before the
// answer so the deletion survives a restart.
//
// Errors per partition: UNKNOWN_TOPIC_OR_PARTITION (3) for an unknown topic
// or partition, OFFSET_OUT_OF_RANGE (1) for an offset above the high
// watermark or negative other than -1, POLICY_VIOLATION (44) for a topic
// whose cleanup.policy lacks "delete" (as Kafka), NOT_LEADER_FOR_PARTITION
// (6) for a partition not open on its shard, KAFKA_STORAGE_ERROR (56) for an
// offline partition. timeout_ms only bounds waiting for replicas in Kafka;
// with one replica the deletion completes at once.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var deleteRecordsAPI = apiDef{key: 21, min: 0, max: 2, handle: handleDeleteRecords}

type deleteRecordsResult struct {
	lowWatermark int64
	changed      bool
	err          error
}

type deleteRecordsWait struct {
	ti, pi int
	ch     chan deleteRecordsResult
}

func handleDeleteRecords(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.DeleteRecordsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
		im := b.currentImage()
		var waits []deleteRecordsWait
		for ti, t := range req.Topics {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			topic := im.Topics[t.Topic]
			deletable := topic != nil && slices.Contains(metadata.SplitConfigList(b.effectiveTopicConfigs(topic)["cleanup.policy"]), "delete")
			for pi, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition = p.Partition
				rp.LowWatermark = -1
				switch {
				case b.topicDenied(r, kmsg.ACLOperationDelete, t.Topic):
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case !deletable:
					rp.ErrorCode = kerr.PolicyViolation.Code
				default:
					ch := make(chan deleteRecordsResult, 1)
					offset := p.Offset
					b.withPartition(topic, p.Partition, func(part *partition) { ch <- deleteRecordsOn(part, offset) })
					waits = append(waits, deleteRecordsWait{ti, pi, ch})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		// A shard answers at once; the timer only guards against a shard
		// that stopped (broker shutting down).
		timer := time.NewTimer(30 * time.Second)
		defer timer.Stop()
		changed := false
		for _, w := range waits {
			rp := &resp.Topics[w.ti].Partitions[w.pi]
			select {
			case res := <-w.ch:
				rp.ErrorCode = wire.ErrCode(res.err)
				rp.LowWatermark = res.lowWatermark
				changed = changed || res.changed
			case <-timer.C:
				rp.ErrorCode = kerr.RequestTimedOut.Code
				timer.Reset(0)
			}
		}
		if changed {
			b.writeLogStartOffsets()
		}
		return resp
	})
}

// deleteRecordsOn runs on part's shard: it moves the log start offset up to
// offset (-1: the high watermark).
func deleteRecordsOn(part *partition, offset int64) deleteRecordsResult {
	if part == nil || part.log == nil {
		return deleteRecordsResult{lowWatermark: -1, err: kerr.NotLeaderForPartition}
	}
	if part.offline != nil {
		return deleteRecordsResult{lowWatermark: -1, err: fmt.Errorf("%w: %v", kerr.KafkaStorageError, part.offline)}
	}
	hw := part.highWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return deleteRecordsResult{lowWatermark: -1, err: fmt.Errorf("%w: cannot delete records of %s-%d up to offset %d: high watermark is %d",
			kerr.OffsetOutOfRange, part.topic, part.index, offset, hw)}
	}
	if offset <= part.log.LogStartOffset() {
		return deleteRecordsResult{lowWatermark: part.log.LogStartOffset()}
	}
	if err := part.log.SetLogStartOffset(offset); err != nil {
		if errors.Is(err, nvme.ErrLogClosed) {
			part.goOffline(err)
		}
		return deleteRecordsResult{lowWatermark: -1, err: fmt.Errorf("cannot delete records of %s-%d up to offset %d: %w", part.topic, part.index, offset, err)}
	}
	part.publishView()
	return deleteRecordsResult{lowWatermark: part.log.LogStartOffset(), changed: true}
}
