package appliance

// The group coordinator's place in the broker. Group g is coordinated by
// __consumer_offsets partition abs(javaHashCode(g)) % offsets.topic.num.partitions
// (Kafka's Utils.abs(groupId.hashCode)), and its state lives in that
// partition's groupManager on the partition's owner shard: handlers post
// closures there and wait for the answer off the shard. Timers are
// time.AfterFunc callbacks that post back to the shard.
//
// At start the broker creates __consumer_offsets through the controller if
// it is missing (compacted, internal), then replays every partition's log
// into its groupManager before accepting connections.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsTopic is Kafka's internal topic for committed offsets and groups.
const offsetsTopic = "__consumer_offsets"

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... over
// the UTF-16 code units, in int32 arithmetic.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// groupPartition maps a group id to its __consumer_offsets partition.
func groupPartition(groupID string, n int32) int32 {
	h := javaStringHashCode(groupID)
	if h == -1<<31 {
		h = 0 // Kafka's Utils.abs
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// groupConfigFromProps reads the group settings from the broker properties.
func groupConfigFromProps(props map[string]string) (groupConfig, error) {
	c := defaultGroupConfig()
	var err error
	num := func(k string, def int64) int64 {
		v, ok := props[k]
		if !ok || err != nil {
			return def
		}
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil {
			err = fmt.Errorf("cannot parse %s=%q: %w", k, v, e)
			return def
		}
		return n
	}
	ms := func(k string, def time.Duration) time.Duration {
		return time.Duration(num(k, def.Milliseconds())) * time.Millisecond
	}
	c.numPartitions = int32(num("offsets.topic.num.partitions", int64(c.numPartitions)))
	c.minSessionTimeout = ms("group.min.session.timeout.ms", c.minSessionTimeout)
	c.maxSessionTimeout = ms("group.max.session.timeout.ms", c.maxSessionTimeout)
	c.initialRebalanceDelay = ms("group.initial.rebalance.delay.ms", c.initialRebalanceDelay)
	c.maxSize = int(num("group.max.size", int64(c.maxSize)))
	c.offsetsRetention = time.Duration(num("offsets.retention.minutes", int64(c.offsetsRetention/time.Minute))) * time.Minute
	c.retentionCheck = ms("offsets.retention.check.interval.ms", c.retentionCheck)
	c.maxMetadataBytes = int(num("offset.metadata.max.bytes", int64(c.maxMetadataBytes)))
	c.consumerHeartbeatInterval = ms("group.consumer.heartbeat.interval.ms", c.consumerHeartbeatInterval)
	c.consumerSessionTimeout = ms("group.consumer.session.timeout.ms", c.consumerSessionTimeout)
	c.consumerMaxSize = int(num("group.consumer.max.size", int64(c.consumerMaxSize)))
	if v, ok := props["group.consumer.assignors"]; ok {
		c.consumerAssignors = nil
		for _, a := range strings.Split(v, ",") {
			switch a = strings.TrimSpace(a); a {
			case "":
			case "uniform", "range",
				"org.apache.kafka.coordinator.group.assignor.UniformAssignor",
				"org.apache.kafka.coordinator.group.assignor.RangeAssignor":
				c.consumerAssignors = append(c.consumerAssignors, shortAssignorName(a))
			default:
				if err == nil {
					err = fmt.Errorf("group.consumer.assignors: unknown assignor %q (known: uniform, range)", a)
				}
			}
		}
	}
	c.consumerProtocol = consumerProtocolEnabled(props)
	if err != nil {
		return c, err
	}
	if c.numPartitions < 1 {
		return c, fmt.Errorf("offsets.topic.num.partitions must be >= 1, got %d", c.numPartitions)
	}
	if len(c.consumerAssignors) == 0 {
		return c, fmt.Errorf("group.consumer.assignors must name at least one assignor")
	}
	if c.consumerHeartbeatInterval <= 0 || c.consumerSessionTimeout <= 0 {
		return c, fmt.Errorf("group.consumer.heartbeat.interval.ms and group.consumer.session.timeout.ms must be > 0, got %v and %v",
			c.consumerHeartbeatInterval, c.consumerSessionTimeout)
	}
	if c.consumerMaxSize < 1 {
		return c, fmt.Errorf("group.consumer.max.size must be >= 1, got %d", c.consumerMaxSize)
	}
	if c.retentionCheck <= 0 {
		c.retentionCheck = 10 * time.Minute
	}
	return c, nil
}

// shortAssignorName maps Kafka's assignor class names to the names clients send.
func shortAssignorName(a string) string {
	switch a {
	case "org.apache.kafka.coordinator.group.assignor.UniformAssignor":
		return "uniform"
	case "org.apache.kafka.coordinator.group.assignor.RangeAssignor":
		return "range"
	}
	return a
}

// consumerProtocolEnabled reports whether group.coordinator.rebalance.protocols
// (default "classic,consumer") names the KIP-848 consumer protocol; without
// it ConsumerGroupHeartbeat and ConsumerGroupDescribe are not advertised.
func consumerProtocolEnabled(props map[string]string) bool {
	v, ok := props["group.coordinator.rebalance.protocols"]
	if !ok {
		return true
	}
	for _, p := range strings.Split(v, ",") {
		if strings.EqualFold(strings.TrimSpace(p), "consumer") {
			return true
		}
	}
	return false
}

// groupCoordinator routes group requests to the owner shard of their
// __consumer_offsets partition.
type groupCoordinator struct {
	b     *Broker
	cfg   groupConfig
	topic *TopicImage
	parts []*offsetsPartition // by partition index; each used only on its shard
	share *shareStore         // share-partitions and share sessions (share_store.go)
}

// offsetsPartition is one __consumer_offsets partition's coordinator state.
type offsetsPartition struct {
	gc    *groupCoordinator
	st    *shardState
	key   tpKey
	index int32
	mgr   *groupManager
	share *shareManager // the share groups of this partition (share_group.go)
}

// startGroupCoordinator creates __consumer_offsets when missing, replays
// it, and starts the offset expiry. It runs in Start, before serving.
func (b *Broker) startGroupCoordinator() error {
	cfg, err := groupConfigFromProps(b.cfg.Props)
	if err != nil {
		return err
	}
	t := b.currentImage().Topics[offsetsTopic]
	if t == nil {
		t, err = b.createTopic(TopicSpec{Name: offsetsTopic, Partitions: cfg.numPartitions, ReplicationFactor: 1,
			Configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": b.propOr("offsets.topic.segment.bytes", "104857600"), "compression.type": "producer"}}, false)
		if err != nil {
			return fmt.Errorf("cannot create %s: %w", offsetsTopic, err)
		}
	}
	gc := &groupCoordinator{b: b, cfg: cfg, topic: t}
	gc.share = newShareStore(b)
	for _, p := range t.Partitions {
		op := &offsetsPartition{gc: gc, st: b.shardFor(t, p.Partition), key: tpKey{t.ID, p.Partition}, index: p.Partition}
		op.mgr = newGroupManager(op, cfg)
		op.share = newShareManager(op, op.mgr)
		op.share.released = func(group, member string) { go gc.share.releaseMember(group, member, nil) }
		gc.parts = append(gc.parts, op)
	}
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
	b.groups = gc
	b.log.Info("group coordinator loaded", "partitions", len(gc.parts), "took", time.Since(start).Round(time.Millisecond).String())
	go gc.expiryLoop()
	go gc.share.flushLoop()
	return nil
}

// load replays the partition's log into its groupManager (on its shard).
func (op *offsetsPartition) load() error {
	part := op.st.parts[op.key]
	if part == nil {
		return fmt.Errorf("cannot load %s-%d: partition not open", offsetsTopic, op.index)
	}
	name := fmt.Sprintf("%s-%d", offsetsTopic, op.index)
	err := replayLog(part.log, name, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
		switch {
		case b.Attributes&0x20 != 0: // a transaction marker
			op.mgr.loadTxnMarker(b.ProducerID, r.Key)
			return nil
		case b.Attributes&0x10 != 0: // a transactional offset commit
			return op.mgr.loadTxnRecord(b.ProducerID, r.Key, r.Value)
		case isShareKey(r.Key): // share group records (share_group.go)
			return op.share.loadRecord(r.Key, r.Value)
		default:
			return op.mgr.loadRecord(r.Key, r.Value)
		}
	})
	if err != nil {
		return err
	}
	op.mgr.finishLoad()
	return nil
}

// expiryLoop runs the offset expiry on every partition's shard.
func (gc *groupCoordinator) expiryLoop() {
	gc.b.every(gc.cfg.retentionCheck, func() {
		for _, op := range gc.parts {
			gc.post(op.st, op.mgr.expireOffsets)
		}
	})
}

// post runs fn on st unless the broker is closing.
func (gc *groupCoordinator) post(st *shardState, fn func()) { gc.b.postUnlessClosing(st, fn) }

// partitionOf is the coordinator partition of groupID.
func (gc *groupCoordinator) partitionOf(groupID string) *offsetsPartition {
	return gc.parts[groupPartition(groupID, int32(len(gc.parts)))]
}


// groupEnv for the broker.

func (op *offsetsPartition) now() time.Time { return time.Now() }

type shardTimer struct {
	t       *time.Timer
	stopped bool // only touched on the shard
}

func (s *shardTimer) stop() {
	s.stopped = true
	s.t.Stop()
}

func (op *offsetsPartition) afterFunc(d time.Duration, fn func()) groupTimer {
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

func (op *offsetsPartition) newMemberID(clientID string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	h := hex.EncodeToString(u[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", clientID, h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// persist appends recs as one uncompressed batch with acks=-1 and calls
// done on the shard after the fdatasync.
func (op *offsetsPartition) persist(recs []kmsg.Record, done func(error)) {
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

// post queues fn behind the shard's waiting work. It is called on the shard,
// which must never block on its own inbox (Post blocks while it is full), so
// the send happens on a goroutine of its own.
func (op *offsetsPartition) post(fn func()) { go op.gc.post(op.st, fn) }

func (op *offsetsPartition) warn(msg string, args ...any) { op.gc.b.log.Warn(msg, args...) }

// groupsReady answers the handlers' common first check.
func (b *Broker) groupsReady() bool { return b.groups != nil }

// onTopicsRemoved is the group coordinator's part of a published metadata
// delta (publish.go): every group's committed offsets of the removed topics
// are deleted, on the shards that own the groups.
func (gc *groupCoordinator) onTopicsRemoved(removed []*TopicImage) {
	for _, t := range removed {
		name := t.Name
		for _, op := range gc.parts {
			gc.post(op.st, func() { op.mgr.dropTopicOffsets(name) })
		}
	}
}
