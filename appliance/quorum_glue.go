package appliance

// The metadata quorum of a node configured with controller.quorum.voters
// (appliance/controller): committed batches reach the publisher from the
// quorum's loop, changes commit through it, admin requests to a node
// that is not the active controller are forwarded to it.

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"time"

	"github.com/ringbroker/ringbroker/appliance/controller"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/cluster/brokerlife"
	"github.com/ringbroker/ringbroker/cluster/membership"
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
// membership (BrokerRegistration and BrokerHeartbeat on the controller
// listener, fencing) and this broker's registration and heartbeats to it.
func (b *Broker) startMembership() error {
	q := b.ctl.quorum
	if q == nil {
		return nil
	}
	c := b.cfg.Cluster
	var ctlNames []string
	for _, l := range c.ControllerListeners {
		ctlNames = append(ctlNames, l.Name)
	}
	m, err := metadata.NewMembership(ctlHost{b: b}, metadata.MembershipConfig{
		Registry:            membership.Config{ClusterID: b.cfg.ClusterID, SessionTimeout: time.Duration(c.SessionTimeoutMs) * time.Millisecond, Now: time.Now, Logger: b.log},
		ControllerListeners: ctlNames})
	if err != nil {
		return err
	}
	q.SetMembership(m)
	var ls []kmsg.BrokerRegistrationRequestListener
	for _, l := range b.cfg.Listeners {
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.AdvertisedHost, uint16(l.AdvertisedPort)
		rl.SecurityProtocol = securityProtocolID(l.Protocol)
		ls = append(ls, rl)
	}
	var rack *string
	if c.Rack != "" {
		rack = &c.Rack
	}
	var inc [16]byte
	_, _ = rand.Read(inc[:])
	applied := func() int64 {
		st, err := q.Status()
		if err != nil {
			return b.currentImage().Offset
		}
		return int64(st.Applied)
	}
	mgr, err := brokerlife.New(brokerlife.Config{NodeID: b.cfg.NodeID, ClusterID: b.cfg.ClusterID, IncarnationID: inc,
		Listeners: ls, Rack: rack, HeartbeatInterval: time.Duration(c.HeartbeatIntervalMs) * time.Millisecond,
		MetadataOffset: applied,
		HighWatermark: func() int64 {
			st, err := q.Status()
			if err != nil {
				return 0
			}
			return int64(st.HighWatermark) + 1
		}, Logger: b.log}, q.Channel())
	if err != nil {
		return err
	}
	b.ctl.members = mgr
	mgr.Start()
	return nil
}

// shutdownMembership asks the active controller for a controlled shutdown
// (bounded) and stops the heartbeats; the quorum is still running.
func (b *Broker) shutdownMembership() {
	mgr := b.ctl.members
	if mgr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := mgr.Shutdown(ctx); err != nil {
		b.log.Warn("controlled shutdown not completed", "err", err)
	}
	mgr.Close()
}

// securityProtocolID is Kafka's id of a security protocol name.
func securityProtocolID(p string) int16 {
	switch p {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return 0
}
