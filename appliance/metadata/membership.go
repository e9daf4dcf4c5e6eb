package metadata

// BrokerRegistration (key 62) v0-v4, BrokerHeartbeat (key 63) v0-v1 and
// UnregisterBroker (key 64) v0, answered by the active controller.
//
// Each request is decided by a membership.Registry (KIP-631 semantics:
// the broker epoch is the offset of the RegisterBrokerRecord, a broker is
// fenced after broker.session.timeout.ms without a heartbeat and unfenced
// once its metadata offset reaches its registration, controlled shutdown
// moves its leadership away first), its records are committed through the
// Host as one batch and published, and then applied to the Registry at
// the offsets they were written at. Registration and heartbeats are
// answered only on a controller listener (controller.listener.names): a
// request on any other listener closes the connection, as Kafka's brokers
// do not serve these APIs. UnregisterBroker is an admin API that Kafka's
// brokers forward; here it is answered on every listener by the active
// controller, with ALTER on the cluster.
//
// The Registry's heartbeat sessions live only in the active controller.
// Membership rebuilds its Registry from the image whenever the image's
// broker table changed without it (records replicated from another
// controller, a restart), and Activate gives every broker a fresh
// session, as a newly active controller must.

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/cluster/membership"
	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MembershipConfig configures NewMembership.
type MembershipConfig struct {
	// Registry is the registry's configuration: the cluster id,
	// broker.session.timeout.ms, the clock and the logger.
	Registry membership.Config
	// ControllerListeners are controller.listener.names: the listeners
	// BrokerRegistration and BrokerHeartbeat are answered on.
	ControllerListeners []string
}

// Membership is the active controller's broker membership over a Host:
// the BrokerRegistration, BrokerHeartbeat and UnregisterBroker handlers
// and the fencing of brokers whose sessions expire (FenceStale, Run). Its
// Registry is used under the Host's lock only.
type Membership struct {
	h   Host
	cfg MembershipConfig
	reg *membership.Registry
	// table is the image's broker table the Registry holds (compared by
	// identity: Image.Apply shares it until a broker record changes it).
	table map[int32]*BrokerImage
	built bool
}

// NewMembership returns the membership of h; it fails when cfg's registry
// configuration does not validate.
func NewMembership(h Host, cfg MembershipConfig) (*Membership, error) {
	if err := cfg.Registry.Validate(); err != nil {
		return nil, err
	}
	return &Membership{h: h, cfg: cfg}, nil
}

// Register adds BrokerRegistration, BrokerHeartbeat and UnregisterBroker
// to t. Only a node that runs a controller of a quorum registers them, so
// a single node's ApiVersions is unchanged.
func (m *Membership) Register(t *wire.Table) {
	t.Register(wire.API{Key: 62, Min: 0, Max: 4, Handle: m.handleRegistration})
	t.Register(wire.API{Key: 63, Min: 0, Max: 1, Handle: m.handleHeartbeat})
	t.Register(wire.API{Key: 64, Min: 0, Max: 0, Handle: m.handleUnregister})
}

// Activate rebuilds the Registry from the image in force and gives every
// registered broker a fresh session: the quorum calls it when this node
// becomes the active controller.
func (m *Membership) Activate() error {
	m.h.Lock()
	defer m.h.Unlock()
	if err := m.rebuild(m.h.Image()); err != nil {
		return err
	}
	m.reg.Activate()
	return nil
}

// sync brings the Registry to im's broker table, rebuilding it when the
// table changed under it. Called with the Host's lock held.
func (m *Membership) sync(im *Image) error {
	if m.built && sameTable(m.table, im.Registered) {
		return nil
	}
	if err := m.rebuild(im); err != nil {
		return err
	}
	m.reg.Activate()
	return nil
}

func sameTable(a, b map[int32]*BrokerImage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// rebuild makes a Registry holding im's broker table.
func (m *Membership) rebuild(im *Image) error {
	reg, err := membership.NewRegistry(m.cfg.Registry)
	if err != nil {
		return err
	}
	for _, rec := range brokerRecords(nil, im) {
		if err := reg.Apply(rec.RegisterBroker.BrokerEpoch, rec.RegisterBroker); err != nil {
			return err
		}
	}
	m.reg, m.table, m.built = reg, im.Registered, true
	return nil
}

// commit writes the registry's records as one batch on top of the image in
// force, publishes it and applies the records to the Registry at their
// offsets; it returns the next image. A RegisterBrokerRecord's
// BrokerEpoch is set to the offset it is written at. Called with the
// Host's lock held.
func (m *Membership) commit(im *Image, recs []records.Record) (*Image, error) {
	if len(recs) == 0 {
		return im, nil
	}
	for i, r := range recs {
		if reg, ok := r.(*records.RegisterBrokerRecord); ok {
			reg.BrokerEpoch = im.Offset + 1 + int64(i)
		}
	}
	conv := NewConverter(im)
	var mrecs []Record
	for _, r := range recs {
		var err error
		if mrecs, err = conv.Convert(mrecs, r); err != nil {
			return nil, fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
		}
	}
	next, err := m.h.Commit(im, mrecs)
	if err != nil {
		return nil, CommitError(err)
	}
	_ = m.h.Publish(im, next) // partitions a broker leads move; what does not open is logged by the listeners
	first := next.Offset - int64(len(recs)) + 1
	for i, r := range recs {
		if err := m.reg.Apply(first+int64(i), r); err != nil {
			m.h.Logger().Error("membership registry disagrees with the committed metadata; rebuilding it", "offset", first+int64(i), "err", err)
			m.built = false
			return next, nil
		}
	}
	if reg, ok := recs[len(recs)-1].(*records.RegisterBrokerRecord); ok && reg.BrokerEpoch != first+int64(len(recs)-1) {
		// The log placed the batch elsewhere than after im: the epoch in
		// the record is not its offset.
		m.built = false
		return nil, fmt.Errorf("%w: registration of broker %d written at offset %d, not %d", kerr.UnknownServerError,
			reg.BrokerID, first+int64(len(recs)-1), reg.BrokerEpoch)
	}
	m.table = next.Registered
	return next, nil
}

// FenceStale fences, one commit each, every broker whose session expired
// (membership.Registry.FenceStale), and returns when to call it next (ok
// false: no broker is unfenced).
func (m *Membership) FenceStale() (next time.Time, ok bool, err error) {
	m.h.Lock()
	defer m.h.Unlock()
	if err := m.fenceStale(m.h.Image()); err != nil {
		return time.Time{}, false, err
	}
	next, ok = m.reg.NextCheck()
	return next, ok, nil
}

// fenceStale is FenceStale under the lock; it returns the image in force
// after the fencing commits.
func (m *Membership) fenceStale(im *Image) error {
	if err := m.sync(im); err != nil {
		return err
	}
	for range 1 + len(im.Registered) { // each commit fences one broker
		recs := m.reg.FenceStale(imageParts{im})
		if len(recs) == 0 {
			return nil
		}
		next, err := m.commit(im, recs)
		if err != nil {
			return err
		}
		im = next
	}
	return nil
}

// Run calls FenceStale when the next session can expire, at most every
// sessionTimeout and at least every 10 ms, until ctx is done: the active
// controller's fencing loop.
func (m *Membership) Run(ctx context.Context) {
	for {
		wait := m.cfg.Registry.SessionTimeout
		next, ok, err := m.FenceStale()
		if err != nil {
			m.h.Logger().Warn("cannot fence brokers with expired sessions", "err", err)
		} else if ok {
			wait = min(wait, max(10*time.Millisecond, next.Sub(m.cfg.Registry.Now())+time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Send answers a BrokerRegistration or BrokerHeartbeat request in process,
// as its handler does: the channel (cluster/brokerlife.Channel) of a
// broker that runs in the same process as the active controller. Other
// requests are an error.
func (m *Membership) Send(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	var out any
	switch req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		out = m.handleRegistration(&wire.Request{Key: req.Key(), Version: req.GetVersion(), Req: req})
	case *kmsg.BrokerHeartbeatRequest:
		out = m.handleHeartbeat(&wire.Request{Key: req.Key(), Version: req.GetVersion(), Req: req})
	default:
		return nil, fmt.Errorf("cannot send %T to the controller in process", req)
	}
	return out.(kmsg.Response), nil
}

// onControllerListener reports whether r came on a controller listener;
// requests built without a connection (tests) count as such.
func (m *Membership) onControllerListener(r *wire.Request) bool {
	return r.Conn == nil || slices.Contains(m.cfg.ControllerListeners, r.Conn.Listener())
}

func (m *Membership) handleRegistration(r *wire.Request) any {
	if !m.onControllerListener(r) {
		return wire.Close{Reason: "BrokerRegistration on a listener that is not in controller.listener.names"}
	}
	req := r.Req.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	m.h.Lock()
	defer m.h.Unlock()
	err := func() error {
		im := m.h.Image()
		if err := m.fenceStale(im); err != nil {
			return err
		}
		im = m.h.Image()
		recs, err := m.reg.Register(req, im.Offset+1, imageParts{im})
		if err != nil {
			return err
		}
		if _, err := m.commit(im, recs); err != nil {
			return err
		}
		b, ok := m.reg.Broker(req.BrokerID)
		if !ok {
			return fmt.Errorf("%w: broker %d not registered after its record committed", kerr.UnknownServerError, req.BrokerID)
		}
		resp.BrokerEpoch = b.Epoch
		return nil
	}()
	resp.ErrorCode = wire.ErrCode(err)
	return resp
}

func (m *Membership) handleHeartbeat(r *wire.Request) any {
	if !m.onControllerListener(r) {
		return wire.Close{Reason: "BrokerHeartbeat on a listener that is not in controller.listener.names"}
	}
	req := r.Req.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.IsFenced = true
	m.h.Lock()
	defer m.h.Unlock()
	err := func() error {
		if err := m.fenceStale(m.h.Image()); err != nil {
			return err
		}
		im := m.h.Image()
		reply, recs, err := m.reg.Heartbeat(req, imageParts{im})
		if err != nil {
			return err
		}
		if _, err := m.commit(im, recs); err != nil {
			return err
		}
		resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = reply.IsCaughtUp, reply.IsFenced, reply.ShouldShutDown
		return nil
	}()
	resp.ErrorCode = wire.ErrCode(err)
	return resp
}

func (m *Membership) handleUnregister(r *wire.Request) any {
	req := r.Req.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !r.AllowedCluster(kmsg.ACLOperationAlter) {
		err := fmt.Errorf("%w: the principal is not allowed ALTER on the cluster", kerr.ClusterAuthorizationFailed)
		resp.ErrorCode, resp.ErrorMessage = wire.ErrCode(err), wire.ErrMessage(err)
		return resp
	}
	m.h.Lock()
	defer m.h.Unlock()
	err := func() error {
		im := m.h.Image()
		if err := m.sync(im); err != nil {
			return err
		}
		recs, err := m.reg.Unregister(req, imageParts{im})
		if err != nil {
			return err
		}
		_, err = m.commit(im, recs)
		return err
	}()
	resp.ErrorCode, resp.ErrorMessage = wire.ErrCode(err), wire.ErrMessage(err)
	return resp
}
