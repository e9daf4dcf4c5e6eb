package membership

import (
	"slices"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// NoLeader is a partition's leader while it has none (Kafka's -1:
// clients get LEADER_NOT_AVAILABLE).
const NoLeader int32 = -1

// Partition is the part of a partition's state that leadership changes
// read.
type Partition struct {
	TopicID        records.UUID
	Partition      int32
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

// PartitionTable is what the registry needs of the partition table (the
// metadata image satisfies it).
type PartitionTable interface {
	// PartitionsOf calls fn with every partition that has broker among its
	// replicas (so every partition it leads or is in the ISR of), in an
	// order that is the same on every controller, until fn returns false.
	// fn does not keep the partition's slices.
	PartitionsOf(broker int32, fn func(Partition) bool)
}

// leadsAny reports whether broker leads a partition.
func leadsAny(parts PartitionTable, broker int32) bool {
	if parts == nil {
		return false
	}
	found := false
	parts.PartitionsOf(broker, func(p Partition) bool {
		found = p.Leader == broker
		return !found
	})
	return found
}

// acceptableLeader reports whether broker id may be elected: registered,
// unfenced and not in controlled shutdown (Kafka's isActive), and not
// except.
func (r *Registry) acceptableLeader(id, except int32) bool {
	b := r.brokers[id]
	return id != except && b != nil && b.usable()
}

// electLeader returns the first replica, in replica order, that is in isr
// and acceptable, or NoLeader (Kafka's election without unclean leader
// election).
func electLeader(p Partition, isr []int32, acceptable func(int32) bool) int32 {
	for _, id := range p.Replicas {
		if slices.Contains(isr, id) && acceptable(id) {
			return id
		}
	}
	return NoLeader
}

// removeLeadership returns the PartitionChangeRecords that take broker out
// of leadership and ISRs, for a broker being fenced, shut down or
// unregistered (Kafka's ReplicationControlManager.handleBrokerFenced): in
// every partition that has it in its ISR, it leaves the ISR unless it is
// the last member (an ISR is never empty: the last member is kept so that
// it can lead again when it returns), and where it leads, the first
// acceptable ISR member in replica order becomes leader, or none.
func (r *Registry) removeLeadership(parts PartitionTable, broker int32) []records.Record {
	if parts == nil {
		return nil
	}
	var out []records.Record
	parts.PartitionsOf(broker, func(p Partition) bool {
		isr := p.ISR
		if slices.Contains(isr, broker) && len(isr) > 1 {
			isr = slices.DeleteFunc(slices.Clone(isr), func(id int32) bool { return id == broker })
		}
		leader := p.Leader
		if leader == broker {
			leader = electLeader(p, isr, func(id int32) bool { return r.acceptableLeader(id, broker) })
		}
		if rec := changeRecord(p, isr, leader); rec != nil {
			out = append(out, rec)
		}
		return true
	})
	return out
}

// restoreLeadership returns the PartitionChangeRecords that give leaderless
// partitions a leader now that broker is unfenced (Kafka's
// handleBrokerUnfenced): each partition of broker with no leader elects the
// first acceptable ISR member in replica order, broker counting as
// acceptable. With one replica that is broker itself.
func (r *Registry) restoreLeadership(parts PartitionTable, broker int32) []records.Record {
	if parts == nil {
		return nil
	}
	var out []records.Record
	parts.PartitionsOf(broker, func(p Partition) bool {
		if p.Leader != NoLeader {
			return true
		}
		leader := electLeader(p, p.ISR, func(id int32) bool { return id == broker || r.acceptableLeader(id, NoLeader) })
		if rec := changeRecord(p, p.ISR, leader); rec != nil {
			out = append(out, rec)
		}
		return true
	})
	return out
}

// changeRecord returns the PartitionChangeRecord that takes p to isr and
// leader, or nil when neither changes.
func changeRecord(p Partition, isr []int32, leader int32) *records.PartitionChangeRecord {
	isrChanged := !slices.Equal(isr, p.ISR)
	if !isrChanged && leader == p.Leader {
		return nil
	}
	rec := records.NewPartitionChangeRecord(p.TopicID, p.Partition)
	if isrChanged {
		rec.ISR = slices.Clone(isr)
	}
	if leader != p.Leader {
		rec.Leader = leader
	}
	return rec
}
