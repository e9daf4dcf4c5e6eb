package appliance

// The metadata quorum of a node configured with controller.quorum.voters
// (appliance/controller): committed batches reach the publisher from the
// quorum's loop, changes commit through it, admin requests to a node
// that is not the active controller are forwarded to it.

import (
	"context"
	"path/filepath"
	"time"

	"github.com/ringbroker/ringbroker/appliance/controller"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/cluster/brokerlife"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type quorumHost struct{ b *Broker }

// Publish hands a committed batch to the listeners (from the quorum's
// loop; the log start offsets read at start apply until it caught up).
func (h quorumHost) Publish(prev, next *Image) error {
	if h.b.ctl.quorumReady.Load() {
		h.b.ctl.lm.startOffsets = nil
	}
	return h.b.ctl.pub.Publish(prev, next, h.b.ctl.image.Store)
}

func (h quorumHost) Serve(f *controller.Forwarded) kmsg.Response {
	var authz wire.Authorizer
	if h.b.authz != nil {
		authz = h.b.authz
	}
	return controller.Serve(h.b.front.apis, authz, f)
}

// openQuorum starts the quorum and waits (bounded) until it knows a
// leader and applied what is committed; it returns the image then.
func (b *Broker) openQuorum() (*Image, error) {
	c, listen := b.cfg.Cluster, ""
	if c.Controller && len(c.ControllerListeners) > 0 {
		listen = c.ControllerListeners[0].Addr
	}
	q, err := controller.Open(controller.Options{NodeID: b.cfg.NodeID, Voters: c.Voters, Listen: listen,
		Dir: filepath.Join(b.cfg.LogDir, metadata.Topic+"-0"), ElectionTimeout: time.Duration(c.ElectionTimeoutMs) * time.Millisecond,
		SnapshotBytes: b.cfg.MetadataSnapshotBytes, Checks: imageChecks{}, Logger: b.log}, quorumHost{b})
	if err != nil {
		return nil, err
	}
	b.ctl.quorum = q
	q.SetProducerIDAllocator(b.commitProducerIDs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !q.WaitCaughtUp(ctx) {
		b.log.Warn("metadata quorum has no leader yet: starting with the metadata applied so far")
	}
	b.ctl.quorumReady.Store(true)
	return q.Image(), nil
}

// commit commits recs, proposed against im, through the quorum or the
// local metadata log.
func (c *controlPlane) commit(im *Image, recs []MetadataRecord) (*Image, error) {
	if c.quorum != nil {
		return c.quorum.Commit(im, recs)
	}
	return c.meta.Commit(im, recs)
}

// startMembership, with a quorum: the active controller's broker
// membership and this broker's registration and heartbeats to it
// (controller.Quorum.StartMembership).
func (b *Broker) startMembership() error {
	if b.ctl.quorum == nil {
		return nil
	}
	mgr, err := b.ctl.quorum.StartMembership(ctlHost{b: b}, controller.MemberOptions{ClusterID: b.cfg.ClusterID,
		Cluster: b.cfg.Cluster, Listeners: b.cfg.Listeners, Logger: b.log})
	if err != nil {
		return err
	}
	b.ctl.members = mgr
	// As a KRaft broker does, serve clients once unfenced (registered and
	// caught up), so that a topic created right after start finds this
	// broker live; bounded, as a quorum without a majority never unfences.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := mgr.WaitFor(ctx, brokerlife.Running); err != nil {
		b.log.Warn("broker not unfenced by the active controller yet: serving anyway", "err", err)
	}
	return nil
}

// shutdownMembership asks the active controller for a controlled shutdown
// (bounded) and stops the heartbeats; the quorum is still running.
func (b *Broker) shutdownMembership() {
	if b.ctl.members != nil {
		controller.StopMember(b.ctl.members, b.log)
	}
}
