package metadata

// Placement of new partitions, and the image as the membership logic's
// partition table. A node with no registered brokers (a single node) puts
// every partition on itself, as before the cluster existed; once brokers
// register, new partitions go to the unfenced ones, rack-aware round robin
// (membership.Placer, Kafka's StripedReplicaPlacer).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ringbroker/ringbroker/cluster/membership"
	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// PlacePartitions returns the records of partitions [from, to) of topic
// id with rf replicas each: on node alone when im has no registered
// brokers, else on im's unfenced registered brokers that are not in
// controlled shutdown, with the first replica as leader and every replica
// in the ISR. The placer is seeded from the topic id and from, so a
// placement is random across topics but the same for the same request.
// Errors wrap INVALID_REPLICATION_FACTOR.
func PlacePartitions(im *Image, id TopicID, from, to, rf, node int32) ([]Record, error) {
	if len(im.Registered) == 0 {
		if rf > 1 {
			return nil, fmt.Errorf("%w: replication factor %d is larger than the 1 available broker", kerr.InvalidReplicationFactor, rf)
		}
		return AddPartitionRecords(id, from, to, node), nil
	}
	var brokers []membership.BrokerInfo
	for _, bid := range im.RegisteredIDs() {
		b := im.Registered[bid]
		if b.InControlledShutdown {
			continue
		}
		info := membership.BrokerInfo{ID: b.ID, Fenced: b.Fenced}
		if b.Rack != nil {
			info.Rack = *b.Rack
		}
		brokers = append(brokers, info)
	}
	seed := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:]) ^ uint64(from)
	placed, err := membership.NewSeededPlacer(seed).Place(int(to-from), int(rf), brokers)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, len(placed))
	for i, replicas := range placed {
		recs = append(recs, Record{Partition: &PartitionRecord{TopicID: id, Partition: from + int32(i), Replicas: replicas,
			ISR: slices.Clone(replicas), Leader: replicas[0]}})
	}
	return recs, nil
}

// localPartitions returns the partitions of recs whose replicas include
// node (those whose directories the controller makes on its own disk).
func localPartitions(recs []Record, node int32) []int32 {
	var out []int32
	for _, r := range recs {
		if r.Partition != nil && slices.Contains(r.Partition.Replicas, node) {
			out = append(out, r.Partition.Partition)
		}
	}
	return out
}

// imageParts is an image as membership.PartitionTable.
type imageParts struct{ im *Image }

// PartitionsOf calls fn with broker's partitions, by topic id and
// partition index (the same order on every controller).
func (p imageParts) PartitionsOf(broker int32, fn func(membership.Partition) bool) {
	ids := make([]TopicID, 0, len(p.im.TopicsByID))
	for id := range p.im.TopicsByID {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b TopicID) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		for _, pi := range p.im.TopicsByID[id].Partitions {
			if !slices.Contains(pi.Replicas, broker) {
				continue
			}
			if !fn(membership.Partition{TopicID: records.UUID(id), Partition: pi.Partition, Replicas: pi.Replicas, ISR: pi.ISR,
				Leader: pi.Leader, LeaderEpoch: pi.LeaderEpoch, PartitionEpoch: pi.PartitionEpoch}) {
				return
			}
		}
	}
}
