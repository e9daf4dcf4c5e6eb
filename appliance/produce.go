package appliance

// Produce (key 0), v3-v11; advertised from v0 as Kafka 4 does (KAFKA-18659:
// librdkafka before 2.10 stops compressing when v0 is not listed), while
// v0-v2 requests (message sets v0/v1) get UNSUPPORTED_VERSION per partition.
//
// Each partition's records go to its owner shard in request order, so two
// requests on one connection append in the order they were sent. acks=0
// sends no response; acks=1 answers after the append; acks=-1 answers after
// the shard's group-committed fdatasync (one replica: the ISR is the leader).
// A partition the request cannot reach answers UNKNOWN_TOPIC_OR_PARTITION;
// a request that waits past timeout_ms answers REQUEST_TIMED_OUT.
// With a transactional id every batch must be transactional (INVALID_RECORD
// otherwise) and its partition part of the producer's open transaction, as
// the coordinator is asked before the append (KIP-890's verification):
// INVALID_TXN_STATE when it is not, INVALID_PRODUCER_EPOCH for a fenced
// producer (txn_produce.go).

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiDef{key: 0, min: 3, max: 11, advertiseMin: 0, advertise: true, handle: handleProduce, unsupported: produceUnsupported})
}

func produceUnsupported(r *request) any {
	req, ok := r.req.(*kmsg.ProduceRequest)
	if !ok || r.version > 11 {
		return closeConn{reason: "unsupported Produce version"}
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.UnsupportedVersion.Code
			rp.BaseOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}

type produceWait struct {
	ti, pi int
	ch     chan produceResult
}

func handleProduce(b *Broker, r *request) any {
	req := r.req.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	im := b.currentImage()
	var waits []produceWait
	var txnItems []txnProduceItem
	badAcks := req.Acks != 0 && req.Acks != 1 && req.Acks != -1
	txn := req.TransactionID != nil && *req.TransactionID != ""
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		topic := im.Topics[t.Topic]
		for pi, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			switch {
			case badAcks:
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case isInternalTopic(t.Topic):
				rp.ErrorCode = kerr.InvalidTopicException.Code
			case p.Records == nil:
				rp.ErrorCode = kerr.CorruptMessage.Code
			case clientBatchViolation(p.Records, txn) != "":
				rp.ErrorCode = kerr.InvalidRecord.Code
				if r.version >= 8 {
					msg := clientBatchViolation(p.Records, txn)
					rp.ErrorMessage = &msg
				}
			default:
				ch := make(chan produceResult, 1)
				records, acks := p.Records, req.Acks
				post := func() {
					b.withPartition(topic, p.Partition, func(part *partition) {
						if part == nil {
							ch <- produceResult{err: kerr.NotLeaderForPartition, baseOffset: -1, logAppendTime: -1, logStartOffset: -1}
							return
						}
						part.append(records, acks, func(res produceResult) { ch <- res })
					})
				}
				if txn {
					txnItems = append(txnItems, txnProduceItem{tp: txnTP{t.Topic, p.Partition}, records: records, ch: ch, post: post})
				} else {
					post()
				}
				waits = append(waits, produceWait{ti, pi, ch})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(txnItems) > 0 {
		b.txnProduce(*req.TransactionID, txnItems)
	}
	if len(waits) == 0 {
		if req.Acks == 0 {
			return nil
		}
		return resp
	}
	return deferred(func() any {
		defer b.metrics.enterProducePurgatory(req.Acks)()
		timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
		if timeout <= 0 || req.Acks != -1 {
			timeout = 30 * time.Second
		}
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		for _, w := range waits {
			rp := &resp.Topics[w.ti].Partitions[w.pi]
			select {
			case res := <-w.ch:
				rp.ErrorCode = errCode(res.err)
				rp.BaseOffset = res.baseOffset
				rp.LogAppendTime = res.logAppendTime
				rp.LogStartOffset = res.logStartOffset
				if res.err != nil && r.version >= 8 {
					msg := res.err.Error()
					rp.ErrorMessage = &msg
				}
			case <-timer.C:
				rp.ErrorCode = kerr.RequestTimedOut.Code
				// Every remaining wait times out too.
				timer.Reset(0)
			}
		}
		if req.Acks == 0 {
			return nil
		}
		return resp
	})
}

// isInternalTopic reports the topics clients may not produce to directly.
func isInternalTopic(name string) bool {
	return name == metadataTopic || name == offsetsTopic || name == txnTopic
}

// clientBatchViolation reports why a client's records may not be appended,
// or "": clients may not write control batches (transaction markers are the
// coordinator's), and transactional batches need a transactional id in the
// request. Malformed framing is left to the log's validation.
func clientBatchViolation(records []byte, txn bool) string {
	for len(records) >= 23 {
		attrs := binary.BigEndian.Uint16(records[21:])
		if attrs&0x20 != 0 {
			return "clients may not write control batches"
		}
		if attrs&0x10 != 0 && !txn {
			return "transactional batches need a transactional id in the produce request"
		}
		n := int64(int32(binary.BigEndian.Uint32(records[8:]))) + 12
		if n < 23 || n > int64(len(records)) {
			return ""
		}
		records = records[n:]
	}
	return ""
}
