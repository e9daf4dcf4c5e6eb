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
// [log start offset, log end offset]. From v7, incremental fetch sessions
// (KIP-227, fetchsession.Cache, Broker.fetchSessionAnswer): a full request
// at session epoch 0 creates one when the cache lets it, an incremental
// request names only the partitions whose position changed and is
// answered with only those that have records, an error or a changed high
// watermark, LSO or log start offset. v13+ names topics by id
// (UNKNOWN_TOPIC_ID otherwise).
// read_committed (isolation level 1) reads stop at the last stable offset
// and carry the aborted transactions that overlap the fetched range, from
// the partition's transaction index (nvme.Log.AbortedTxns); every response
// carries the LSO. Below v10, a partition whose topic has
// compression.type=zstd answers UNSUPPORTED_COMPRESSION_TYPE (KIP-110: Kafka
// decides by the topic config, not by the stored batches).

import (
	"errors"
	"time"

	"github.com/ringbroker/ringbroker/appliance/fetchsession"

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
	im := b.currentImage()
	fs.reset(b, r, req, im)
	if r.Version >= 7 {
		var code int16
		if fs.sessKind, fs.sess, code = b.front.fetchSessions.Begin(req.SessionID, req.SessionEpoch, time.Now()); code != 0 {
			return fs.enc.encode(r.Version, code, 0, nil)
		}
	}
	if fs.sessKind == fetchsession.Incremental {
		fs.addSessionParts()
	}
	for _, t := range req.Topics {
		topic := fs.topicOf(TopicID(t.TopicID), t.Topic)
		name, id := t.Topic, TopicID(t.TopicID)
		if topic != nil {
			name, id = topic.Name, topic.ID
		}
		if fs.sessKind == fetchsession.Incremental {
			// The session has the valid ones (addSessionParts); the
			// others are answered once, here.
			fs.addRefused(t, topic, name, id)
			continue
		}
		ot := fs.addTopic(name, id)
		for _, p := range t.Partitions {
			fs.addPart(ot, topic, p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch, p.LastFetchedEpoch, -1)
		}
	}
	if len(fs.ins) == 0 {
		return fs.enc.encode(r.Version, 0, fs.sessionAnswer(), fs.outs)
	}
	// Read on the owner shards, answering from the last (fetchState.begin).
	fs.begin()
	return wire.AnswerLater{}
}

// topicOf is the topic a request names: by id from v13, else by name.
func (fs *fetchState) topicOf(id TopicID, name string) *TopicImage {
	if fs.r.Version >= 13 {
		return fs.im.TopicsByID[id]
	}
	return fs.im.Topics[name]
}

// refusal is why partition p of topic (nil: unknown) is not read, or 0.
func (fs *fetchState) refusal(topic *TopicImage, name string, p int32) int16 {
	switch {
	case topic == nil && fs.r.Version >= 13:
		return kerr.UnknownTopicID.Code
	case fs.b.topicDenied(fs.r, kmsg.ACLOperationRead, name): // security.Authorizer.TopicDenied
		return kerr.TopicAuthorizationFailed.Code
	case topic == nil || p < 0 || int(p) >= len(topic.Partitions):
		return kerr.UnknownTopicOrPartition.Code
	case fs.im.NotLeader(topic, p, fs.b.cfg.NodeID): // another broker leads it (addPart adds KIP-951 hints)
		return kerr.NotLeaderForPartition.Code
	case fs.r.Version < 10 && fs.b.topicCompression(topic) == "zstd":
		return kerr.UnsupportedCompressionType.Code
	}
	return 0
}

// addPart adds partition p of ot's topic to the answer, and to the reads
// unless it is refused; sessIdx is its index in the fetch session (-1:
// none).
func (fs *fetchState) addPart(ot *fetchTopicOut, topic *TopicImage, p int32, offset int64, maxBytes, leaderEpoch, lastFetched, sessIdx int32) {
	op := fetchPartOut{partition: p, hw: -1, lso: -1, logStart: -1, readCommitted: fs.req.IsolationLevel == 1, maxBytes: maxBytes, sessIdx: sessIdx}
	switch op.errCode = fs.refusal(topic, ot.name, p); op.errCode {
	case kerr.NotLeaderForPartition.Code:
		op.leaderHint = true
		op.leaderID, op.leaderEpoch, fs.enc.brokers = metadata.FetchNotLeader(fs.enc.brokers, fs.im, fs.r, topic, p)
	case 0:
		op.read = true
		fs.ins = append(fs.ins, fetchPartIn{ti: len(fs.outs) - 1, pi: len(ot.parts), topic: topic, partition: p,
			offset: offset, maxBytes: maxBytes, leaderEpoch: leaderEpoch, lastFetchedE: lastFetched})
	}
	addFetchPart(ot, op)
}

// topicCompression is t's effective compression.type: its own config, else
// the broker's default.
func (b *Broker) topicCompression(t *TopicImage) string {
	if v, ok := t.Configs["compression.type"]; ok {
		return v
	}
	return b.ctl.defaults.Get(b.cfg.TopicDefaults)["compression.type"]
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
