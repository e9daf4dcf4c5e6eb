package group

// The coordinator's place in the broker. Group g is coordinated by
// __consumer_offsets partition abs(javaHashCode(g)) % offsets.topic.num.partitions
// (Kafka's Utils.abs(groupId.hashCode)), and its state lives in that
// partition's Manager on the partition's owner shard: handlers post
// closures there (Ask) and wait for the answer off the shard.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OffsetsTopic is Kafka's internal topic for committed offsets and groups.
const OffsetsTopic = "__consumer_offsets"

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... over
// the UTF-16 code units, in int32 arithmetic.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// PartitionFor maps a group id to its __consumer_offsets partition among
// n: abs(javaHashCode(groupID)) % n, as Kafka places groups (and
// transactional ids on __transaction_state).
func PartitionFor(groupID string, n int32) int32 {
	h := javaStringHashCode(groupID)
	if h == -1<<31 {
		h = 0 // Kafka's Utils.abs
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// ConfigFromProps reads the group settings from the broker properties
// (Kafka's names: offsets.topic.num.partitions, group.min.session.timeout.ms,
// group.consumer.assignors, ...); an error names the bad key and value.
func ConfigFromProps(props map[string]string) (Config, error) {
	c := DefaultConfig()
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
	c.consumerProtocol = ConsumerProtocolEnabled(props)
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

// ConsumerProtocolEnabled reports whether group.coordinator.rebalance.protocols
// (default "classic,consumer") names the KIP-848 consumer protocol; without
// it ConsumerGroupHeartbeat and ConsumerGroupDescribe are not advertised.
func ConsumerProtocolEnabled(props map[string]string) bool {
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

// NumPartitions is offsets.topic.num.partitions: how many __consumer_offsets
// partitions the broker creates when the topic is missing.
func (c Config) NumPartitions() int32 { return c.numPartitions }

// ConsumerProtocol reports whether group.coordinator.rebalance.protocols
// names the KIP-848 consumer protocol (ConsumerProtocolEnabled): without
// it ApiVersions leaves ConsumerGroupHeartbeat and ConsumerGroupDescribe
// out.
func (c Config) ConsumerProtocol() bool { return c.consumerProtocol }

// RetentionCheck is offsets.retention.check.interval.ms: how often the
// broker runs ExpireOffsets on every partition.
func (c Config) RetentionCheck() time.Duration { return c.retentionCheck }

// TopicID is a topic's 16-byte id, as the metadata image holds it.
type TopicID = [16]byte

// Image is what the coordinator reads of the metadata image: the topics at
// one metadata offset. An Image is immutable; the broker hands a new one for
// each metadata change.
type Image interface {
	// Offset is the offset of the last metadata record the image applied.
	Offset() int64
	// Topic returns the id and partition count of the topic named name.
	Topic(name string) (id TopicID, partitions int32, ok bool)
	// TopicByID returns the name and partition count of the topic with id.
	TopicByID(id TopicID) (name string, partitions int32, ok bool)
	// EachTopic calls fn with every topic's name, in no particular order.
	EachTopic(fn func(name string))
}

// ShareGroups is what a Manager needs of the share groups (KIP-932) of its
// partition, which live beside it on the same shard and share its group id
// namespace. Every method runs on that shard. Its methods use no type of
// this package, so a share group package satisfies it without importing
// this one.
type ShareGroups interface {
	// IsShareGroup reports whether id names a share group.
	IsShareGroup(id string) bool
	// EachShareGroup calls fn with every share group's id and state.
	EachShareGroup(fn func(id, state string))
	// DeleteShareGroup deletes id for DeleteGroups when it is a share group
	// and answers through reply (on any goroutine); false when id names no
	// share group.
	DeleteShareGroup(id string, reply func(*kerr.Error)) bool
}

// Shards runs work on the shards that own the __consumer_offsets
// partitions.
type Shards interface {
	// Post queues fn on the shard that owns partition p. It may block while
	// that shard's inbox is full, so a shard never calls it for itself.
	Post(p int32, fn func())
	// Closing is closed once the broker starts closing.
	Closing() <-chan struct{}
}

// Coordinator routes group requests to the Manager of their
// __consumer_offsets partition, on that partition's shard.
type Coordinator struct {
	cfg  Config
	sh   Shards
	mgrs []*Manager // by partition; each used only on its shard
}

// NewCoordinator returns the coordinator over mgrs, the Managers of
// __consumer_offsets partitions 0..len(mgrs)-1.
func NewCoordinator(cfg Config, sh Shards, mgrs []*Manager) *Coordinator {
	return &Coordinator{cfg: cfg, sh: sh, mgrs: mgrs}
}

// Partitions is the number of __consumer_offsets partitions.
func (c *Coordinator) Partitions() int32 { return int32(len(c.mgrs)) }

// Manager is partition p's Manager; use it only on p's shard.
func (c *Coordinator) Manager(p int32) *Manager { return c.mgrs[p] }

// PartitionOf is the __consumer_offsets partition that coordinates groupID.
func (c *Coordinator) PartitionOf(groupID string) int32 {
	return PartitionFor(groupID, int32(len(c.mgrs)))
}

// Post runs fn on partition p's shard unless the broker is closing; false
// when it is.
func (c *Coordinator) Post(p int32, fn func()) bool {
	select {
	case <-c.sh.Closing():
		return false
	default:
	}
	c.sh.Post(p, fn)
	return true
}

// Closing is closed once the broker starts closing.
func (c *Coordinator) Closing() <-chan struct{} { return c.sh.Closing() }

// Ask runs fn with groupID's Manager on its coordinator shard (wire.Ask):
// fn answers through reply, once.
func Ask[T any](c *Coordinator, groupID string, fn func(m *Manager, reply func(T))) wire.Reply[T] {
	p := c.PartitionOf(groupID)
	m := c.mgrs[p]
	return wire.Ask(c.sh.Closing(), func(f func()) { c.sh.Post(p, f) }, func(reply func(T)) { fn(m, reply) })
}

// StateNames are the classic group states as Kafka names them, in order.
func StateNames() []string { return groupStateNames[:] }

// CountGroups adds m's groups to states (by state name) and returns how
// many committed offsets they hold (the group metrics).
func (m *Manager) CountGroups(states map[string]int) (offsets int) {
	for _, g := range m.groups {
		states[g.state.String()]++
		offsets += len(g.offsets)
	}
	return offsets
}
