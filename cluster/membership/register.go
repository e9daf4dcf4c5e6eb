package membership

import (
	"fmt"
	"slices"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RegisterBrokerRecordVersion is the RegisterBrokerRecord version Register
// writes (Kafka 3.7+: with LogDirs).
const RegisterBrokerRecordVersion = 3

// Register decides a BrokerRegistration (API 62) request: it returns the
// records that register the broker, or an error for the response.
//
// The checks are Kafka's ClusterControlManager.registerBroker:
//   - ClusterID must be the configured one, else INCONSISTENT_CLUSTER_ID;
//   - while a registration of the same id has a valid session (unfenced,
//     heard from within the session timeout), a request with another
//     incarnation id is DUPLICATE_BROKER_REGISTRATION; the same
//     incarnation re-registers (a retried request);
//   - every finalized feature level must lie in the range the broker
//     declares (a feature it does not declare supports level 0 only),
//     else UNSUPPORTED_VERSION.
//
// The RegisterBrokerRecord registers the broker fenced and not in
// controlled shutdown; its BrokerEpoch field is nextOffset, the offset the
// caller will write it at, as Kafka writes it, but the epoch Apply gives
// the broker is the offset the record is applied at. When the id was
// registered and unfenced (a quick restart of the same incarnation), the
// records first move its leadership away, as fencing does, because the
// new registration starts fenced.
func (r *Registry) Register(req *kmsg.BrokerRegistrationRequest, nextOffset int64, parts PartitionTable) ([]records.Record, error) {
	if req.ClusterID != r.cfg.ClusterID {
		return nil, fmt.Errorf("%w: broker %d names cluster %q, this cluster is %q", kerr.InconsistentClusterID, req.BrokerID, req.ClusterID, r.cfg.ClusterID)
	}
	existing := r.brokers[req.BrokerID]
	if existing != nil && r.hasValidSession(existing) && existing.IncarnationID != records.UUID(req.IncarnationID) {
		return nil, fmt.Errorf("%w: broker %d is registered with epoch %d by another incarnation (%x, this request %x)",
			kerr.DuplicateBrokerRegistration, req.BrokerID, existing.Epoch, existing.IncarnationID, req.IncarnationID)
	}
	if err := r.checkFeatures(req); err != nil {
		return nil, err
	}
	rec := &records.RegisterBrokerRecord{RecordVersion: RegisterBrokerRecordVersion, BrokerID: req.BrokerID,
		IsMigratingZkBroker: req.IsMigratingZkBroker, IncarnationID: req.IncarnationID, BrokerEpoch: nextOffset,
		Rack: req.Rack, Fenced: true}
	for _, l := range req.Listeners {
		rec.EndPoints = append(rec.EndPoints, records.BrokerEndpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	for _, f := range req.Features {
		rec.Features = append(rec.Features, records.BrokerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
	}
	for _, d := range req.LogDirs {
		rec.LogDirs = append(rec.LogDirs, d)
	}
	var out []records.Record
	if existing != nil && existing.usable() {
		out = r.removeLeadership(parts, existing.ID)
	}
	return append(out, rec), nil
}

// checkFeatures checks that req's broker supports every finalized feature
// level.
func (r *Registry) checkFeatures(req *kmsg.BrokerRegistrationRequest) error {
	names := make([]string, 0, len(r.features))
	for name := range r.features {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		level := r.features[name]
		lo, hi := int16(0), int16(0)
		for _, f := range req.Features {
			if f.Name == name {
				lo, hi = f.MinSupportedVersion, f.MaxSupportedVersion
			}
		}
		if level < lo || level > hi {
			return fmt.Errorf("%w: broker %d supports %s levels %d to %d, the finalized level is %d",
				kerr.UnsupportedVersion, req.BrokerID, name, lo, hi, level)
		}
	}
	return nil
}

// Unregister decides an UnregisterBroker (API 64) request: the records
// that move the broker's leadership away and shrink it out of ISRs (as
// fencing does), then an UnregisterBrokerRecord. An id that is not
// registered is BROKER_ID_NOT_REGISTERED.
func (r *Registry) Unregister(req *kmsg.UnregisterBrokerRequest, parts PartitionTable) ([]records.Record, error) {
	b := r.brokers[req.BrokerID]
	if b == nil {
		return nil, fmt.Errorf("%w: broker %d", kerr.BrokerIDNotRegistered, req.BrokerID)
	}
	out := r.removeLeadership(parts, b.ID)
	return append(out, &records.UnregisterBrokerRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch}), nil
}
