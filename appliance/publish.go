package appliance

// The metadata publisher. A change reaches this node as committed records:
// proposed by this node's controller (metadata.Controller), replayed from
// the metadata log at start (metadata.OpenLog), or, with
// controller.quorum.voters, committed by the metadata quorum
// (appliance/controller, quorum_glue.go). Whatever the source, the records are applied
// to the image in force (Image.Apply, values only), and the new image is
// published here: the delta between the two goes to the listeners, which
// is the only way the node learns of partitions to open, configs to apply
// or topics to drop. The proposing code never opens a partition itself.
//
// Listeners, registered on b.ctl.pub in New, in order: the log manager
// (logManager, a metadata.Preparer) places new partitions before the
// image is stored, so that every reader of the image finds them, and
// after it drops removed topics, applies changed configs and opens new
// partitions; then the group coordinator drops the offsets of removed
// topics; then securityListener rebuilds the authorizer's ACL set and the
// SCRAM credentials, and quotaListener the quota table, when the delta
// changes them. publish runs under the controller mutex (or before
// serving, at start), so deltas are handed on one at a time, in log order.
// With a quorum, every delta is handed on by the quorum's loop goroutine
// (quorumHost.Publish), one at a time, in log order, without the
// controller mutex (the controller holds it while its batch commits and
// is applied there); b.publish is then a no-op.

import "github.com/ringbroker/ringbroker/appliance/metadata"

// groupsListener is the group coordinator's part of a published delta: it
// drops the committed offsets of removed topics.
type groupsListener struct{ b *Broker }

func (g groupsListener) Publish(_, _ *Image, d *metadata.Delta) error {
	if gc := g.b.coord.groups; gc != nil && len(d.Removed) > 0 {
		gc.onTopicsRemoved(d.Removed)
	}
	return nil
}

// publish makes next, the image after committed records, the image in
// force and hands the delta from prev to the listeners. prev is the image
// the records were applied to (an empty image at start). The error is the
// log manager's: partitions that did not open (they are offline).
func (b *Broker) publish(prev, next *Image) error {
	if b.ctl.quorum != nil {
		return nil // the quorum's loop published next when it applied it (quorumHost)
	}
	return b.ctl.pub.Publish(prev, next, b.ctl.image.Store)
}

// commitLocked appends recs, proposed against im (the image in force;
// b.ctl.mu is held), to the metadata log as one batch and publishes the
// image they make: the path of the controller changes that open no
// partitions (ACLs, SCRAM credentials, client quotas, producer ids). The
// error is the commit's, unwrapped (callers wrap it with commitErr): once
// committed, the records are in force, and a listener's error is logged.
func (b *Broker) commitLocked(im *Image, recs []MetadataRecord) (*Image, error) {
	next, err := b.ctl.commit(im, recs)
	if err != nil {
		return nil, err
	}
	if err := b.publish(im, next); err != nil {
		b.log.Error("a metadata listener failed", "offset", next.Offset, "err", err)
	}
	return next, nil
}

// applyCommitted is the path of records committed elsewhere (replicated by
// the metadata quorum, or another node's log replayed into this one): they
// are appended to this node's metadata log as one batch and published,
// exactly as a change proposed here is after its commit. The records must
// apply to the image in force.
func (b *Broker) applyCommitted(recs []MetadataRecord) error {
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
	next, err := b.ctl.commit(im, recs)
	if err != nil {
		return err
	}
	return b.publish(im, next)
}
