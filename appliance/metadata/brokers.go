package metadata

// The image's broker table: the brokers registered with the controller
// quorum, as the RegisterBrokerRecord, UnregisterBrokerRecord,
// FenceBrokerRecord, UnfenceBrokerRecord and BrokerRegistrationChangeRecord
// records leave them (Kafka's ClusterImage). A single node that never
// registers has an empty table and is its own one broker (LiveBrokers).

import (
	"fmt"
	"slices"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// BrokerImage is one registered broker. It is immutable.
type BrokerImage struct {
	// ID is its node.id.
	ID int32
	// Epoch is its broker epoch: the offset of its RegisterBrokerRecord
	// (the record's BrokerEpoch, which the controller sets to the offset
	// it writes the record at).
	Epoch int64
	// IncarnationID identifies one run of its process.
	IncarnationID records.UUID
	// Endpoints are its advertised listeners.
	Endpoints []records.BrokerEndpoint
	// Features are the feature level ranges it supports.
	Features []records.BrokerFeature
	// Rack is its broker.rack, nil when unset.
	Rack *string
	// Fenced: it may not lead partitions; clients are not told of it.
	Fenced bool
	// InControlledShutdown: it is moving its leadership away to stop.
	InControlledShutdown bool
	// LogDirs are its log directory ids.
	LogDirs []records.UUID
}

// Live reports whether b is unfenced: listed to clients and able to lead.
func (b *BrokerImage) Live() bool { return !b.Fenced }

// Endpoint returns b's endpoint on the listener named name (the first
// one when name is ""); ok is false when it has none there.
func (b *BrokerImage) Endpoint(name string) (records.BrokerEndpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == name || name == "" {
			return e, true
		}
	}
	return records.BrokerEndpoint{}, false
}

// applyBroker applies one broker record to reg, replacing the entries it
// changes (they are shared with older images).
func applyBroker(reg map[int32]*BrokerImage, r Record) error {
	switch {
	case r.RegisterBroker != nil:
		rec := r.RegisterBroker
		b := &BrokerImage{ID: rec.BrokerID, Epoch: rec.BrokerEpoch, IncarnationID: rec.IncarnationID,
			Endpoints: slices.Clone(rec.EndPoints), Features: slices.Clone(rec.Features), Fenced: rec.Fenced,
			InControlledShutdown: rec.InControlledShutdown, LogDirs: slices.Clone(rec.LogDirs)}
		if rec.Rack != nil {
			rack := *rec.Rack
			b.Rack = &rack
		}
		reg[b.ID] = b
	case r.UnregisterBroker != nil:
		rec := r.UnregisterBroker
		if _, err := registeredBroker(reg, rec.BrokerID, rec.BrokerEpoch, "UnregisterBrokerRecord"); err != nil {
			return err
		}
		delete(reg, rec.BrokerID)
	case r.BrokerChange != nil:
		rec := r.BrokerChange
		old, err := registeredBroker(reg, rec.BrokerID, rec.BrokerEpoch, "BrokerRegistrationChangeRecord")
		if err != nil {
			return err
		}
		b := *old
		switch rec.Fenced {
		case 0:
		case 1:
			b.Fenced = true
		case -1:
			b.Fenced = false
		default:
			return fmt.Errorf("cannot apply BrokerRegistrationChangeRecord to broker %d: fencing change %d", rec.BrokerID, rec.Fenced)
		}
		switch rec.InControlledShutdown {
		case 0:
		case 1:
			b.InControlledShutdown = true
		default:
			return fmt.Errorf("cannot apply BrokerRegistrationChangeRecord to broker %d: controlled shutdown change %d", rec.BrokerID, rec.InControlledShutdown)
		}
		if rec.LogDirs != nil {
			b.LogDirs = slices.Clone(rec.LogDirs)
		}
		reg[b.ID] = &b
	}
	return nil
}

// registeredBroker returns broker id's registration when its epoch is
// epoch.
func registeredBroker(reg map[int32]*BrokerImage, id int32, epoch int64, kind string) (*BrokerImage, error) {
	b, ok := reg[id]
	if !ok {
		return nil, fmt.Errorf("cannot apply %s: broker %d is not registered", kind, id)
	}
	if b.Epoch != epoch {
		return nil, fmt.Errorf("cannot apply %s: broker %d has epoch %d, the record names %d", kind, id, b.Epoch, epoch)
	}
	return b, nil
}

// RegisteredIDs returns the registered brokers' ids in ascending order.
func (im *Image) RegisteredIDs() []int32 {
	ids := make([]int32, 0, len(im.Registered))
	for id := range im.Registered {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// LiveBrokers returns the unfenced registered brokers by ascending id
// (those Metadata and DescribeCluster list), or nil when no broker is
// registered: then the node is its own one broker, as before the
// cluster existed.
func (im *Image) LiveBrokers() []*BrokerImage {
	var out []*BrokerImage
	for _, id := range im.RegisteredIDs() {
		if b := im.Registered[id]; b.Live() {
			out = append(out, b)
		}
	}
	return out
}

// LeaderOf returns the leader a client is told of for p: p.Leader, or -1
// when brokers are registered and the leader is not a live one (fenced or
// unknown), so that clients get LEADER_NOT_AVAILABLE until it returns.
func (im *Image) LeaderOf(p *PartitionImage) int32 {
	if len(im.Registered) == 0 || p.Leader < 0 {
		return p.Leader
	}
	if b := im.Registered[p.Leader]; b == nil || !b.Live() {
		return -1
	}
	return p.Leader
}

// brokerRecords returns the records that rebuild reg (for snapshots):
// a RegisterBrokerRecord per broker, by ascending id, with its current
// fencing and shutdown state.
func brokerRecords(dst []Record, im *Image) []Record {
	for _, id := range im.RegisteredIDs() {
		b := im.Registered[id]
		rec := &records.RegisterBrokerRecord{RecordVersion: 3, BrokerID: b.ID, IncarnationID: b.IncarnationID,
			BrokerEpoch: b.Epoch, EndPoints: nonNilEndpoints(b.Endpoints), Features: nonNilFeatures(b.Features), Rack: b.Rack,
			Fenced: b.Fenced, InControlledShutdown: b.InControlledShutdown, LogDirs: b.LogDirs}
		dst = append(dst, Record{RegisterBroker: rec})
	}
	return dst
}

func nonNilEndpoints(v []records.BrokerEndpoint) []records.BrokerEndpoint {
	if v == nil {
		return []records.BrokerEndpoint{}
	}
	return v
}

func nonNilFeatures(v []records.BrokerFeature) []records.BrokerFeature {
	if v == nil {
		return []records.BrokerFeature{}
	}
	return v
}
