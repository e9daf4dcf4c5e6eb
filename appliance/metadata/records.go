package metadata

import (
	"fmt"
	"sort"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// The metadata log stores cluster/records' binary records; the image and
// the controller work with Record. This file converts between the
// two at the log's boundary, and turns an image back into the records
// that rebuild it (for snapshots).

// ToBinary converts one Record to its record kind. The
// partition's shard is not carried: a node places its partitions itself
// (placer).
func ToBinary(r Record) (records.Record, error) {
	switch {
	case r.Topic != nil:
		return &records.TopicRecord{Name: r.Topic.Name, TopicID: records.UUID(r.Topic.ID)}, nil
	case r.Partition != nil:
		p := r.Partition
		return &records.PartitionRecord{PartitionID: p.Partition, TopicID: records.UUID(p.TopicID),
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			PartitionEpoch: p.PartitionEpoch}, nil
	case r.Config != nil:
		c := r.Config
		return &records.ConfigRecord{ResourceType: c.ResourceType, ResourceName: c.Name, Name: c.Key, Value: c.Value}, nil
	case r.RemoveTopic != nil:
		return &records.RemoveTopicRecord{TopicID: records.UUID(r.RemoveTopic.ID)}, nil
	case r.ProducerIDs != nil:
		return &records.ProducerIdsRecord{BrokerID: r.ProducerIDs.BrokerID, BrokerEpoch: -1, NextProducerID: r.ProducerIDs.NextProducerID}, nil
	case r.ACL != nil:
		a := r.ACL
		return &records.AccessControlEntryRecord{ID: records.UUID(a.ID), ResourceType: a.ResourceType, ResourceName: a.ResourceName,
			PatternType: a.PatternType, Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.Permission}, nil
	case r.RemoveACL != nil:
		return &records.RemoveAccessControlEntryRecord{ID: records.UUID(r.RemoveACL.ID)}, nil
	case r.ClientQuota != nil:
		q := r.ClientQuota
		ents := make([]records.EntityData, len(q.Entity))
		for i, e := range q.Entity {
			ents[i] = records.EntityData{EntityType: e.Type, EntityName: e.Name}
		}
		return &records.ClientQuotaRecord{Entity: ents, Key: q.Key, Value: q.Value, Remove: q.Remove}, nil
	case r.UserScramCredential != nil:
		s := r.UserScramCredential
		return &records.UserScramCredentialRecord{Name: s.Name, Mechanism: s.Mechanism, Salt: nonNilBytes(s.Salt),
			StoredKey: nonNilBytes(s.StoredKey), ServerKey: nonNilBytes(s.ServerKey), Iterations: s.Iterations}, nil
	case r.RemoveUserScramCredential != nil:
		return &records.RemoveUserScramCredentialRecord{Name: r.RemoveUserScramCredential.Name, Mechanism: r.RemoveUserScramCredential.Mechanism}, nil
	case r.RegisterBroker != nil:
		return r.RegisterBroker, nil
	case r.UnregisterBroker != nil:
		return r.UnregisterBroker, nil
	case r.BrokerChange != nil:
		return r.BrokerChange, nil
	}
	return nil, fmt.Errorf("cannot encode an empty metadata record")
}

func nonNil(v []int32) []int32 {
	if v == nil {
		return []int32{}
	}
	return v
}

func nonNilBytes(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// Converter turns the binary records of one batch into
// Records for Image.Apply. A PartitionChangeRecord carries only
// what changed, so the converter tracks each partition's state before it:
// from earlier records of the batch, else from the image, and the
// Record it yields is the whole partition after the change (its partition
// epoch bumped). Fence and Unfence records become BrokerChange records.
// Records the image does not model (feature levels, no-ops) are dropped. Where a partition lives on this node is not
// metadata: the log manager places it (appliance's log manager).
type Converter struct {
	im *Image // the image the batch applies to
	// batch holds the partitions this batch set so far, by topic and index.
	batch map[TopicID]map[int32]PartitionRecord
	// fresh are the topics this batch created.
	fresh map[TopicID]bool
}

// NewConverter returns a converter for a batch that applies to im.
func NewConverter(im *Image) *Converter {
	return &Converter{im: im}
}

// current returns the partition's state before rec: from this batch,
// else from the image.
func (pl *Converter) current(topic TopicID, p int32) (PartitionRecord, bool) {
	if pr, ok := pl.batch[topic][p]; ok {
		return pr, true
	}
	if pl.fresh[topic] {
		return PartitionRecord{}, false
	}
	if t, ok := pl.im.TopicsByID[topic]; ok && int(p) < len(t.Partitions) && p >= 0 {
		pi := t.Partitions[p]
		return PartitionRecord{TopicID: topic, Partition: p, Replicas: pi.Replicas, ISR: pi.ISR, Leader: pi.Leader,
			LeaderEpoch: pi.LeaderEpoch, PartitionEpoch: pi.PartitionEpoch}, true
	}
	return PartitionRecord{}, false
}

func (pl *Converter) setPartition(pr PartitionRecord) {
	if pl.batch == nil {
		pl.batch = map[TopicID]map[int32]PartitionRecord{}
	}
	if pl.batch[pr.TopicID] == nil {
		pl.batch[pr.TopicID] = map[int32]PartitionRecord{}
	}
	pl.batch[pr.TopicID][pr.Partition] = pr
}

// Convert appends rec's Record to dst.
func (pl *Converter) Convert(dst []Record, rec records.Record) ([]Record, error) {
	switch r := rec.(type) {
	case *records.TopicRecord:
		if pl.fresh == nil {
			pl.fresh = map[TopicID]bool{}
		}
		pl.fresh[TopicID(r.TopicID)] = true
		return append(dst, Record{Topic: &TopicRecord{Name: r.Name, ID: TopicID(r.TopicID)}}), nil
	case *records.PartitionRecord:
		pr := PartitionRecord{TopicID: TopicID(r.TopicID), Partition: r.PartitionID, Replicas: r.Replicas, ISR: r.ISR,
			Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch}
		pl.setPartition(pr)
		return append(dst, Record{Partition: &pr}), nil
	case *records.PartitionChangeRecord:
		cur, ok := pl.current(TopicID(r.TopicID), r.PartitionID)
		if !ok {
			return nil, fmt.Errorf("cannot apply PartitionChangeRecord: unknown partition %d of topic id %s", r.PartitionID, TopicID(r.TopicID))
		}
		if r.ISR != nil {
			cur.ISR = r.ISR
		}
		if r.Replicas != nil {
			cur.Replicas = r.Replicas
		}
		if r.Leader != records.NoLeaderChange {
			cur.Leader = r.Leader
			cur.LeaderEpoch++
		}
		cur.PartitionEpoch++ // every change, as Kafka's PartitionRegistration.merge
		pl.setPartition(cur)
		return append(dst, Record{Partition: &cur}), nil
	case *records.ConfigRecord:
		return append(dst, Record{Config: &ConfigRecord{ResourceType: r.ResourceType, Name: r.ResourceName, Key: r.Name, Value: r.Value}}), nil
	case *records.RemoveTopicRecord:
		return append(dst, Record{RemoveTopic: &RemoveTopicRecord{ID: TopicID(r.TopicID)}}), nil
	case *records.ProducerIdsRecord:
		return append(dst, Record{ProducerIDs: &ProducerIDsRecord{BrokerID: r.BrokerID, NextProducerID: r.NextProducerID}}), nil
	case *records.AccessControlEntryRecord:
		return append(dst, Record{ACL: &AccessControlEntryRecord{ID: ACLID(r.ID), ACLBinding: ACLBinding{
			ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType, Principal: r.Principal,
			Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}}}), nil
	case *records.RemoveAccessControlEntryRecord:
		return append(dst, Record{RemoveACL: &RemoveAccessControlEntryRecord{ID: ACLID(r.ID)}}), nil
	case *records.ClientQuotaRecord:
		parts := make([]ClientQuotaEntityPart, len(r.Entity))
		for i, e := range r.Entity {
			parts[i] = ClientQuotaEntityPart{Type: e.EntityType, Name: e.EntityName}
		}
		return append(dst, Record{ClientQuota: &ClientQuotaRecord{Entity: parts, Key: r.Key, Value: r.Value, Remove: r.Remove}}), nil
	case *records.UserScramCredentialRecord:
		return append(dst, Record{UserScramCredential: &UserScramCredentialRecord{Name: r.Name, Mechanism: r.Mechanism,
			Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}}), nil
	case *records.RemoveUserScramCredentialRecord:
		return append(dst, Record{RemoveUserScramCredential: &RemoveUserScramCredentialRecord{Name: r.Name, Mechanism: r.Mechanism}}), nil
	case *records.RegisterBrokerRecord:
		return append(dst, Record{RegisterBroker: r}), nil
	case *records.UnregisterBrokerRecord:
		return append(dst, Record{UnregisterBroker: r}), nil
	case *records.BrokerRegistrationChangeRecord:
		return append(dst, Record{BrokerChange: r}), nil
	case *records.FenceBrokerRecord: // the older form of a fencing change
		return append(dst, Record{BrokerChange: &records.BrokerRegistrationChangeRecord{BrokerID: r.ID, BrokerEpoch: r.Epoch, Fenced: 1}}), nil
	case *records.UnfenceBrokerRecord:
		return append(dst, Record{BrokerChange: &records.BrokerRegistrationChangeRecord{BrokerID: r.ID, BrokerEpoch: r.Epoch, Fenced: -1}}), nil
	case *records.NoOpRecord, *records.FeatureLevelRecord:
		return dst, nil
	}
	return nil, fmt.Errorf("cannot apply metadata record %s: not handled", rec.APIKey())
}

// ImageRecords returns the records that rebuild im from an empty image,
// in a stable order: registered brokers by id, topics by name (each with its partitions and
// configs), broker and group configs, the producer id block, ACLs, client
// quotas and SCRAM credentials. Shards are not in them.
func ImageRecords(im *Image) []Record {
	out := brokerRecords(nil, im)
	for _, name := range im.SortedTopicNames() {
		t := im.Topics[name]
		out = append(out, Record{Topic: &TopicRecord{Name: t.Name, ID: t.ID}})
		for _, p := range t.Partitions {
			out = append(out, Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: p.Partition, Replicas: p.Replicas,
				ISR: p.ISR, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}})
		}
		out = appendConfigRecords(out, 2, t.Name, t.Configs)
	}
	for _, node := range sortedKeys(im.Brokers) {
		out = appendConfigRecords(out, 4, node, im.Brokers[node])
	}
	for _, g := range sortedKeys(im.GroupConfigs) {
		out = appendConfigRecords(out, 32, g, im.GroupConfigs[g])
	}
	if im.NextProducerID > 0 {
		out = append(out, Record{ProducerIDs: &ProducerIDsRecord{BrokerID: -1, NextProducerID: im.NextProducerID}})
	}
	ids, bindings := im.ACLs.All() // in binding order
	for i, id := range ids {
		out = append(out, Record{ACL: &AccessControlEntryRecord{ID: id, ACLBinding: bindings[i]}})
	}
	for _, e := range im.ClientQuotas.All() { // by entity key
		for _, k := range sortedKeys(e.Values) {
			out = append(out, Record{ClientQuota: &ClientQuotaRecord{Entity: e.Parts, Key: k, Value: e.Values[k]}})
		}
	}
	for _, user := range sortedKeys(im.Scram) {
		mechs := make([]int8, 0, len(im.Scram[user]))
		for m := range im.Scram[user] {
			mechs = append(mechs, m)
		}
		sort.Slice(mechs, func(i, j int) bool { return mechs[i] < mechs[j] })
		for _, m := range mechs {
			c := im.Scram[user][m]
			out = append(out, Record{UserScramCredential: &UserScramCredentialRecord{Name: user, Mechanism: m,
				Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}})
		}
	}
	return out
}

func appendConfigRecords(dst []Record, typ int8, name string, cfg map[string]string) []Record {
	for _, k := range sortedKeys(cfg) {
		v := cfg[k]
		dst = append(dst, Record{Config: &ConfigRecord{ResourceType: typ, Name: name, Key: k, Value: &v}})
	}
	return dst
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
