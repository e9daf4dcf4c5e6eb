package membership

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// DefaultSessionTimeout is Kafka's broker.session.timeout.ms default: a
// broker that sends no heartbeat for longer is fenced.
const DefaultSessionTimeout = 9 * time.Second

// Config configures a Registry.
type Config struct {
	// ClusterID is the cluster's id (meta.properties' cluster.id); a
	// registration naming another is refused with INCONSISTENT_CLUSTER_ID.
	ClusterID string
	// SessionTimeout is broker.session.timeout.ms (DefaultSessionTimeout).
	SessionTimeout time.Duration
	// Now is the clock (time.Now in production, a fake in tests).
	Now func() time.Time
	// Logger gets state changes (registrations, fencing); nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns Kafka's defaults with the wall clock.
func DefaultConfig(clusterID string) Config {
	return Config{ClusterID: clusterID, SessionTimeout: DefaultSessionTimeout, Now: time.Now}
}

// Validate reports a configuration the Registry cannot run with.
func (c Config) Validate() error {
	switch {
	case c.ClusterID == "":
		return errors.New("cannot use membership config: empty cluster id")
	case c.SessionTimeout <= 0:
		return fmt.Errorf("cannot use membership config: broker.session.timeout.ms %v is not positive", c.SessionTimeout)
	case c.Now == nil:
		return errors.New("cannot use membership config: no clock")
	}
	return nil
}

// Broker is one registered broker as the committed records describe it:
// the state every controller agrees on.
type Broker struct {
	// ID is node.id.
	ID int32
	// Epoch is the offset of its RegisterBrokerRecord in __cluster_metadata.
	Epoch int64
	// IncarnationID identifies one run of the broker process.
	IncarnationID records.UUID
	// Endpoints are its advertised listeners.
	Endpoints []records.BrokerEndpoint
	// Features are the feature level ranges it supports.
	Features []records.BrokerFeature
	// Rack is broker.rack, nil when unset.
	Rack *string
	// Fenced: it may not lead partitions or be placed on.
	Fenced bool
	// InControlledShutdown: it asked to shut down and its leadership is
	// being moved away.
	InControlledShutdown bool
	// ShutdownOffset is the offset of the record that put it in controlled
	// shutdown, -1 when it is not.
	ShutdownOffset int64
	// LogDirs are its log directory ids.
	LogDirs []records.UUID
}

// usable reports whether b may lead partitions: unfenced and not shutting
// down.
func (b *Broker) usable() bool { return !b.Fenced && !b.InControlledShutdown }

// session is what the active controller knows of a broker's heartbeats;
// it is not replicated (Kafka's BrokerHeartbeatState).
type session struct {
	lastContact    time.Time
	metadataOffset int64
}

// Registry is the set of registered brokers, their fencing state and, on
// the active controller, their heartbeat sessions. It is not safe for
// concurrent use.
type Registry struct {
	cfg      Config
	log      *slog.Logger
	brokers  map[int32]*Broker
	features map[string]int16 // finalized feature levels
	sessions map[int32]*session
}

// NewRegistry returns an empty registry; it fails when cfg does not
// validate.
func NewRegistry(cfg Config) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{cfg: cfg, log: log, brokers: map[int32]*Broker{}, features: map[string]int16{}, sessions: map[int32]*session{}}, nil
}

// Broker returns a copy of broker id's registration.
func (r *Registry) Broker(id int32) (Broker, bool) {
	b, ok := r.brokers[id]
	if !ok {
		return Broker{}, false
	}
	return cloneBroker(b), true
}

// Brokers returns copies of every registration, by ascending id.
func (r *Registry) Brokers() []Broker {
	out := make([]Broker, 0, len(r.brokers))
	for _, id := range r.ids() {
		out = append(out, cloneBroker(r.brokers[id]))
	}
	return out
}

// FinalizedFeatures returns a copy of the finalized feature levels the
// FeatureLevelRecords set.
func (r *Registry) FinalizedFeatures() map[string]int16 {
	out := make(map[string]int16, len(r.features))
	for k, v := range r.features {
		out[k] = v
	}
	return out
}

// Usable returns the brokers placement may consider, by ascending id:
// every registered broker that is not in controlled shutdown, with its
// rack and fencing (Kafka's usable brokers).
func (r *Registry) Usable() []BrokerInfo {
	var out []BrokerInfo
	for _, id := range r.ids() {
		b := r.brokers[id]
		if b.InControlledShutdown {
			continue
		}
		info := BrokerInfo{ID: id, Fenced: b.Fenced}
		if b.Rack != nil {
			info.Rack = *b.Rack
		}
		out = append(out, info)
	}
	return out
}

func (r *Registry) ids() []int32 {
	ids := make([]int32, 0, len(r.brokers))
	for id := range r.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func cloneBroker(b *Broker) Broker {
	c := *b
	c.Endpoints = slices.Clone(b.Endpoints)
	c.Features = slices.Clone(b.Features)
	c.LogDirs = slices.Clone(b.LogDirs)
	if b.Rack != nil {
		rack := *b.Rack
		c.Rack = &rack
	}
	return c
}

// Apply replays one committed record at offset into the registry. It
// handles RegisterBrokerRecord (the broker's epoch becomes offset),
// UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord,
// BrokerRegistrationChangeRecord and FeatureLevelRecord, and ignores every
// other kind. A record that names an unknown broker or another epoch than
// the registered one changes nothing and returns an error: the log and
// the registry disagree, which the caller reports.
func (r *Registry) Apply(offset int64, rec records.Record) error {
	switch rec := rec.(type) {
	case *records.RegisterBrokerRecord:
		b := &Broker{ID: rec.BrokerID, Epoch: offset, IncarnationID: rec.IncarnationID,
			Endpoints: slices.Clone(rec.EndPoints), Features: slices.Clone(rec.Features),
			Fenced: rec.Fenced, InControlledShutdown: rec.InControlledShutdown, ShutdownOffset: -1,
			LogDirs: slices.Clone(rec.LogDirs)}
		if rec.Rack != nil {
			rack := *rec.Rack
			b.Rack = &rack
		}
		if b.InControlledShutdown {
			b.ShutdownOffset = offset
		}
		r.brokers[b.ID] = b
		r.sessions[b.ID] = &session{lastContact: r.cfg.Now(), metadataOffset: -1}
		r.log.Info("broker registered", "broker", b.ID, "epoch", b.Epoch, "fenced", b.Fenced)
	case *records.UnregisterBrokerRecord:
		if _, err := r.registered(rec.BrokerID, rec.BrokerEpoch, rec.APIKey()); err != nil {
			return err
		}
		delete(r.brokers, rec.BrokerID)
		delete(r.sessions, rec.BrokerID)
		r.log.Info("broker unregistered", "broker", rec.BrokerID, "epoch", rec.BrokerEpoch)
	case *records.FenceBrokerRecord:
		return r.change(offset, rec.APIKey(), rec.ID, rec.Epoch, 1, 0)
	case *records.UnfenceBrokerRecord:
		return r.change(offset, rec.APIKey(), rec.ID, rec.Epoch, -1, 0)
	case *records.BrokerRegistrationChangeRecord:
		if rec.LogDirs != nil {
			b, err := r.registered(rec.BrokerID, rec.BrokerEpoch, rec.APIKey())
			if err != nil {
				return err
			}
			b.LogDirs = slices.Clone(rec.LogDirs)
		}
		return r.change(offset, rec.APIKey(), rec.BrokerID, rec.BrokerEpoch, rec.Fenced, rec.InControlledShutdown)
	case *records.FeatureLevelRecord:
		if rec.FeatureLevel == 0 {
			delete(r.features, rec.Name)
		} else {
			r.features[rec.Name] = rec.FeatureLevel
		}
	}
	return nil
}

// registered returns broker id's registration when its epoch is epoch.
func (r *Registry) registered(id int32, epoch int64, kind records.APIKey) (*Broker, error) {
	b, ok := r.brokers[id]
	if !ok {
		return nil, fmt.Errorf("cannot apply %s: broker %d is not registered", kind, id)
	}
	if b.Epoch != epoch {
		return nil, fmt.Errorf("cannot apply %s: broker %d has epoch %d, the record names %d", kind, id, b.Epoch, epoch)
	}
	return b, nil
}

// change applies a fencing change (1 fence, -1 unfence, 0 none) and a
// controlled-shutdown change (1 enters it, 0 none), as
// BrokerRegistrationChangeRecord encodes them.
func (r *Registry) change(offset int64, kind records.APIKey, id int32, epoch int64, fenced, shutdown int8) error {
	b, err := r.registered(id, epoch, kind)
	if err != nil {
		return err
	}
	switch fenced {
	case 0:
	case 1:
		b.Fenced = true
	case -1:
		b.Fenced = false
	default:
		return fmt.Errorf("cannot apply %s to broker %d: fencing change %d", kind, id, fenced)
	}
	switch shutdown {
	case 0:
	case 1:
		if !b.InControlledShutdown {
			b.InControlledShutdown = true
			b.ShutdownOffset = offset
		}
	default:
		return fmt.Errorf("cannot apply %s to broker %d: controlled shutdown change %d", kind, id, shutdown)
	}
	r.log.Info("broker state changed", "broker", id, "epoch", epoch, "fenced", b.Fenced, "controlledShutdown", b.InControlledShutdown)
	return nil
}

// Activate starts a session for every registered broker at the current
// time, as a controller does when it becomes active: heartbeat times are
// not replicated, so each broker gets a full session timeout to reach the
// new active controller before it is fenced.
func (r *Registry) Activate() {
	now := r.cfg.Now()
	for id := range r.brokers {
		r.sessions[id] = &session{lastContact: now, metadataOffset: -1}
	}
}

// hasValidSession reports whether broker b heard from the controller
// within the session timeout; a fenced broker has no valid session
// (Kafka's BrokerHeartbeatManager.hasValidSession).
func (r *Registry) hasValidSession(b *Broker) bool {
	if b.Fenced {
		return false
	}
	s := r.sessions[b.ID]
	return s != nil && !r.cfg.Now().After(s.lastContact.Add(r.cfg.SessionTimeout))
}

// lowestActiveOffset is the lowest metadata offset an active broker
// (unfenced, not shutting down) reported in its heartbeats, or MaxInt64
// when there is none: every record below it has reached every active
// broker.
func (r *Registry) lowestActiveOffset() int64 {
	low := int64(math.MaxInt64)
	for id, b := range r.brokers {
		if !b.usable() {
			continue
		}
		off := int64(-1)
		if s := r.sessions[id]; s != nil {
			off = s.metadataOffset
		}
		low = min(low, off)
	}
	return low
}

// NextCheck returns when the oldest unfenced session expires, the time the
// caller should call FenceStale next; ok is false when no broker is
// unfenced.
func (r *Registry) NextCheck() (at time.Time, ok bool) {
	for id, b := range r.brokers {
		s := r.sessions[id]
		if b.Fenced || s == nil {
			continue
		}
		exp := s.lastContact.Add(r.cfg.SessionTimeout)
		if !ok || exp.Before(at) {
			at, ok = exp, true
		}
	}
	return at, ok
}
