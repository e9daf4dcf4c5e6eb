package membership

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// MemTable is an in-memory PartitionTable that applies partition records
// as the metadata image does: PartitionRecord creates or replaces a
// partition, PartitionChangeRecord changes it (a leader change bumps the
// leader epoch, every change bumps the partition epoch, as Kafka's
// PartitionRegistration.merge), RemoveTopicRecord deletes a topic's
// partitions. It is for tests and tools; it is not safe for concurrent
// use.
type MemTable struct {
	parts map[partKey]*Partition
}

type partKey struct {
	topic records.UUID
	part  int32
}

func (k partKey) less(o partKey) int {
	if c := bytes.Compare(k.topic[:], o.topic[:]); c != 0 {
		return c
	}
	return int(k.part) - int(o.part)
}

// NewMemTable returns an empty table.
func NewMemTable() *MemTable { return &MemTable{parts: map[partKey]*Partition{}} }

// Apply applies one record; kinds other than PartitionRecord,
// PartitionChangeRecord and RemoveTopicRecord are ignored. A change of an
// unknown partition returns an error and changes nothing.
func (m *MemTable) Apply(rec records.Record) error {
	switch rec := rec.(type) {
	case *records.PartitionRecord:
		m.parts[partKey{rec.TopicID, rec.PartitionID}] = &Partition{TopicID: rec.TopicID, Partition: rec.PartitionID,
			Replicas: slices.Clone(rec.Replicas), ISR: slices.Clone(rec.ISR), Leader: rec.Leader,
			LeaderEpoch: rec.LeaderEpoch, PartitionEpoch: rec.PartitionEpoch}
	case *records.PartitionChangeRecord:
		p := m.parts[partKey{rec.TopicID, rec.PartitionID}]
		if p == nil {
			return fmt.Errorf("cannot apply PartitionChangeRecord: no partition %d of topic %x", rec.PartitionID, rec.TopicID)
		}
		if rec.ISR != nil {
			p.ISR = slices.Clone(rec.ISR)
		}
		if rec.Replicas != nil {
			p.Replicas = slices.Clone(rec.Replicas)
		}
		if rec.Leader != records.NoLeaderChange {
			p.Leader = rec.Leader
			p.LeaderEpoch++
		}
		p.PartitionEpoch++
	case *records.RemoveTopicRecord:
		for k := range m.parts {
			if k.topic == rec.TopicID {
				delete(m.parts, k)
			}
		}
	}
	return nil
}

func (m *MemTable) sortedKeys() []partKey {
	keys := make([]partKey, 0, len(m.parts))
	for k := range m.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, partKey.less)
	return keys
}

// PartitionsOf calls fn with broker's partitions by topic id and partition.
func (m *MemTable) PartitionsOf(broker int32, fn func(Partition) bool) {
	for _, k := range m.sortedKeys() {
		p := m.parts[k]
		if slices.Contains(p.Replicas, broker) && !fn(*p) {
			return
		}
	}
}

// Partitions returns copies of every partition, by topic id and partition.
func (m *MemTable) Partitions() []Partition {
	out := make([]Partition, 0, len(m.parts))
	for _, k := range m.sortedKeys() {
		p := *m.parts[k]
		p.Replicas, p.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		out = append(out, p)
	}
	return out
}
