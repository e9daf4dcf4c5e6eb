package records

import (
	"fmt"
)

// UUID is Kafka's 16-byte uuid type (topic ids, ACL ids, incarnation ids,
// log directory ids).
type UUID [16]byte

// APIKey identifies a metadata record kind; the values are Kafka's
// (metadata/src/main/resources/common/metadata/*.json).
type APIKey int16

// The record kinds this package encodes, with Kafka's api keys.
const (
	RegisterBrokerKey            APIKey = 0
	UnregisterBrokerKey          APIKey = 1
	TopicKey                     APIKey = 2
	PartitionKey                 APIKey = 3
	ConfigKey                    APIKey = 4
	PartitionChangeKey           APIKey = 5
	FenceBrokerKey               APIKey = 7
	UnfenceBrokerKey             APIKey = 8
	RemoveTopicKey               APIKey = 9
	UserScramCredentialKey       APIKey = 11
	FeatureLevelKey              APIKey = 12
	ClientQuotaKey               APIKey = 14
	ProducerIdsKey               APIKey = 15
	BrokerRegistrationChangeKey  APIKey = 17
	AccessControlEntryKey        APIKey = 18
	RemoveAccessControlEntryKey  APIKey = 19
	NoOpKey                      APIKey = 20
	RemoveUserScramCredentialKey APIKey = 22
)

// FrameVersion is the version of the frame around every record, as
// Kafka's metadata record serde writes it.
const FrameVersion = 1

// Record is one metadata record. AppendTo appends its whole frame (frame
// version, api key, version, body); Decode reads one back.
type Record interface {
	// APIKey is the record kind.
	APIKey() APIKey
	// Version is the version the record encodes as.
	Version() int16
	// AppendTo appends the framed record to dst and returns the result.
	AppendTo(dst []byte) []byte

	appendBody(dst []byte) []byte
	readBody(r *reader, version int16)
}

type kind struct {
	name       string
	maxVersion int16
	new        func() Record
}

// kindOf describes api key k: its Kafka name, its highest version and a
// constructor of an empty record; ok is false for an unknown key.
func kindOf(k APIKey) (kd kind, ok bool) {
	switch k {
	case RegisterBrokerKey:
		return kind{"RegisterBrokerRecord", 3, func() Record { return &RegisterBrokerRecord{} }}, true
	case UnregisterBrokerKey:
		return kind{"UnregisterBrokerRecord", 0, func() Record { return &UnregisterBrokerRecord{} }}, true
	case TopicKey:
		return kind{"TopicRecord", 0, func() Record { return &TopicRecord{} }}, true
	case PartitionKey:
		return kind{"PartitionRecord", 0, func() Record { return &PartitionRecord{} }}, true
	case ConfigKey:
		return kind{"ConfigRecord", 0, func() Record { return &ConfigRecord{} }}, true
	case PartitionChangeKey:
		return kind{"PartitionChangeRecord", 0, func() Record { return &PartitionChangeRecord{} }}, true
	case FenceBrokerKey:
		return kind{"FenceBrokerRecord", 0, func() Record { return &FenceBrokerRecord{} }}, true
	case UnfenceBrokerKey:
		return kind{"UnfenceBrokerRecord", 0, func() Record { return &UnfenceBrokerRecord{} }}, true
	case RemoveTopicKey:
		return kind{"RemoveTopicRecord", 0, func() Record { return &RemoveTopicRecord{} }}, true
	case UserScramCredentialKey:
		return kind{"UserScramCredentialRecord", 0, func() Record { return &UserScramCredentialRecord{} }}, true
	case FeatureLevelKey:
		return kind{"FeatureLevelRecord", 0, func() Record { return &FeatureLevelRecord{} }}, true
	case ClientQuotaKey:
		return kind{"ClientQuotaRecord", 0, func() Record { return &ClientQuotaRecord{} }}, true
	case ProducerIdsKey:
		return kind{"ProducerIdsRecord", 0, func() Record { return &ProducerIdsRecord{} }}, true
	case BrokerRegistrationChangeKey:
		return kind{"BrokerRegistrationChangeRecord", 2, func() Record { return &BrokerRegistrationChangeRecord{} }}, true
	case AccessControlEntryKey:
		return kind{"AccessControlEntryRecord", 0, func() Record { return &AccessControlEntryRecord{} }}, true
	case RemoveAccessControlEntryKey:
		return kind{"RemoveAccessControlEntryRecord", 0, func() Record { return &RemoveAccessControlEntryRecord{} }}, true
	case NoOpKey:
		return kind{"NoOpRecord", 0, func() Record { return &NoOpRecord{} }}, true
	case RemoveUserScramCredentialKey:
		return kind{"RemoveUserScramCredentialRecord", 0, func() Record { return &RemoveUserScramCredentialRecord{} }}, true
	}
	return kind{}, false
}

// String is the kind's Kafka name, or "ApiKey(n)" for an unknown one.
func (k APIKey) String() string {
	if kd, ok := kindOf(k); ok {
		return kd.name
	}
	return fmt.Sprintf("ApiKey(%d)", int16(k))
}

// MaxVersion is the highest version of kind k this package writes and
// reads, or -1 for an unknown kind.
func MaxVersion(k APIKey) int16 {
	if kd, ok := kindOf(k); ok {
		return kd.maxVersion
	}
	return -1
}

// Encode appends r's frame to dst: Encode(dst, r) is r.AppendTo(dst).
func Encode(dst []byte, r Record) []byte { return r.AppendTo(dst) }

func appendFrame(dst []byte, r Record) []byte {
	v := r.Version()
	if v < 0 || v > MaxVersion(r.APIKey()) {
		panic(fmt.Sprintf("records: encoding %s at version %d, highest is %d", r.APIKey(), v, MaxVersion(r.APIKey())))
	}
	dst = appendUvarint(dst, FrameVersion)
	dst = appendUvarint(dst, uint64(r.APIKey()))
	dst = appendUvarint(dst, uint64(v))
	return r.appendBody(dst)
}

// Decode reads one framed record that fills b exactly. It never panics;
// its errors wrap ErrTruncated, ErrMalformed, ErrTrailingBytes,
// ErrUnknownFrameVersion, ErrUnknownAPIKey or ErrUnknownVersion. The
// record does not alias b.
func Decode(b []byte) (Record, error) {
	r := &reader{b: b}
	frame := r.uvarint32()
	key := r.uvarint32()
	version := r.uvarint32()
	if r.err != nil {
		return nil, fmt.Errorf("cannot decode metadata record frame: %w", r.err)
	}
	if frame != FrameVersion {
		return nil, fmt.Errorf("cannot decode metadata record: frame version %d, want %d: %w", frame, FrameVersion, ErrUnknownFrameVersion)
	}
	if key > 1<<15-1 {
		return nil, fmt.Errorf("cannot decode metadata record with api key %d: %w", key, ErrUnknownAPIKey)
	}
	kd, ok := kindOf(APIKey(key))
	if !ok {
		return nil, fmt.Errorf("cannot decode metadata record with api key %d: %w", key, ErrUnknownAPIKey)
	}
	if version > int(kd.maxVersion) {
		return nil, fmt.Errorf("cannot decode %s version %d (highest %d): %w", kd.name, version, kd.maxVersion, ErrUnknownVersion)
	}
	rec := kd.new()
	rec.readBody(r, int16(version))
	if r.err != nil {
		return nil, fmt.Errorf("cannot decode %s version %d: %w", kd.name, version, r.err)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("cannot decode %s version %d: %d bytes left: %w", kd.name, version, len(r.b), ErrTrailingBytes)
	}
	return rec, nil
}

// noTags appends an empty tagged-field section.
func noTags(dst []byte) []byte { return append(dst, 0) }

// BrokerEndpoint is one listener of a registered broker.
type BrokerEndpoint struct {
	Name             string
	Host             string
	Port             uint16
	SecurityProtocol int16
}

// BrokerFeature is a feature's supported level range on a broker.
type BrokerFeature struct {
	Name                string
	MinSupportedVersion int16
	MaxSupportedVersion int16
}

// RegisterBrokerRecord registers a broker (api key 0, versions 0-3).
// IsMigratingZkBroker is written from version 2, InControlledShutdown from
// 1, LogDirs (tag 0) from 3.
type RegisterBrokerRecord struct {
	RecordVersion        int16
	BrokerID             int32
	IsMigratingZkBroker  bool
	IncarnationID        UUID
	BrokerEpoch          int64
	EndPoints            []BrokerEndpoint
	Features             []BrokerFeature
	Rack                 *string
	Fenced               bool
	InControlledShutdown bool
	LogDirs              []UUID
}

// APIKey is RegisterBrokerKey.
func (*RegisterBrokerRecord) APIKey() APIKey { return RegisterBrokerKey }

// Version is RecordVersion.
func (r *RegisterBrokerRecord) Version() int16 { return r.RecordVersion }

// AppendTo appends the framed record.
func (r *RegisterBrokerRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *RegisterBrokerRecord) appendBody(dst []byte) []byte {
	v := r.RecordVersion
	dst = appendInt32(dst, r.BrokerID)
	if v >= 2 {
		dst = appendBool(dst, r.IsMigratingZkBroker)
	}
	dst = appendUUID(dst, r.IncarnationID)
	dst = appendInt64(dst, r.BrokerEpoch)
	dst = appendUvarint(dst, uint64(len(r.EndPoints))+1)
	for _, e := range r.EndPoints {
		dst = appendString(dst, e.Name)
		dst = appendString(dst, e.Host)
		dst = appendInt16(dst, int16(e.Port))
		dst = appendInt16(dst, e.SecurityProtocol)
		dst = noTags(dst)
	}
	dst = appendUvarint(dst, uint64(len(r.Features))+1)
	for _, f := range r.Features {
		dst = appendString(dst, f.Name)
		dst = appendInt16(dst, f.MinSupportedVersion)
		dst = appendInt16(dst, f.MaxSupportedVersion)
		dst = noTags(dst)
	}
	dst = appendNullableString(dst, r.Rack)
	dst = appendBool(dst, r.Fenced)
	if v >= 1 {
		dst = appendBool(dst, r.InControlledShutdown)
	}
	var t tagWriter
	if v >= 3 && len(r.LogDirs) > 0 {
		t.add(0, appendUUIDs(nil, r.LogDirs))
	}
	return t.appendTo(dst)
}

func (r *RegisterBrokerRecord) readBody(rd *reader, v int16) {
	r.RecordVersion = v
	r.BrokerID = rd.int32()
	if v >= 2 {
		r.IsMigratingZkBroker = rd.bool()
	}
	r.IncarnationID = rd.uuid()
	r.BrokerEpoch = rd.int64()
	if n := rd.arrayLen(6); n > 0 {
		r.EndPoints = make([]BrokerEndpoint, n)
		for i := range r.EndPoints {
			e := &r.EndPoints[i]
			e.Name = rd.string()
			e.Host = rd.string()
			e.Port = rd.uint16()
			e.SecurityProtocol = rd.int16()
			rd.tags(nil)
		}
	} else if n < 0 {
		rd.fail(fmt.Errorf("%w: null EndPoints", ErrMalformed))
	}
	if n := rd.arrayLen(6); n > 0 {
		r.Features = make([]BrokerFeature, n)
		for i := range r.Features {
			f := &r.Features[i]
			f.Name = rd.string()
			f.MinSupportedVersion = rd.int16()
			f.MaxSupportedVersion = rd.int16()
			rd.tags(nil)
		}
	} else if n < 0 {
		rd.fail(fmt.Errorf("%w: null Features", ErrMalformed))
	}
	r.Rack = rd.nullableString()
	r.Fenced = rd.bool()
	if v >= 1 {
		r.InControlledShutdown = rd.bool()
	}
	rd.tags(func(tag int, f *reader) bool {
		if tag == 0 && v >= 3 {
			r.LogDirs = f.uuids()
			return true
		}
		return false
	})
}

// UnregisterBrokerRecord removes a broker's registration (api key 1).
type UnregisterBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

// APIKey is UnregisterBrokerKey.
func (*UnregisterBrokerRecord) APIKey() APIKey { return UnregisterBrokerKey }

// Version is 0.
func (*UnregisterBrokerRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *UnregisterBrokerRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *UnregisterBrokerRecord) appendBody(dst []byte) []byte {
	dst = appendInt32(dst, r.BrokerID)
	dst = appendInt64(dst, r.BrokerEpoch)
	return noTags(dst)
}

func (r *UnregisterBrokerRecord) readBody(rd *reader, _ int16) {
	r.BrokerID = rd.int32()
	r.BrokerEpoch = rd.int64()
	rd.tags(nil)
}

// TopicRecord creates a topic (api key 2).
type TopicRecord struct {
	Name    string
	TopicID UUID
}

// APIKey is TopicKey.
func (*TopicRecord) APIKey() APIKey { return TopicKey }

// Version is 0.
func (*TopicRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *TopicRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *TopicRecord) appendBody(dst []byte) []byte {
	dst = appendString(dst, r.Name)
	dst = appendUUID(dst, r.TopicID)
	return noTags(dst)
}

func (r *TopicRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.TopicID = rd.uuid()
	rd.tags(nil)
}

// PartitionRecord creates a partition or replaces its whole state (api key
// 3). RemovingReplicas and AddingReplicas are null when nil.
// LeaderRecoveryState (tag 0) is written when it is not 0 (recovered).
// There is no shard field: a node places its partitions on its own
// shards.
type PartitionRecord struct {
	PartitionID         int32
	TopicID             UUID
	Replicas            []int32
	ISR                 []int32
	RemovingReplicas    []int32
	AddingReplicas      []int32
	Leader              int32
	LeaderEpoch         int32
	PartitionEpoch      int32
	LeaderRecoveryState int8
}

// APIKey is PartitionKey.
func (*PartitionRecord) APIKey() APIKey { return PartitionKey }

// Version is 0.
func (*PartitionRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *PartitionRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *PartitionRecord) appendBody(dst []byte) []byte {
	dst = appendInt32(dst, r.PartitionID)
	dst = appendUUID(dst, r.TopicID)
	dst = appendInt32s(dst, r.Replicas)
	dst = appendInt32s(dst, r.ISR)
	dst = appendNullableInt32s(dst, r.RemovingReplicas)
	dst = appendNullableInt32s(dst, r.AddingReplicas)
	dst = appendInt32(dst, r.Leader)
	dst = appendInt32(dst, r.LeaderEpoch)
	dst = appendInt32(dst, r.PartitionEpoch)
	var t tagWriter
	if r.LeaderRecoveryState != 0 {
		t.add(0, []byte{byte(r.LeaderRecoveryState)})
	}
	return t.appendTo(dst)
}

func (r *PartitionRecord) readBody(rd *reader, _ int16) {
	r.PartitionID = rd.int32()
	r.TopicID = rd.uuid()
	r.Replicas = rd.int32s()
	r.ISR = rd.int32s()
	r.RemovingReplicas = rd.nullableInt32s()
	r.AddingReplicas = rd.nullableInt32s()
	r.Leader = rd.int32()
	r.LeaderEpoch = rd.int32()
	r.PartitionEpoch = rd.int32()
	rd.tags(func(tag int, f *reader) bool {
		if tag == 0 {
			r.LeaderRecoveryState = f.int8()
			return true
		}
		return false
	})
}

// ConfigRecord sets (Value non-nil) or removes (Value nil) one config of a
// resource (api key 4). ResourceType is Kafka's ConfigResource code: 2
// topic, 4 broker, 32 group.
type ConfigRecord struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string
}

// APIKey is ConfigKey.
func (*ConfigRecord) APIKey() APIKey { return ConfigKey }

// Version is 0.
func (*ConfigRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *ConfigRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *ConfigRecord) appendBody(dst []byte) []byte {
	dst = appendInt8(dst, r.ResourceType)
	dst = appendString(dst, r.ResourceName)
	dst = appendString(dst, r.Name)
	dst = appendNullableString(dst, r.Value)
	return noTags(dst)
}

func (r *ConfigRecord) readBody(rd *reader, _ int16) {
	r.ResourceType = rd.int8()
	r.ResourceName = rd.string()
	r.Name = rd.string()
	r.Value = rd.nullableString()
	rd.tags(nil)
}

// Defaults of PartitionChangeRecord's tagged fields: the value that means
// "unchanged".
const (
	NoLeaderChange              int32 = -2
	NoLeaderRecoveryStateChange int8  = -1
)

// PartitionChangeRecord changes some of a partition's state (api key 5).
// Every field after TopicID is tagged and written only when it changes
// something: ISR, Replicas, RemovingReplicas and AddingReplicas when
// non-nil (tags 0, 2, 3, 4), Leader when not NoLeaderChange (tag 1; -1 is
// "no leader"), LeaderRecoveryState when not NoLeaderRecoveryStateChange
// (tag 5). Use NewPartitionChangeRecord for a record that changes nothing
// yet: the zero value changes the leader to broker 0.
type PartitionChangeRecord struct {
	PartitionID         int32
	TopicID             UUID
	ISR                 []int32
	Leader              int32
	Replicas            []int32
	RemovingReplicas    []int32
	AddingReplicas      []int32
	LeaderRecoveryState int8
}

// NewPartitionChangeRecord returns a record for the partition that
// changes nothing.
func NewPartitionChangeRecord(topic UUID, partition int32) *PartitionChangeRecord {
	return &PartitionChangeRecord{PartitionID: partition, TopicID: topic, Leader: NoLeaderChange, LeaderRecoveryState: NoLeaderRecoveryStateChange}
}

// APIKey is PartitionChangeKey.
func (*PartitionChangeRecord) APIKey() APIKey { return PartitionChangeKey }

// Version is 0.
func (*PartitionChangeRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *PartitionChangeRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *PartitionChangeRecord) appendBody(dst []byte) []byte {
	dst = appendInt32(dst, r.PartitionID)
	dst = appendUUID(dst, r.TopicID)
	var t tagWriter
	if r.ISR != nil {
		t.add(0, appendInt32s(nil, r.ISR))
	}
	if r.Leader != NoLeaderChange {
		t.add(1, appendInt32(nil, r.Leader))
	}
	if r.Replicas != nil {
		t.add(2, appendInt32s(nil, r.Replicas))
	}
	if r.RemovingReplicas != nil {
		t.add(3, appendInt32s(nil, r.RemovingReplicas))
	}
	if r.AddingReplicas != nil {
		t.add(4, appendInt32s(nil, r.AddingReplicas))
	}
	if r.LeaderRecoveryState != NoLeaderRecoveryStateChange {
		t.add(5, []byte{byte(r.LeaderRecoveryState)})
	}
	return t.appendTo(dst)
}

func (r *PartitionChangeRecord) readBody(rd *reader, _ int16) {
	r.PartitionID = rd.int32()
	r.TopicID = rd.uuid()
	r.Leader = NoLeaderChange
	r.LeaderRecoveryState = NoLeaderRecoveryStateChange
	rd.tags(func(tag int, f *reader) bool {
		switch tag {
		case 0:
			r.ISR = f.int32s()
		case 1:
			r.Leader = f.int32()
		case 2:
			r.Replicas = f.int32s()
		case 3:
			r.RemovingReplicas = f.int32s()
		case 4:
			r.AddingReplicas = f.int32s()
		case 5:
			r.LeaderRecoveryState = f.int8()
		default:
			return false
		}
		return true
	})
}

// FenceBrokerRecord fences a broker (api key 7).
type FenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// APIKey is FenceBrokerKey.
func (*FenceBrokerRecord) APIKey() APIKey { return FenceBrokerKey }

// Version is 0.
func (*FenceBrokerRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *FenceBrokerRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *FenceBrokerRecord) appendBody(dst []byte) []byte {
	dst = appendInt32(dst, r.ID)
	dst = appendInt64(dst, r.Epoch)
	return noTags(dst)
}

func (r *FenceBrokerRecord) readBody(rd *reader, _ int16) {
	r.ID = rd.int32()
	r.Epoch = rd.int64()
	rd.tags(nil)
}

// UnfenceBrokerRecord unfences a broker (api key 8).
type UnfenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// APIKey is UnfenceBrokerKey.
func (*UnfenceBrokerRecord) APIKey() APIKey { return UnfenceBrokerKey }

// Version is 0.
func (*UnfenceBrokerRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *UnfenceBrokerRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *UnfenceBrokerRecord) appendBody(dst []byte) []byte {
	dst = appendInt32(dst, r.ID)
	dst = appendInt64(dst, r.Epoch)
	return noTags(dst)
}

func (r *UnfenceBrokerRecord) readBody(rd *reader, _ int16) {
	r.ID = rd.int32()
	r.Epoch = rd.int64()
	rd.tags(nil)
}

// RemoveTopicRecord deletes a topic and its partitions (api key 9).
type RemoveTopicRecord struct {
	TopicID UUID
}

// APIKey is RemoveTopicKey.
func (*RemoveTopicRecord) APIKey() APIKey { return RemoveTopicKey }

// Version is 0.
func (*RemoveTopicRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *RemoveTopicRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *RemoveTopicRecord) appendBody(dst []byte) []byte {
	return noTags(appendUUID(dst, r.TopicID))
}

func (r *RemoveTopicRecord) readBody(rd *reader, _ int16) {
	r.TopicID = rd.uuid()
	rd.tags(nil)
}

// UserScramCredentialRecord stores a user's SCRAM credential for one
// mechanism (api key 11; Mechanism 1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
type UserScramCredentialRecord struct {
	Name       string
	Mechanism  int8
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// APIKey is UserScramCredentialKey.
func (*UserScramCredentialRecord) APIKey() APIKey { return UserScramCredentialKey }

// Version is 0.
func (*UserScramCredentialRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *UserScramCredentialRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *UserScramCredentialRecord) appendBody(dst []byte) []byte {
	dst = appendString(dst, r.Name)
	dst = appendInt8(dst, r.Mechanism)
	dst = appendBytes(dst, r.Salt)
	dst = appendBytes(dst, r.StoredKey)
	dst = appendBytes(dst, r.ServerKey)
	dst = appendInt32(dst, r.Iterations)
	return noTags(dst)
}

func (r *UserScramCredentialRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.Mechanism = rd.int8()
	r.Salt = rd.bytes()
	r.StoredKey = rd.bytes()
	r.ServerKey = rd.bytes()
	r.Iterations = rd.int32()
	rd.tags(nil)
}

// FeatureLevelRecord finalizes a feature's level (api key 12; level 0
// removes the feature).
type FeatureLevelRecord struct {
	Name         string
	FeatureLevel int16
}

// APIKey is FeatureLevelKey.
func (*FeatureLevelRecord) APIKey() APIKey { return FeatureLevelKey }

// Version is 0.
func (*FeatureLevelRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *FeatureLevelRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *FeatureLevelRecord) appendBody(dst []byte) []byte {
	dst = appendString(dst, r.Name)
	dst = appendInt16(dst, r.FeatureLevel)
	return noTags(dst)
}

func (r *FeatureLevelRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.FeatureLevel = rd.int16()
	rd.tags(nil)
}

// EntityData is one component of a client quota entity: EntityType
// "user", "client-id" or "ip"; EntityName nil for the default entity.
type EntityData struct {
	EntityType string
	EntityName *string
}

// ClientQuotaRecord sets (Remove false) or removes one quota of an entity
// (api key 14).
type ClientQuotaRecord struct {
	Entity []EntityData
	Key    string
	Value  float64
	Remove bool
}

// APIKey is ClientQuotaKey.
func (*ClientQuotaRecord) APIKey() APIKey { return ClientQuotaKey }

// Version is 0.
func (*ClientQuotaRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *ClientQuotaRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *ClientQuotaRecord) appendBody(dst []byte) []byte {
	dst = appendUvarint(dst, uint64(len(r.Entity))+1)
	for _, e := range r.Entity {
		dst = appendString(dst, e.EntityType)
		dst = appendNullableString(dst, e.EntityName)
		dst = noTags(dst)
	}
	dst = appendString(dst, r.Key)
	dst = appendFloat64(dst, r.Value)
	dst = appendBool(dst, r.Remove)
	return noTags(dst)
}

func (r *ClientQuotaRecord) readBody(rd *reader, _ int16) {
	n := rd.arrayLen(3)
	if n < 0 && rd.err == nil {
		rd.fail(fmt.Errorf("%w: null Entity", ErrMalformed))
	}
	if n > 0 {
		r.Entity = make([]EntityData, n)
		for i := range r.Entity {
			r.Entity[i].EntityType = rd.string()
			r.Entity[i].EntityName = rd.nullableString()
			rd.tags(nil)
		}
	}
	r.Key = rd.string()
	r.Value = rd.float64()
	r.Remove = rd.bool()
	rd.tags(nil)
}

// ProducerIdsRecord hands out producer ids: every id below NextProducerID
// is taken (api key 15). BrokerEpoch is -1 without broker registration.
type ProducerIdsRecord struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

// APIKey is ProducerIdsKey.
func (*ProducerIdsRecord) APIKey() APIKey { return ProducerIdsKey }

// Version is 0.
func (*ProducerIdsRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *ProducerIdsRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *ProducerIdsRecord) appendBody(dst []byte) []byte {
	dst = appendInt32(dst, r.BrokerID)
	dst = appendInt64(dst, r.BrokerEpoch)
	dst = appendInt64(dst, r.NextProducerID)
	return noTags(dst)
}

func (r *ProducerIdsRecord) readBody(rd *reader, _ int16) {
	r.BrokerID = rd.int32()
	r.BrokerEpoch = rd.int64()
	r.NextProducerID = rd.int64()
	rd.tags(nil)
}

// BrokerRegistrationChangeRecord changes a registered broker's state (api
// key 17, versions 0-2). Fenced (tag 0: -1 unfenced, 0 no change, 1
// fenced), InControlledShutdown (tag 1, from version 1) and LogDirs (tag
// 2, from version 2) are written when not zero or nil.
type BrokerRegistrationChangeRecord struct {
	RecordVersion        int16
	BrokerID             int32
	BrokerEpoch          int64
	Fenced               int8
	InControlledShutdown int8
	LogDirs              []UUID
}

// APIKey is BrokerRegistrationChangeKey.
func (*BrokerRegistrationChangeRecord) APIKey() APIKey { return BrokerRegistrationChangeKey }

// Version is RecordVersion.
func (r *BrokerRegistrationChangeRecord) Version() int16 { return r.RecordVersion }

// AppendTo appends the framed record.
func (r *BrokerRegistrationChangeRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *BrokerRegistrationChangeRecord) appendBody(dst []byte) []byte {
	v := r.RecordVersion
	dst = appendInt32(dst, r.BrokerID)
	dst = appendInt64(dst, r.BrokerEpoch)
	var t tagWriter
	if r.Fenced != 0 {
		t.add(0, []byte{byte(r.Fenced)})
	}
	if v >= 1 && r.InControlledShutdown != 0 {
		t.add(1, []byte{byte(r.InControlledShutdown)})
	}
	if v >= 2 && r.LogDirs != nil {
		t.add(2, appendUUIDs(nil, r.LogDirs))
	}
	return t.appendTo(dst)
}

func (r *BrokerRegistrationChangeRecord) readBody(rd *reader, v int16) {
	r.RecordVersion = v
	r.BrokerID = rd.int32()
	r.BrokerEpoch = rd.int64()
	rd.tags(func(tag int, f *reader) bool {
		switch {
		case tag == 0:
			r.Fenced = f.int8()
		case tag == 1 && v >= 1:
			r.InControlledShutdown = f.int8()
		case tag == 2 && v >= 2:
			r.LogDirs = f.uuids()
		default:
			return false
		}
		return true
	})
}

// AccessControlEntryRecord adds one ACL binding (api key 18), with Kafka's
// codes for the resource type, pattern type, operation and permission.
type AccessControlEntryRecord struct {
	ID             UUID
	ResourceType   int8
	ResourceName   string
	PatternType    int8
	Principal      string
	Host           string
	Operation      int8
	PermissionType int8
}

// APIKey is AccessControlEntryKey.
func (*AccessControlEntryRecord) APIKey() APIKey { return AccessControlEntryKey }

// Version is 0.
func (*AccessControlEntryRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *AccessControlEntryRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *AccessControlEntryRecord) appendBody(dst []byte) []byte {
	dst = appendUUID(dst, r.ID)
	dst = appendInt8(dst, r.ResourceType)
	dst = appendString(dst, r.ResourceName)
	dst = appendInt8(dst, r.PatternType)
	dst = appendString(dst, r.Principal)
	dst = appendString(dst, r.Host)
	dst = appendInt8(dst, r.Operation)
	dst = appendInt8(dst, r.PermissionType)
	return noTags(dst)
}

func (r *AccessControlEntryRecord) readBody(rd *reader, _ int16) {
	r.ID = rd.uuid()
	r.ResourceType = rd.int8()
	r.ResourceName = rd.string()
	r.PatternType = rd.int8()
	r.Principal = rd.string()
	r.Host = rd.string()
	r.Operation = rd.int8()
	r.PermissionType = rd.int8()
	rd.tags(nil)
}

// RemoveAccessControlEntryRecord removes the ACL binding with ID (api key
// 19).
type RemoveAccessControlEntryRecord struct {
	ID UUID
}

// APIKey is RemoveAccessControlEntryKey.
func (*RemoveAccessControlEntryRecord) APIKey() APIKey { return RemoveAccessControlEntryKey }

// Version is 0.
func (*RemoveAccessControlEntryRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *RemoveAccessControlEntryRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *RemoveAccessControlEntryRecord) appendBody(dst []byte) []byte {
	return noTags(appendUUID(dst, r.ID))
}

func (r *RemoveAccessControlEntryRecord) readBody(rd *reader, _ int16) {
	r.ID = rd.uuid()
	rd.tags(nil)
}

// NoOpRecord changes nothing (api key 20); the leader writes it to
// advance the log, and snapshots end with one.
type NoOpRecord struct{}

// APIKey is NoOpKey.
func (*NoOpRecord) APIKey() APIKey { return NoOpKey }

// Version is 0.
func (*NoOpRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *NoOpRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (*NoOpRecord) appendBody(dst []byte) []byte { return noTags(dst) }

func (*NoOpRecord) readBody(rd *reader, _ int16) { rd.tags(nil) }

// RemoveUserScramCredentialRecord deletes a user's SCRAM credential for
// one mechanism (api key 22).
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism int8
}

// APIKey is RemoveUserScramCredentialKey.
func (*RemoveUserScramCredentialRecord) APIKey() APIKey { return RemoveUserScramCredentialKey }

// Version is 0.
func (*RemoveUserScramCredentialRecord) Version() int16 { return 0 }

// AppendTo appends the framed record.
func (r *RemoveUserScramCredentialRecord) AppendTo(dst []byte) []byte { return appendFrame(dst, r) }

func (r *RemoveUserScramCredentialRecord) appendBody(dst []byte) []byte {
	dst = appendString(dst, r.Name)
	dst = appendInt8(dst, r.Mechanism)
	return noTags(dst)
}

func (r *RemoveUserScramCredentialRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.Mechanism = rd.int8()
	rd.tags(nil)
}
