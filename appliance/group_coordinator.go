package appliance

// The group coordinator's wiring. The coordinator itself (classic and
// KIP-848 groups, assignors, offsets, their API handlers) is
// appliance/group; this file gives it what it needs of the broker:
//
//   - offsetsPartition is one __consumer_offsets partition: it holds the
//     partition's group.Manager and its share.Manager (the share groups of
//     KIP-932, appliance/share) on the partition's owner shard, and is the
//     group.Env and share.Env of both (clock, timers that post back to the
//     shard, member ids, durable appends);
//   - groupShards posts closures to the partitions' shards;
//   - groupBroker and groupImage are what the handlers read of the broker
//     (the loaded coordinator, the metadata image).
//
// At start the broker creates __consumer_offsets through the controller if
// it is missing (compacted, internal), then replays every partition's log
// into its managers before accepting connections: share records go to the
// share.Manager, everything else to the group.Manager.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsTopic is Kafka's internal topic for committed offsets and groups.
const offsetsTopic = group.OffsetsTopic

// groupPartition maps a group id to its __consumer_offsets partition among
// n (group.PartitionFor; the transaction coordinator places
// transactional ids the same way).
func groupPartition(groupID string, n int32) int32 { return group.PartitionFor(groupID, n) }

// groupCoordinator is the broker's handle on the group coordinator: the
// group.Coordinator and the partitions it runs on.
type groupCoordinator struct {
	b     *Broker
	cfg   group.Config
	topic *TopicImage
	parts []*offsetsPartition // by partition index; each used only on its shard
	share *share.Store        // share groups, share-partitions and share sessions
	gc    *group.Coordinator
}

// offsetsPartition is one __consumer_offsets partition's coordinator state.
type offsetsPartition struct {
	gc    *groupCoordinator
	st    *shardState
	key   tpKey
	index int32
	mgr   *groupManager  // the partition's classic and consumer groups
	share *share.Manager // the share groups of this partition
}

// startGroupCoordinator creates __consumer_offsets when missing, replays
// it, and starts the offset expiry. It runs in Start, before serving.
func (b *Broker) startGroupCoordinator() error {
	cfg := b.cfg.groupConfig()
	t := b.currentImage().Topics[offsetsTopic]
	if t == nil {
		var err error
		t, err = b.createTopic(TopicSpec{Name: offsetsTopic, Partitions: cfg.NumPartitions(), ReplicationFactor: 1,
			Configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": strconv.Itoa(int(b.cfg.OffsetsSegmentBytes)), "compression.type": "producer"}}, false)
		if err != nil {
			return fmt.Errorf("cannot create %s: %w", offsetsTopic, err)
		}
	}
	gc := &groupCoordinator{b: b, cfg: cfg, topic: t}
	gc.share = share.NewStore(shareHost{b}, b.cfg.Share)
	mgrs := make([]*group.Manager, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		op := &offsetsPartition{gc: gc, st: b.shardFor(t, p.Partition), key: tpKey{t.ID, p.Partition}, index: p.Partition}
		m := group.NewManager(op, cfg)
		op.mgr = &groupManager{m}
		op.share = gc.share.AddManager(op, m, op.st.id)
		m.SetShareGroups(op.share)
		gc.parts = append(gc.parts, op)
		mgrs = append(mgrs, m)
	}
	gc.gc = group.NewCoordinator(cfg, groupShards{gc}, mgrs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var loadErr error
	start := time.Now()
	for _, op := range gc.parts {
		wg.Add(1)
		op.st.loop.Post(func() {
			defer wg.Done()
			if err := op.load(); err != nil {
				mu.Lock()
				loadErr = errors.Join(loadErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if loadErr != nil {
		return loadErr
	}
	b.coord.groups = gc
	b.log.Info("group coordinator loaded", "partitions", len(gc.parts), "took", time.Since(start).Round(time.Millisecond).String())
	go gc.expiryLoop()
	gc.share.Start()
	return nil
}

// load replays the partition's log into its managers (on its shard).
func (op *offsetsPartition) load() error {
	part := op.st.parts[op.key]
	if part == nil {
		return fmt.Errorf("cannot load %s-%d: partition not open", offsetsTopic, op.index)
	}
	name := fmt.Sprintf("%s-%d", offsetsTopic, op.index)
	m := op.mgr.Manager
	err := replayLog(part.log, name, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
		switch {
		case b.Attributes&0x20 != 0: // a transaction marker
			m.LoadTxnMarker(b.ProducerID, r.Key)
			return nil
		case b.Attributes&0x10 != 0: // a transactional offset commit
			return m.LoadTxnRecord(b.ProducerID, r.Key, r.Value)
		case share.IsShareKey(r.Key): // share group records (share.Manager)
			return op.share.LoadRecord(r.Key, r.Value)
		default:
			return m.LoadRecord(r.Key, r.Value)
		}
	})
	if err != nil {
		return err
	}
	m.FinishLoad()
	return nil
}

// expiryLoop runs the offset expiry on every partition's shard.
func (gc *groupCoordinator) expiryLoop() {
	gc.b.every(gc.cfg.RetentionCheck(), func() {
		for _, op := range gc.parts {
			gc.post(op.st, op.mgr.ExpireOffsets)
		}
	})
}

// post runs fn on st unless the broker is closing.
func (gc *groupCoordinator) post(st *shardState, fn func()) { gc.b.postUnlessClosing(st, fn) }

// partitionOf is the coordinator partition of groupID.
func (gc *groupCoordinator) partitionOf(groupID string) *offsetsPartition {
	return gc.parts[groupPartition(groupID, int32(len(gc.parts)))]
}

// groupShards is the group.Shards of a broker: partition p's work runs on
// the shard that owns __consumer_offsets partition p.
type groupShards struct{ gc *groupCoordinator }

// Post queues fn on partition p's shard.
func (s groupShards) Post(p int32, fn func()) { s.gc.parts[p].st.loop.Post(fn) }

// Closing is closed once the broker starts closing.
func (s groupShards) Closing() <-chan struct{} { return s.gc.b.life.closing }

// groupBroker is the group.Broker the group API handlers run with.
type groupBroker struct{ b *Broker }

// Coordinator is the loaded group coordinator, nil before Start loads it.
func (g groupBroker) Coordinator() *group.Coordinator {
	if gc := g.b.coord.groups; gc != nil {
		return gc.gc
	}
	return nil
}

// Image is the broker's current metadata image.
func (g groupBroker) Image() group.Image { return groupImage{g.b.currentImage()} }

// groupImage is the group.Image of a metadata image.
type groupImage struct{ im *Image }

// Offset is the offset of the last record the image applied.
func (g groupImage) Offset() int64 { return g.im.Offset }

// Topic returns the id and partition count of the topic named name.
func (g groupImage) Topic(name string) (group.TopicID, int32, bool) {
	t := g.im.Topics[name]
	if t == nil {
		return group.TopicID{}, 0, false
	}
	return group.TopicID(t.ID), int32(len(t.Partitions)), true
}

// TopicByID returns the name and partition count of the topic with id.
func (g groupImage) TopicByID(id group.TopicID) (string, int32, bool) {
	t := g.im.TopicsByID[TopicID(id)]
	if t == nil {
		return "", 0, false
	}
	return t.Name, int32(len(t.Partitions)), true
}

// EachTopic calls fn with every topic's name.
func (g groupImage) EachTopic(fn func(name string)) {
	for n := range g.im.Topics {
		fn(n)
	}
}

// The group.Env of an offsetsPartition.

// Now is the wall clock.
func (op *offsetsPartition) Now() time.Time { return time.Now() }

type shardTimer struct {
	t       *time.Timer
	stopped bool // only touched on the shard
}

// Stop keeps the callback from running; on the shard.
func (s *shardTimer) Stop() {
	s.stopped = true
	s.t.Stop()
}

// AfterFunc runs fn on the partition's shard after d unless stopped.
func (op *offsetsPartition) AfterFunc(d time.Duration, fn func()) group.Timer {
	st := &shardTimer{}
	st.t = time.AfterFunc(d, func() {
		op.gc.post(op.st, func() {
			if !st.stopped {
				st.stopped = true
				fn()
			}
		})
	})
	return st
}

// NewMemberID is "<client id>-<random uuid>", as Kafka forms member ids.
func (op *offsetsPartition) NewMemberID(clientID string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	h := hex.EncodeToString(u[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", clientID, h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// Persist appends recs as one uncompressed batch with acks=-1 and calls
// done on the shard after the fdatasync.
func (op *offsetsPartition) Persist(recs []kmsg.Record, done func(error)) {
	part := op.st.parts[op.key]
	if part == nil || part.log == nil {
		done(kerr.NotCoordinator)
		return
	}
	batch := appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
	part.append(batch, -1, func(res produceResult) {
		// Called on the shard (errors) or the group-commit goroutine: hop
		// back to the shard without ever blocking the shard on its own inbox.
		go op.gc.post(op.st, func() { done(res.err) })
	})
}

// Post queues fn behind the shard's waiting work. It is called on the
// shard, which must never block on its own inbox (Post blocks while it is
// full), so the send happens on a goroutine of its own.
func (op *offsetsPartition) Post(fn func()) { go op.gc.post(op.st, fn) }

// Warn logs one line at Warn.
func (op *offsetsPartition) Warn(msg string, args ...any) { op.gc.b.log.Warn(msg, args...) }

// groupsReady answers the handlers' common first check.
func (b *Broker) groupsReady() bool { return b.coord.groups != nil }

// onTopicsRemoved is the group coordinator's part of a published metadata
// delta (groupsListener.Publish): every group's committed offsets of the removed topics
// are deleted, on the shards that own the groups.
func (gc *groupCoordinator) onTopicsRemoved(removed []*TopicImage) {
	for _, t := range removed {
		name := t.Name
		for _, op := range gc.parts {
			gc.post(op.st, func() { op.mgr.DropTopicOffsets(name) })
		}
	}
}
