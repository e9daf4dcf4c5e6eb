package appliance

// The metadata publisher. A change reaches this node as committed records:
// proposed by this node's controller (controller.go), replayed from the
// metadata log at start (metadata_log.go), or, once the quorum exists,
// replicated from its leader. Whatever the source, the records are applied
// to the image in force (Image.Apply, values only), and the new image is
// published here: the delta between the two goes to the listeners, which
// is the only way the node learns of partitions to open, configs to apply
// or topics to drop. The proposing code never opens a partition itself.
//
// Listeners, in order: the log manager (log_manager.go) places new
// partitions before the image is stored, so that every reader of the image
// finds them, and after it drops removed topics, applies changed configs
// and opens new partitions; then the group coordinator drops the offsets of
// removed topics. publish runs under the controller mutex (or before
// serving, at start), so deltas are handed on one at a time, in log order.

import (
	"maps"
	"sort"
)

// metadataDelta is what changed from one image to the next, as the
// listeners need it.
type metadataDelta struct {
	// added are partitions new in the next image: every partition of a
	// created topic (from 0), the new ones of a grown topic.
	added []addedPartitions
	// removed are the topics of the previous image that the next one lacks
	// (by id: a topic deleted and created again under its name is removed
	// and added).
	removed []*TopicImage
	// reconfigured are topics of both images whose config overrides differ.
	reconfigured []*TopicImage
}

// addedPartitions are partitions [from, len(topic.Partitions)) of topic.
type addedPartitions struct {
	topic *TopicImage
	from  int32
}

// empty reports whether d changes nothing the listeners act on.
func (d *metadataDelta) empty() bool {
	return len(d.added) == 0 && len(d.removed) == 0 && len(d.reconfigured) == 0
}

// diffImages computes the delta from prev to next. Topics are compared by
// id; the result is in topic-name order, so that listeners act in the same
// order on every node.
func diffImages(prev, next *Image) *metadataDelta {
	d := &metadataDelta{}
	for id, t := range next.TopicsByID {
		old, ok := prev.TopicsByID[id]
		switch {
		case !ok:
			d.added = append(d.added, addedPartitions{topic: t})
		case old == t:
			// unchanged: Apply copies only the topics it touches
		default:
			if len(t.Partitions) > len(old.Partitions) {
				d.added = append(d.added, addedPartitions{topic: t, from: int32(len(old.Partitions))})
			}
			if !maps.Equal(old.Configs, t.Configs) {
				d.reconfigured = append(d.reconfigured, t)
			}
		}
	}
	for id, t := range prev.TopicsByID {
		if _, ok := next.TopicsByID[id]; !ok {
			d.removed = append(d.removed, t)
		}
	}
	sortedAdded(d.added)
	sort.Slice(d.removed, func(i, j int) bool { return d.removed[i].Name < d.removed[j].Name })
	sort.Slice(d.reconfigured, func(i, j int) bool { return d.reconfigured[i].Name < d.reconfigured[j].Name })
	return d
}

// publish makes next, the image after committed records, the image in
// force and hands the delta from prev to the listeners. prev is the image
// the records were applied to (an empty image at start). The error is the
// log manager's: partitions that did not open (they are offline).
func (b *Broker) publish(prev, next *Image) error {
	d := diffImages(prev, next)
	b.lm.place(d)
	b.image.Store(next)
	if d.empty() {
		return nil
	}
	err := b.lm.apply(d)
	if gc := b.groups; gc != nil && len(d.removed) > 0 {
		gc.onTopicsRemoved(d.removed)
	}
	return err
}

// applyCommitted is the path of records committed elsewhere (replicated by
// the metadata quorum, or another node's log replayed into this one): they
// are appended to this node's metadata log as one batch and published,
// exactly as a change proposed here is after its commit. The records must
// apply to the image in force.
func (b *Broker) applyCommitted(recs []MetadataRecord) error {
	b.ctrlMu.Lock()
	defer b.ctrlMu.Unlock()
	im := b.currentImage()
	next, err := b.meta.commit(im, recs)
	if err != nil {
		return err
	}
	return b.publish(im, next)
}
