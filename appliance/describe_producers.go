package appliance

// DescribeProducers (key 61), v0 (KIP-664).
//
// Lists the producers each partition remembers (idempotent and
// transactional), from the partition's producer state on its owner shard:
// id, epoch, last sequence, last timestamp, coordinator epoch of the last
// marker and the first offset of the open transaction (-1 when none).
// Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var describeProducersAPI = apiDef{key: 61, min: 0, max: 0, handle: handleDescribeProducers}

func handleDescribeProducers(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	im := b.currentImage()
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	var waits []chan struct{}
	for ti, t := range req.Topics {
		topic := im.Topics[t.Topic]
		for pi, p := range t.Partitions {
			out := &resp.Topics[ti].Partitions[pi]
			if topic == nil || p < 0 || int(p) >= len(topic.Partitions) {
				out.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			ch := make(chan struct{})
			waits = append(waits, ch)
			b.withPartition(topic, p, func(part *partition) {
				defer close(ch)
				switch {
				case part == nil:
					out.ErrorCode = kerr.NotLeaderForPartition.Code
					return
				case part.offline != nil:
					out.ErrorCode = kerr.KafkaStorageError.Code
					return
				}
				for _, e := range part.log.Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = e.ProducerID, int32(e.Epoch)
					ap.LastSequence, ap.LastTimestamp = e.LastSequence(), e.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.CoordinatorEpoch, e.CurrentTxnFirstOffset
					out.ActiveProducers = append(out.ActiveProducers, ap)
				}
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
