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
// producer (Broker.txnProduce).
// A zstd batch below v7 answers UNSUPPORTED_COMPRESSION_TYPE (KIP-110).

import (
	"strconv"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var produceAPI = apiDef{key: 0, min: 3, max: 11, advertiseFrom: 0, handle: handleProduce, unsupported: produceUnsupported}

func produceUnsupported(_ *Broker, r *wire.Request) any {
	req, ok := r.Req.(*kmsg.ProduceRequest)
	if !ok || r.Version > 11 {
		return wire.Close{Reason: "unsupported Produce version"}
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
		return wire.Close{Reason: "acks=0 produce with an unsupported version (message format v0/v1)"}
	}
	return resp
}

func handleProduce(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.ProduceRequest)
	ps := &stateOf(r).produce
	ps.reset(b, req.Acks)
	im := b.currentImage()
	var txnItems []txnProduceItem
	badAcks := req.Acks != 0 && req.Acks != 1 && req.Acks != -1
	txn := req.TransactionID != nil && *req.TransactionID != ""
	for ti, t := range req.Topics {
		rt := ps.addTopic(t.Topic)
		topic := im.Topics[t.Topic]
		denied := b.produceDenied(r, req, t.Topic) // security.Authorizer.ProduceDenied
		for pi, p := range t.Partitions {
			rp := addProducePartition(rt, p.Partition)
			switch {
			case denied != 0:
				rp.ErrorCode = denied
			case badAcks:
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case im.NotLeader(topic, p.Partition, b.cfg.NodeID): // another broker leads it (KIP-951 hints)
				metadata.ProduceNotLeader(&ps.resp, rp, im, r, topic, p.Partition)
			case isInternalTopic(t.Topic):
				rp.ErrorCode = kerr.InvalidTopicException.Code
			case len(p.Records) == 0:
				// Kafka's ProduceRequest.validateRecords: at least one batch.
				rp.ErrorCode = kerr.InvalidRecord.Code
				if r.Version >= 8 {
					msg := "a produce request must have at least one record batch per partition"
					rp.ErrorMessage = &msg
				}
			case r.Version < 7 && len(p.Records) > 22 && p.Records[22]&nvme.AttrCompressionMask == nvme.CompressionZstd:
				// KIP-110: zstd batches need Produce v7+ (Kafka's
				// ProduceRequest.validateRecords).
				rp.ErrorCode = kerr.UnsupportedCompressionType.Code
			case wire.ClientBatchViolation(p.Records, txn) != "":
				rp.ErrorCode = kerr.InvalidRecord.Code
				if r.Version >= 8 {
					msg := wire.ClientBatchViolation(p.Records, txn)
					rp.ErrorMessage = &msg
				}
			default:
				// The append is posted to the owner shard below, once
				// every wait is counted (produceState.postWaits); the topic's
				// compression.type is applied here, off the shard (KIP-390).
				recs := b.front.recompress.Records(topic.Configs, b.ctl.defaults.Get(b.cfg.TopicDefaults), p.Records)
				w := ps.addWait(ti, pi, b.shardFor(topic, p.Partition), tpKey{topic.ID, p.Partition}, recs)
				if txn {
					txnItems = append(txnItems, txnProduceItem{tp: txnTP{Topic: t.Topic, Partition: p.Partition}, records: recs, w: w})
				}
			}
		}
	}
	throttle := b.produceQuota(r, req) // producer_byte_rate (quota.Manager.RecordProduce)
	if ps.n == 0 && throttle == 0 {
		if req.Acks == 0 {
			if reason := acks0Failure(&ps.resp); reason != "" {
				return wire.Close{Reason: reason}
			}
			return nil
		}
		return &ps.resp
	}
	ps.throttle = throttle
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 || req.Acks != -1 {
		timeout = 30 * time.Second
	}
	// Read before posting: once the waits are posted, the last one to
	// finish may hand the request state back to the pool, and another
	// connection's request may reset it while this goroutine still runs
	// (found by the race detector in TestFetchMinBytesCountsLimitedPartitions).
	nothing := ps.n == 0
	ps.start(timeout)
	if len(txnItems) > 0 {
		b.txnProduce(*req.TransactionID, txnItems)
	} else {
		ps.postWaits()
	}
	if nothing {
		ps.finish() // throttled, nothing to wait for
	}
	return wire.AnswerLater{}
}

// acks0Failure describes the first failed partition of a produce response,
// or "" when all succeeded. An acks=0 producer gets no answer, so, as
// Kafka does, the broker closes its connection instead: the client sees
// the failure, refreshes its metadata and retries or reports it.
func acks0Failure(resp *kmsg.ProduceResponse) string {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return "acks=0 produce to " + t.Topic + "-" + strconv.Itoa(int(p.Partition)) + " failed: " + kerr.ErrorForCode(p.ErrorCode).Error()
			}
		}
	}
	return ""
}

// isInternalTopic reports the topics clients may not produce to directly.
func isInternalTopic(name string) bool {
	return name == metadataTopic || name == offsetsTopic || name == txnTopic
}
