package metadata

// The publisher. A change reaches a node as committed records: proposed
// by its controller, replayed from the metadata log at start, or, once the
// quorum exists, replicated from its leader. Whatever the source, the
// records are applied to the image in force, and the new image is
// published: the delta between the two goes to the listeners, which is
// the only way the node learns of partitions to open, configs to apply or
// topics to drop. The proposing code never opens a partition itself.

import (
	"maps"
	"reflect"
	"slices"
	"sort"
)

// Delta is what changed from one image to the next, as the listeners need
// it. Its topic lists are in topic-name order, so listeners act in the
// same order on every node; the flags after them say which of the other
// concepts' values changed, and listeners read the new values from the
// next image.
type Delta struct {
	// Added are partitions new in the next image: every partition of a
	// created topic (from 0), the new ones of a grown topic.
	Added []AddedPartitions
	// Removed are the topics of the previous image that the next one lacks
	// (by id: a topic deleted and created again under its name is removed
	// and added).
	Removed []*TopicImage
	// Reconfigured are topics of both images whose config overrides differ.
	Reconfigured []*TopicImage
	// Releadered are topics of both images where a partition both hold
	// changed leader, leader epoch, replicas or ISR (PartitionChangeRecord:
	// fencing moves leadership), with the next image's partitions.
	Releadered []*TopicImage

	// ACLs: the ACL bindings differ (the authorizer's ACL set is rebuilt).
	ACLs bool
	// Scram: the SCRAM credentials differ.
	Scram bool
	// ClientQuotas: the client quota values differ (the quota table is
	// rebuilt).
	ClientQuotas bool
	// ProducerIDs: a ProducerIDsRecord moved NextProducerID.
	ProducerIDs bool
	// BrokerConfigs: the dynamic broker configs differ; every topic is in
	// Reconfigured then, as the topic defaults may have changed
	// (TopicDefaultsWith).
	BrokerConfigs bool
}

// AddedPartitions are partitions [From, len(Topic.Partitions)) of Topic.
type AddedPartitions struct {
	Topic *TopicImage
	From  int32
}

// Empty reports whether d changes nothing the listeners act on.
func (d *Delta) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Reconfigured) == 0 && len(d.Releadered) == 0 &&
		!d.ACLs && !d.Scram && !d.ClientQuotas && !d.ProducerIDs && !d.BrokerConfigs
}

// DiffImages is Diff of the two images' topics with the flags of the
// other concepts' values set. Apply shares the values no record changed
// with the previous image, so they are compared by identity: a record
// that rewrites a value unchanged still flags it, which costs a listener
// one rebuild.
func DiffImages(prev, next *Image) *Delta {
	d := Diff(prev.TopicsByID, next.TopicsByID)
	d.ACLs = prev.ACLs != next.ACLs
	d.ClientQuotas = prev.ClientQuotas != next.ClientQuotas
	d.Scram = !sameScram(prev.Scram, next.Scram)
	d.ProducerIDs = prev.NextProducerID != next.NextProducerID
	d.BrokerConfigs = !maps.EqualFunc(prev.Brokers, next.Brokers, maps.Equal)
	if d.BrokerConfigs {
		seen := map[TopicID]bool{}
		for _, a := range d.Added {
			seen[a.Topic.ID] = true
		}
		for _, t := range d.Reconfigured {
			seen[t.ID] = true
		}
		for id, t := range next.TopicsByID {
			if !seen[id] {
				d.Reconfigured = append(d.Reconfigured, t)
			}
		}
		sort.Slice(d.Reconfigured, func(i, j int) bool { return d.Reconfigured[i].Name < d.Reconfigured[j].Name })
	}
	return d
}

// sameScram reports whether a and b are the same map (or both empty).
func sameScram(a, b ScramCredentials) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Diff computes the delta between two images' topics by id (prev and next
// are the images' topics by id). Topics are compared by id and, for the
// ones in both, by pointer first: Apply copies only the topics it touches.
func Diff(prev, next map[TopicID]*TopicImage) *Delta {
	d := &Delta{}
	for id, t := range next {
		old, ok := prev[id]
		switch {
		case !ok:
			d.Added = append(d.Added, AddedPartitions{Topic: t})
		case old == t:
			// unchanged
		default:
			if len(t.Partitions) > len(old.Partitions) {
				d.Added = append(d.Added, AddedPartitions{Topic: t, From: int32(len(old.Partitions))})
			}
			if !maps.Equal(old.Configs, t.Configs) {
				d.Reconfigured = append(d.Reconfigured, t)
			}
			if partitionsChanged(old.Partitions, t.Partitions) {
				d.Releadered = append(d.Releadered, t)
			}
		}
	}
	for id, t := range prev {
		if _, ok := next[id]; !ok {
			d.Removed = append(d.Removed, t)
		}
	}
	sort.Slice(d.Added, func(i, j int) bool { return d.Added[i].Topic.Name < d.Added[j].Topic.Name })
	sort.Slice(d.Removed, func(i, j int) bool { return d.Removed[i].Name < d.Removed[j].Name })
	sort.Slice(d.Reconfigured, func(i, j int) bool { return d.Reconfigured[i].Name < d.Reconfigured[j].Name })
	sort.Slice(d.Releadered, func(i, j int) bool { return d.Releadered[i].Name < d.Releadered[j].Name })
	return d
}

// partitionsChanged reports whether a partition both lists hold differs
// in leader, leader epoch, partition epoch, replicas or ISR.
func partitionsChanged(old, next []PartitionImage) bool {
	for i := range min(len(old), len(next)) {
		o, n := &old[i], &next[i]
		if o.Leader != n.Leader || o.LeaderEpoch != n.LeaderEpoch || o.PartitionEpoch != n.PartitionEpoch ||
			!slices.Equal(o.Replicas, n.Replicas) || !slices.Equal(o.ISR, n.ISR) {
			return true
		}
	}
	return false
}

// Listener acts on published deltas: the log manager opens and drops
// partitions, the coordinators load and unload, the authorizer and the
// quota manager rebuild their tables.
type Listener interface {
	// Publish is called after next, the image holding d, is in force
	// (prev is the image before it), for non-empty deltas only. Its error
	// is reported by Publisher.Publish; the listeners after it still run.
	Publish(prev, next *Image, d *Delta) error
}

// Preparer is a Listener that must also see every delta before the image
// holding it is in force (the log manager places new partitions there, so
// every reader of the image finds them placed).
type Preparer interface {
	Prepare(prev, next *Image, d *Delta)
}

// Publisher hands deltas to its listeners, in the order they registered.
// Register before the first Publish; Publish is serialised by the caller
// (the controller mutex).
type Publisher struct {
	listeners []Listener
}

// Register adds l after the listeners already registered.
func (p *Publisher) Register(l Listener) { p.listeners = append(p.listeners, l) }

// Publish computes the delta from prev to next, gives it to every
// Preparer, calls store (which makes next the image in force), and then
// gives a non-empty delta to every Listener. The error is the first
// listener's error.
func (p *Publisher) Publish(prev, next *Image, store func(*Image)) error {
	d := DiffImages(prev, next)
	for _, l := range p.listeners {
		if pr, ok := l.(Preparer); ok {
			pr.Prepare(prev, next, d)
		}
	}
	store(next)
	if d.Empty() {
		return nil
	}
	var first error
	for _, l := range p.listeners {
		if err := l.Publish(prev, next, d); err != nil && first == nil {
			first = err
		}
	}
	return first
}
