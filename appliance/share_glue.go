package appliance

// The share groups' wiring (KIP-932). The share groups themselves
// (membership, share-partitions, sessions, their API handlers) are
// appliance/share; shareHost gives them the broker: its shards and
// partitions, the image, the group coordinator's placement and the
// authorizer.

import (
	"fmt"
	"time"

	"github.com/ringbroker/ringbroker/appliance/share"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareHost is the share.Host of a broker.
type shareHost struct{ b *Broker }

// Store is the running group coordinator's share groups, nil before Start
// loads the coordinator.
func (h shareHost) Store() *share.Store {
	if gc := h.b.coord.groups; gc != nil {
		return gc.share
	}
	return nil
}

// Image is the current metadata image.
func (h shareHost) Image() share.Image { return shareImage{h.b.currentImage()} }

// Authorize is the broker's authorizer check.
func (h shareHost) Authorize(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return h.b.authorize(r, op, rt, name)
}

// Shards is the number of shards.
func (h shareHost) Shards() int { return len(h.b.shards) }

// ShardOf is the id of the shard owning partition p of topic id.
func (h shareHost) ShardOf(id share.TopicID, p int32) int {
	return h.b.ctl.lm.shardOf(TopicID(id), p).id
}

// Post queues fn on shard.
func (h shareHost) Post(shard int, fn func()) { h.b.shards[shard].loop.Post(fn) }

// PostUnlessClosing queues fn on shard unless the broker is closing.
func (h shareHost) PostUnlessClosing(shard int, fn func()) {
	h.b.postUnlessClosing(h.b.shards[shard], fn)
}

// Call runs fn on shard and waits.
func (h shareHost) Call(shard int, fn func()) { h.b.shards[shard].loop.Call(fn) }

// Partition is partition p of topic id on shard, nil when not open there.
func (h shareHost) Partition(shard int, id share.TopicID, p int32) share.Partition {
	part := h.b.shards[shard].parts[tpKey{TopicID(id), p}]
	if part == nil {
		return nil
	}
	return sharePart{part}
}

// Closing is closed once the broker starts closing.
func (h shareHost) Closing() <-chan struct{} { return h.b.life.closing }

// Every calls fn every d until the broker closes.
func (h shareHost) Every(d time.Duration, fn func()) { h.b.every(d, fn) }

// GroupPartition is the __consumer_offsets partition of group among n.
func (h shareHost) GroupPartition(group string, n int32) int32 { return groupPartition(group, n) }

// shareImage is the share.Image of a metadata image.
type shareImage struct{ im *Image }

func shareTopic(t *TopicImage) (share.Topic, bool) {
	if t == nil {
		return share.Topic{}, false
	}
	return share.Topic{ID: share.TopicID(t.ID), Name: t.Name, Partitions: int32(len(t.Partitions))}, true
}

// TopicByID is the topic with id.
func (s shareImage) TopicByID(id share.TopicID) (share.Topic, bool) {
	return shareTopic(s.im.TopicsByID[TopicID(id)])
}

// TopicByName is the topic named name.
func (s shareImage) TopicByName(name string) (share.Topic, bool) {
	return shareTopic(s.im.Topics[name])
}

// Leader is the leader and leader epoch of partition p of topic id.
func (s shareImage) Leader(id share.TopicID, p int32) (int32, int32) {
	t := s.im.TopicsByID[TopicID(id)]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return -1, -1
	}
	return t.Partitions[p].Leader, t.Partitions[p].LeaderEpoch
}

// GroupConfigs is group's GROUP config resource.
func (s shareImage) GroupConfigs(group string) map[string]string { return s.im.GroupConfigs[group] }

// sharePart is the share.Partition of a partition, used on its shard.
type sharePart struct{ p *partition }

// Offline reports whether an I/O error took the partition offline.
func (s sharePart) Offline() bool { return s.p.offline != nil }

// LogStartOffset is the log start offset.
func (s sharePart) LogStartOffset() int64 { return s.p.log.LogStartOffset() }

// HighWatermark is the high watermark.
func (s sharePart) HighWatermark() int64 { return s.p.highWatermark() }

// LastStableOffset is the last stable offset.
func (s sharePart) LastStableOffset() int64 { return s.p.log.LastStableOffset() }

// AbortedTxns lists the aborted transactions overlapping [from, upTo).
func (s sharePart) AbortedTxns(from, upTo int64) []nvme.AbortedTxn {
	return s.p.log.AbortedTxns(from, upTo)
}

// OffsetForTimestamp is the first offset at or after ts.
func (s sharePart) OffsetForTimestamp(ts int64) (int64, bool) {
	off, _, ok := s.p.log.OffsetForTimestamp(ts)
	return off, ok
}

// ReadBatches appends the whole batches read from offset from to dst.
func (s sharePart) ReadBatches(dst []byte, from int64, maxBytes int32, end int64, first bool) ([]byte, error) {
	res, err := s.p.log.Read(from, maxBytes, end, first)
	if err != nil {
		return dst, err
	}
	out, err := appendChunks(dst, res.Chunks)
	nvme.ReleaseChunks(res.Chunks) // copied into out
	if err != nil {
		return out, fmt.Errorf("%w: %s-%d at %d: %w", share.ErrUnreadable, s.p.topic, s.p.index, from, err)
	}
	return out, nil
}

// Park registers w to be woken by the partition's next append.
func (s sharePart) Park(w *share.Waiter) { s.p.park(w) }

// alterGroupConfigs applies IncrementalAlterConfigs operations to the
// GROUP resource group (share.Config.Changes), as one metadata batch.
func (b *Broker) alterGroupConfigs(group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	changes, err := b.cfg.Share.Changes(group, ops)
	if err != nil || validateOnly || len(changes) == 0 {
		return err
	}
	recs := make([]MetadataRecord, 0, len(changes))
	for _, c := range changes {
		recs = append(recs, MetadataRecord{Config: &ConfigRecord{ResourceType: 32, Name: group, Key: c.Key, Value: c.Value}})
	}
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	next, err := b.ctl.commit(b.currentImage(), recs)
	if err != nil {
		return commitErr(err)
	}
	b.ctl.image.Store(next)
	return nil
}

// describeGroupConfigs lists the GROUP resource group's configs with their
// effective values (share.Config.Describe), for DescribeConfigs.
func (b *Broker) describeGroupConfigs(im *Image, group string, names []string, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	return b.cfg.Share.Describe(im.GroupConfigs[group], names, synonyms)
}
