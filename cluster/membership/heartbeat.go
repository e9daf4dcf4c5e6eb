package membership

import (
	"fmt"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerRegistrationChangeRecordVersion is the version of the
// BrokerRegistrationChangeRecords the registry writes to fence, unfence
// and start a controlled shutdown (version 1 has InControlledShutdown).
const BrokerRegistrationChangeRecordVersion = 1

// Values of BrokerRegistrationChangeRecord's Fenced and
// InControlledShutdown fields (Kafka's BrokerRegistrationFencingChange and
// BrokerRegistrationInControlledShutdownChange).
const (
	fence              int8 = 1
	unfence            int8 = -1
	enterShutdownState int8 = 1
)

// State is a broker's control state as the heartbeat logic sees it
// (Kafka's BrokerControlState).
type State int8

// The control states.
const (
	// Fenced: registered but fenced; it may not lead partitions.
	Fenced State = iota
	// Unfenced: live and usable.
	Unfenced
	// ControlledShutdown: unfenced, moving its leadership away before it
	// stops.
	ControlledShutdown
	// ShutdownNow: fenced and told to stop.
	ShutdownNow
)

// String is the state's name as Kafka logs it.
func (s State) String() string {
	switch s {
	case Fenced:
		return "FENCED"
	case Unfenced:
		return "UNFENCED"
	case ControlledShutdown:
		return "CONTROLLED_SHUTDOWN"
	case ShutdownNow:
		return "SHUTDOWN_NOW"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// HeartbeatReply is what a BrokerHeartbeat response (API 63) carries
// besides its error code.
type HeartbeatReply struct {
	// IsCaughtUp: the broker's metadata offset has reached its
	// registration record.
	IsCaughtUp bool
	// IsFenced: the broker is fenced after this heartbeat's records apply.
	IsFenced bool
	// ShouldShutDown: the broker may stop now (its controlled shutdown
	// is done, or it was fenced and asked to stop).
	ShouldShutDown bool
	// State is the broker's control state after this heartbeat.
	State State
}

// Heartbeat decides a BrokerHeartbeat (API 63) request: it refreshes the
// broker's session (not replicated), and returns the reply and the
// records of the state change the heartbeat causes, as Kafka's
// BrokerHeartbeatManager.calculateNextBrokerState decides it:
//
//   - fenced: WantShutdown stops it at once (ShutdownNow); otherwise,
//     unless WantFence, it is unfenced once CurrentMetadataOffset reaches
//     the offset of its RegisterBrokerRecord (caught up), and the
//     leaderless partitions it can lead get it as leader; a broker fenced
//     while in controlled shutdown stays fenced until it registers again;
//   - unfenced: WantFence fences it (ShutdownNow with WantShutdown);
//     WantShutdown enters controlled shutdown when it leads partitions
//     (their leadership moves to other ISR members, or to no leader),
//     else it stops at once;
//   - in controlled shutdown: it stops (ShutdownNow) once it leads nothing
//     and every active broker's metadata offset has reached the record
//     that started the shutdown.
//
// Stopping fences the broker (moving whatever it still leads). The records
// that change state are BrokerRegistrationChangeRecords. A broker not
// registered, or registered with another epoch, is STALE_BROKER_EPOCH.
func (r *Registry) Heartbeat(req *kmsg.BrokerHeartbeatRequest, parts PartitionTable) (HeartbeatReply, []records.Record, error) {
	b := r.brokers[req.BrokerID]
	if b == nil {
		return HeartbeatReply{}, nil, fmt.Errorf("%w: no registration of broker %d", kerr.StaleBrokerEpoch, req.BrokerID)
	}
	if b.Epoch != req.BrokerEpoch {
		return HeartbeatReply{}, nil, fmt.Errorf("%w: broker %d has epoch %d, the heartbeat names %d", kerr.StaleBrokerEpoch, b.ID, b.Epoch, req.BrokerEpoch)
	}
	s := r.sessions[b.ID]
	if s == nil {
		s = &session{}
		r.sessions[b.ID] = s
	}
	s.lastContact = r.cfg.Now()
	s.metadataOffset = req.CurrentMetadataOffset

	caughtUp := req.CurrentMetadataOffset >= b.Epoch
	cur := currentState(b)
	next := r.nextState(b, cur, req, caughtUp, parts)
	var out []records.Record
	if next != cur {
		switch next {
		case Unfenced:
			out = append(out, r.changeRecord(b, unfence, 0))
			out = append(out, r.restoreLeadership(parts, b.ID)...)
		case Fenced, ShutdownNow:
			if !b.Fenced {
				out = append(out, r.removeLeadership(parts, b.ID)...)
				out = append(out, r.changeRecord(b, fence, 0))
			}
		case ControlledShutdown:
			// The shutdown record comes last, so that its offset (the
			// broker's ShutdownOffset) is past the leadership moves that
			// every active broker must have seen before it stops.
			out = append(out, r.removeLeadership(parts, b.ID)...)
			out = append(out, r.changeRecord(b, 0, enterShutdownState))
		}
		r.log.Info("broker heartbeat changes state", "broker", b.ID, "from", cur, "to", next)
	}
	return HeartbeatReply{IsCaughtUp: caughtUp, IsFenced: next == Fenced || next == ShutdownNow,
		ShouldShutDown: next == ShutdownNow, State: next}, out, nil
}

func currentState(b *Broker) State {
	switch {
	case b.Fenced:
		return Fenced
	case b.InControlledShutdown:
		return ControlledShutdown
	}
	return Unfenced
}

func (r *Registry) nextState(b *Broker, cur State, req *kmsg.BrokerHeartbeatRequest, caughtUp bool, parts PartitionTable) State {
	switch cur {
	case Fenced:
		switch {
		case req.WantShutdown:
			return ShutdownNow
		case !req.WantFence && caughtUp && !b.InControlledShutdown:
			// A broker fenced during its controlled shutdown stays fenced
			// until it registers again: unfencing it would give
			// leadership to a broker on its way out.
			return Unfenced
		}
		return Fenced
	case Unfenced:
		switch {
		case req.WantFence && req.WantShutdown:
			return ShutdownNow
		case req.WantFence:
			return Fenced
		case req.WantShutdown && leadsAny(parts, b.ID):
			return ControlledShutdown
		case req.WantShutdown:
			return ShutdownNow
		}
		return Unfenced
	default: // ControlledShutdown
		if leadsAny(parts, b.ID) || r.lowestActiveOffset() < b.ShutdownOffset {
			return ControlledShutdown
		}
		return ShutdownNow
	}
}

func (r *Registry) changeRecord(b *Broker, fenced, shutdown int8) *records.BrokerRegistrationChangeRecord {
	return &records.BrokerRegistrationChangeRecord{RecordVersion: BrokerRegistrationChangeRecordVersion,
		BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: fenced, InControlledShutdown: shutdown}
}

// FenceStale decides the fencing of one broker whose session expired: the
// unfenced broker (in controlled shutdown or not) heard from longest ago,
// when more than the session timeout has passed since (Kafka's
// findOneStaleBroker). The records move its leadership away, then fence
// it. It returns nil when no session has expired; the caller applies the
// records and calls again until it does, and otherwise waits until
// NextCheck.
func (r *Registry) FenceStale(parts PartitionTable) []records.Record {
	now := r.cfg.Now()
	var stale *Broker
	for _, id := range r.ids() {
		b := r.brokers[id]
		if b.Fenced || r.hasValidSession(b) {
			continue
		}
		if stale == nil || r.lastContact(id).Before(r.lastContact(stale.ID)) {
			stale = b
		}
	}
	if stale == nil {
		return nil
	}
	r.log.Info("broker session expired", "broker", stale.ID, "epoch", stale.Epoch, "lastContact", r.lastContact(stale.ID), "now", now)
	out := r.removeLeadership(parts, stale.ID)
	return append(out, r.changeRecord(stale, fence, 0))
}

// lastContact is broker id's last heartbeat time, zero without a session.
func (r *Registry) lastContact(id int32) time.Time {
	if s := r.sessions[id]; s != nil {
		return s.lastContact
	}
	return time.Time{}
}

// SessionInfo is the active controller's view of one broker's heartbeats.
type SessionInfo struct {
	// ID is the broker's id.
	ID int32
	// LastContact is when its last heartbeat (or registration, or the
	// controller's activation) was seen.
	LastContact time.Time
	// MetadataOffset is the CurrentMetadataOffset of its last heartbeat.
	MetadataOffset int64
	// Valid: unfenced and heard from within the session timeout.
	Valid bool
}

// Sessions returns, by ascending broker id, each registered broker's last
// heartbeat time and reported metadata offset (-1 before its first
// heartbeat): the active controller's local view, for DescribeCluster-like
// reports and tests.
func (r *Registry) Sessions() []SessionInfo {
	var out []SessionInfo
	for _, id := range r.ids() {
		info := SessionInfo{ID: id, MetadataOffset: -1}
		if s := r.sessions[id]; s != nil {
			info.LastContact, info.MetadataOffset = s.lastContact, s.metadataOffset
		}
		info.Valid = r.hasValidSession(r.brokers[id])
		out = append(out, info)
	}
	return out
}
