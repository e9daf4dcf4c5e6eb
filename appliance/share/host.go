package share

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicID is a topic's id (the metadata image's, as kmsg carries it).
type TopicID = [16]byte

// Host is what the share groups need of the broker. appliance implements it
// with a small adapter; tests of the pure state machines need none.
type Host interface {
	// Store is the share-partitions and sessions of the running group
	// coordinator; nil until the coordinator has started.
	Store() *Store
	// Image is the metadata image in force.
	Image() Image
	// Authorize reports whether r's principal may perform op on the named
	// resource; true when the broker runs without an authorizer.
	Authorize(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool

	// Shards is the number of shards; shard ids are 0 to Shards()-1.
	Shards() int
	// ShardOf is the id of the shard owning partition p of topic id.
	ShardOf(id TopicID, p int32) int
	// Post queues fn on shard (it may block while the shard's inbox is
	// full, so never call it on that shard).
	Post(shard int, fn func())
	// PostUnlessClosing is Post unless the broker is closing.
	PostUnlessClosing(shard int, fn func())
	// Call runs fn on shard and waits for it.
	Call(shard int, fn func())
	// Partition is partition p of topic id as its shard holds it, nil when
	// it is not open there. Only call it, and use the result, on that
	// shard.
	Partition(shard int, id TopicID, p int32) Partition
	// Closing is closed once the broker starts closing.
	Closing() <-chan struct{}
	// Every calls fn every d until the broker closes; it blocks.
	Every(d time.Duration, fn func())
	// GroupPartition is the __consumer_offsets partition, of n,
	// coordinating group: the index of its Manager (Store.AddManager
	// order).
	GroupPartition(group string, n int32) int32
}

// Partition is a topic partition on its owner shard, as the
// share-partitions read it. Every method runs on that shard.
type Partition interface {
	// Offline reports whether an I/O error took the partition offline.
	Offline() bool
	LogStartOffset() int64
	HighWatermark() int64
	LastStableOffset() int64
	// AbortedTxns lists the aborted transactions overlapping [from, upTo).
	AbortedTxns(from, upTo int64) []nvme.AbortedTxn
	// OffsetForTimestamp is the first offset at or after ts (unix ms).
	OffsetForTimestamp(ts int64) (int64, bool)
	// ReadBatches appends the whole batches from offset from, below end,
	// up to maxBytes (the first batch whole when first) to dst. A failure
	// to copy what was read wraps ErrUnreadable.
	ReadBatches(dst []byte, from int64, maxBytes int32, end int64, first bool) ([]byte, error)
	// Park registers w to be woken by the partition's next append.
	Park(w *Waiter)
}

// ErrUnreadable is the error Partition.ReadBatches wraps when the bytes it
// read cannot be copied out.
var ErrUnreadable = errors.New("cannot copy the read batches")

// Image is the metadata image as the share groups read it.
type Image interface {
	// TopicByID is the topic with id.
	TopicByID(id TopicID) (Topic, bool)
	// TopicByName is the topic named name.
	TopicByName(name string) (Topic, bool)
	// Leader is the leader and leader epoch of partition p of topic id
	// (-1, -1 when unknown).
	Leader(id TopicID, p int32) (leader, epoch int32)
	// GroupConfigs is group's GROUP config resource (nil: none set).
	GroupConfigs(group string) map[string]string
}

// Topic is a topic of the image.
type Topic struct {
	ID         TopicID
	Name       string
	Partitions int32
}

// has reports whether p is one of the topic's partitions.
func (t *Topic) has(p int32) bool { return t != nil && p >= 0 && p < t.Partitions }

// Waiter is a parked ShareFetch long poll: a Partition (on an append) or a
// share-partition (records becoming Available) wakes it.
type Waiter struct {
	notify chan struct{} // buffered (1)
	done   atomic.Bool
}

// NewWaiter returns a Waiter not yet woken.
func NewWaiter() *Waiter { return &Waiter{notify: make(chan struct{}, 1)} }

// Wake wakes w without blocking.
func (w *Waiter) Wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Done reports whether the long poll ended: a partition drops such waiters.
func (w *Waiter) Done() bool { return w.done.Load() }
