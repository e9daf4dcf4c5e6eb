package appliance

import (
	"fmt"
	"sort"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// The metadata log stores cluster/records' binary records; the image and
// the controller work with MetadataRecord. This file converts between the
// two at the log's boundary, and turns an image back into the records
// that rebuild it (for snapshots).

// toBinaryRecord converts one MetadataRecord to its record kind. The
// partition's shard is not carried: a node places its partitions itself
// (placer).
func toBinaryRecord(r MetadataRecord) (records.Record, error) {
	switch {
	case r.Topic != nil:
		return &records.TopicRecord{Name: r.Topic.Name, TopicID: records.UUID(r.Topic.ID)}, nil
	case r.Partition != nil:
		p := r.Partition
		return &records.PartitionRecord{PartitionID: p.Partition, TopicID: records.UUID(p.TopicID),
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), Leader: p.Leader, LeaderEpoch: p.LeaderEpoch}, nil
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

// recordConverter turns the binary records of one batch into
// MetadataRecords for Image.Apply. A PartitionChangeRecord carries only
// what changed, so the converter tracks each partition's state before it:
// from earlier records of the batch, else from the image. Records the
// image does not model (broker registration, fencing, feature levels,
// no-ops) are dropped. Where a partition lives on this node is not
// metadata: the log manager places it (log_manager.go).
type recordConverter struct {
	im *Image // the image the batch applies to
	// batch holds the partitions this batch set so far, by topic and index.
	batch map[TopicID]map[int32]PartitionRecord
	// fresh are the topics this batch created.
	fresh map[TopicID]bool
}

func newRecordConverter(im *Image) *recordConverter {
	return &recordConverter{im: im}
}

// current returns the partition's state before rec: from this batch,
// else from the image.
func (pl *recordConverter) current(topic TopicID, p int32) (PartitionRecord, bool) {
	if pr, ok := pl.batch[topic][p]; ok {
		return pr, true
	}
	if pl.fresh[topic] {
		return PartitionRecord{}, false
	}
	if t, ok := pl.im.TopicsByID[topic]; ok && int(p) < len(t.Partitions) && p >= 0 {
		pi := t.Partitions[p]
		return PartitionRecord{TopicID: topic, Partition: p, Replicas: pi.Replicas, ISR: pi.ISR, Leader: pi.Leader, LeaderEpoch: pi.LeaderEpoch}, true
	}
	return PartitionRecord{}, false
}

func (pl *recordConverter) setPartition(pr PartitionRecord) {
	if pl.batch == nil {
		pl.batch = map[TopicID]map[int32]PartitionRecord{}
	}
	if pl.batch[pr.TopicID] == nil {
		pl.batch[pr.TopicID] = map[int32]PartitionRecord{}
	}
	pl.batch[pr.TopicID][pr.Partition] = pr
}

// convert appends rec's MetadataRecord to dst.
func (pl *recordConverter) convert(dst []MetadataRecord, rec records.Record) ([]MetadataRecord, error) {
	switch r := rec.(type) {
	case *records.TopicRecord:
		if pl.fresh == nil {
			pl.fresh = map[TopicID]bool{}
		}
		pl.fresh[TopicID(r.TopicID)] = true
		return append(dst, MetadataRecord{Topic: &TopicRecord{Name: r.Name, ID: TopicID(r.TopicID)}}), nil
	case *records.PartitionRecord:
		pr := PartitionRecord{TopicID: TopicID(r.TopicID), Partition: r.PartitionID, Replicas: r.Replicas, ISR: r.ISR,
			Leader: r.Leader, LeaderEpoch: r.LeaderEpoch}
		pl.setPartition(pr)
		return append(dst, MetadataRecord{Partition: &pr}), nil
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
		pl.setPartition(cur)
		return append(dst, MetadataRecord{Partition: &cur}), nil
	case *records.ConfigRecord:
		return append(dst, MetadataRecord{Config: &ConfigRecord{ResourceType: r.ResourceType, Name: r.ResourceName, Key: r.Name, Value: r.Value}}), nil
	case *records.RemoveTopicRecord:
		return append(dst, MetadataRecord{RemoveTopic: &RemoveTopicRecord{ID: TopicID(r.TopicID)}}), nil
	case *records.ProducerIdsRecord:
		return append(dst, MetadataRecord{ProducerIDs: &ProducerIDsRecord{BrokerID: r.BrokerID, NextProducerID: r.NextProducerID}}), nil
	case *records.AccessControlEntryRecord:
		return append(dst, MetadataRecord{ACL: &AccessControlEntryRecord{ID: ACLID(r.ID), ACLBinding: ACLBinding{
			ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType, Principal: r.Principal,
			Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}}}), nil
	case *records.RemoveAccessControlEntryRecord:
		return append(dst, MetadataRecord{RemoveACL: &RemoveAccessControlEntryRecord{ID: ACLID(r.ID)}}), nil
	case *records.ClientQuotaRecord:
		parts := make([]ClientQuotaEntityPart, len(r.Entity))
		for i, e := range r.Entity {
			parts[i] = ClientQuotaEntityPart{Type: e.EntityType, Name: e.EntityName}
		}
		return append(dst, MetadataRecord{ClientQuota: &ClientQuotaRecord{Entity: parts, Key: r.Key, Value: r.Value, Remove: r.Remove}}), nil
	case *records.UserScramCredentialRecord:
		return append(dst, MetadataRecord{UserScramCredential: &UserScramCredentialRecord{Name: r.Name, Mechanism: r.Mechanism,
			Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}}), nil
	case *records.RemoveUserScramCredentialRecord:
		return append(dst, MetadataRecord{RemoveUserScramCredential: &RemoveUserScramCredentialRecord{Name: r.Name, Mechanism: r.Mechanism}}), nil
	case *records.NoOpRecord, *records.FeatureLevelRecord, *records.RegisterBrokerRecord, *records.UnregisterBrokerRecord,
		*records.FenceBrokerRecord, *records.UnfenceBrokerRecord, *records.BrokerRegistrationChangeRecord:
		return dst, nil
	}
	return nil, fmt.Errorf("cannot apply metadata record %s: not handled", rec.APIKey())
}

// imageRecords returns the records that rebuild im from an empty image,
// in a stable order: topics by name (each with its partitions and
// configs), broker and group configs, the producer id block, ACLs, client
// quotas and SCRAM credentials. Shards are not in them.
func imageRecords(im *Image) []MetadataRecord {
	var out []MetadataRecord
	for _, name := range im.SortedTopicNames() {
		t := im.Topics[name]
		out = append(out, MetadataRecord{Topic: &TopicRecord{Name: t.Name, ID: t.ID}})
		for _, p := range t.Partitions {
			out = append(out, MetadataRecord{Partition: &PartitionRecord{TopicID: t.ID, Partition: p.Partition, Replicas: p.Replicas,
				ISR: p.ISR, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch}})
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
		out = append(out, MetadataRecord{ProducerIDs: &ProducerIDsRecord{BrokerID: -1, NextProducerID: im.NextProducerID}})
	}
	if im.ACLs != nil {
		ids, bindings := im.ACLs.Bindings() // in binding order
		for i, id := range ids {
			out = append(out, MetadataRecord{ACL: &AccessControlEntryRecord{ID: id, ACLBinding: bindings[i]}})
		}
	}
	ents := make([]quotaEntity, 0, len(im.clientQuotas))
	for e := range im.clientQuotas {
		ents = append(ents, e)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].String() < ents[j].String() })
	for _, e := range ents {
		vals := im.clientQuotas[e]
		for _, k := range sortedKeys(vals) {
			out = append(out, MetadataRecord{ClientQuota: &ClientQuotaRecord{Entity: e.Parts(), Key: k, Value: vals[k]}})
		}
	}
	for _, user := range sortedKeys(im.scram) {
		mechs := make([]int8, 0, len(im.scram[user]))
		for m := range im.scram[user] {
			mechs = append(mechs, m)
		}
		sort.Slice(mechs, func(i, j int) bool { return mechs[i] < mechs[j] })
		for _, m := range mechs {
			c := im.scram[user][m]
			out = append(out, MetadataRecord{UserScramCredential: &UserScramCredentialRecord{Name: user, Mechanism: m,
				Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}})
		}
	}
	return out
}

func appendConfigRecords(dst []MetadataRecord, typ int8, name string, cfg map[string]string) []MetadataRecord {
	for _, k := range sortedKeys(cfg) {
		v := cfg[k]
		dst = append(dst, MetadataRecord{Config: &ConfigRecord{ResourceType: typ, Name: name, Key: k, Value: &v}})
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
