package appliance

// Fetch (key 1), v4-v16, sessionless.
//
// Partitions are read on their owner shards in request order against one
// response byte budget (max_bytes, capped by the broker's fetch.max.bytes,
// 55 MiB by default, as in Kafka); within it each partition gives at most
// its partition_max_bytes, except that the first non-empty partition always
// returns its first batch whole (KIP-74). A fetch offset inside a batch
// returns that whole batch. With fewer than min_bytes available the request
// parks on the partitions' waiter lists until an append wakes it or
// max_wait_ms passes. OFFSET_OUT_OF_RANGE is returned only outside
// [log start offset, log end offset]. Incremental fetch sessions (KIP-227)
// are not kept: every response carries session id 0, which tells clients to
// send full requests; a full request (session epoch 0 or -1) is answered
// whatever session id it names. v13+ names topics by id (UNKNOWN_TOPIC_ID otherwise).
// read_committed (isolation level 1) reads stop at the last stable offset
// and carry the aborted transactions that overlap the fetched range, from
// the partition's transaction index (nvme.Log.AbortedTxns); every response
// carries the LSO. Below v10, a partition whose topic has
// compression.type=zstd answers UNSUPPORTED_COMPRESSION_TYPE (KIP-110: Kafka
// decides by the topic config, not by the stored batches).

import (
	"errors"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var fetchAPI = apiDef{key: 1, min: 4, max: 16, handle: handleFetch}

// fetchPartIn is one requested partition, resolved against the image.
type fetchPartIn struct {
	ti, pi       int
	topic        *TopicImage
	partition    int32
	offset       int64
	maxBytes     int32
	leaderEpoch  int32
	lastFetchedE int32
}

func handleFetch(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.FetchRequest)
	fs := &stateOf(r).fetch
	// Epoch 0 (INITIAL) and -1 (FINAL) make a full request, whatever the
	// session id (Kafka closes the named session and answers in full); only an
	// incremental request (epoch > 0) needs a session, and we keep none.
	if req.SessionEpoch != 0 && req.SessionEpoch != -1 {
		return fs.enc.encode(r.Version, kerr.FetchSessionIDNotFound.Code, 0, nil)
	}
	im := b.currentImage()
	fs.reset(b, r, req, im)
	for _, t := range req.Topics {
		var topic *TopicImage
		if r.Version >= 13 {
			topic = im.TopicsByID[TopicID(t.TopicID)]
		} else {
			topic = im.Topics[t.Topic]
		}
		name, id := t.Topic, TopicID(t.TopicID)
		if topic != nil {
			name, id = topic.Name, topic.ID
		}
		ot := fs.addTopic(name, id)
		for _, p := range t.Partitions {
			op := fetchPartOut{partition: p.Partition, hw: -1, lso: -1, logStart: -1, readCommitted: req.IsolationLevel == 1, maxBytes: p.PartitionMaxBytes}
			switch {
			case topic == nil && r.Version >= 13:
				op.errCode = kerr.UnknownTopicID.Code
			case b.topicDenied(r, kmsg.ACLOperationRead, ot.name): // security.Authorizer.TopicDenied
				op.errCode = kerr.TopicAuthorizationFailed.Code
			case topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				op.errCode = kerr.UnknownTopicOrPartition.Code
			case im.NotLeader(topic, p.Partition, b.cfg.NodeID): // another broker leads it (KIP-951 hints)
				op.errCode, op.leaderHint = kerr.NotLeaderForPartition.Code, true
				op.leaderID, op.leaderEpoch, fs.enc.brokers = metadata.FetchNotLeader(fs.enc.brokers, im, r, topic, p.Partition)
			case r.Version < 10 && b.topicCompression(topic) == "zstd":
				op.errCode = kerr.UnsupportedCompressionType.Code
			default:
				fs.ins = append(fs.ins, fetchPartIn{ti: len(fs.outs) - 1, pi: len(ot.parts), topic: topic, partition: p.Partition,
					offset: p.FetchOffset, maxBytes: p.PartitionMaxBytes, leaderEpoch: p.CurrentLeaderEpoch, lastFetchedE: p.LastFetchedEpoch})
			}
			addFetchPart(ot, op)
		}
	}
	if len(fs.ins) == 0 {
		return fs.enc.encode(r.Version, 0, 0, fs.outs)
	}
	// Read on the owner shards, answering from the last (fetchState.begin).
	fs.begin()
	return wire.AnswerLater{}
}

// topicCompression is t's effective compression.type: its own config, else
// the broker's default.
func (b *Broker) topicCompression(t *TopicImage) string {
	if v, ok := t.Configs["compression.type"]; ok {
		return v
	}
	return b.cfg.TopicDefaults["compression.type"]
}

// readPartition runs on the owner shard. It returns the bytes added and
// whether the partition answered with an error.
func readPartition(part *partition, in fetchPartIn, op *fetchPartOut, budget int32, first bool, isolation int8) (int32, bool) {
	op.chunks, op.bytes, op.hasRecords, op.errCode, op.limited = op.chunks[:0], 0, false, 0, false
	if part == nil {
		op.errCode = kerr.NotLeaderForPartition.Code
		return 0, true
	}
	if part.offline != nil {
		op.errCode = kerr.KafkaStorageError.Code
		return 0, true
	}
	hw := part.highWatermark()
	op.hw, op.lso, op.logStart = hw, min(hw, part.log.LastStableOffset()), part.log.LogStartOffset()
	op.aborted = nil
	if in.leaderEpoch >= 0 {
		switch {
		case in.leaderEpoch < part.epoch:
			op.errCode = kerr.FencedLeaderEpoch.Code
			return 0, true
		case in.leaderEpoch > part.epoch:
			op.errCode = kerr.UnknownLeaderEpoch.Code
			return 0, true
		}
	}
	limit := min(in.maxBytes, budget)
	if limit < 0 {
		limit = 0
	}
	maxOffset := hw
	if isolation == 1 {
		maxOffset = op.lso
	}
	res, ends, err := part.log.ReadBatchesInto(op.chunks, op.ends[:0], in.offset, limit, maxOffset, first)
	op.ends = ends
	if err != nil {
		op.errCode = wire.ErrCode(err)
		if errors.Is(err, nvme.ErrOffsetOutOfRange) {
			op.hasRecords = false
		}
		return 0, true
	}
	op.hasRecords = true
	op.chunks, op.bytes, op.limited = res.Chunks, res.Bytes, res.Limited
	if isolation == 1 && res.Bytes > 0 {
		op.aborted = part.log.AbortedTxns(in.offset, op.lso)
	}
	return res.Bytes, false
}
