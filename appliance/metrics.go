package appliance

// The broker's metrics live in package appliance/metrics (names, the
// request and topic counters, the HTTP endpoint); metricsSource reads the
// shards for it at scrape time.

import (
	"net"

	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/metrics"
	"github.com/ringbroker/ringbroker/appliance/wire"
)

// newBrokerMetrics returns b's metrics, with per-API metrics for the APIs
// of apis.
func newBrokerMetrics(b *Broker, apis *wire.Table) *metrics.Metrics {
	var keys []int16
	for _, a := range apis.Sorted() {
		keys = append(keys, a.Key)
	}
	return metrics.New(metrics.Options{Listener: b.cfg.MetricsListener, APIKeys: keys, Source: metricsSource{b},
		Closing: b.life.closing, Log: b.log})
}

// metricsEnabled reports whether addr asks for a metrics listener.
func metricsEnabled(addr string) bool { return metrics.Enabled(addr) }

// MetricsAddr is the bound metrics listener address, or nil when metrics
// are disabled or could not be bound.
func (b *Broker) MetricsAddr() net.Addr { return b.metrics.Addr() }

// countFetched counts the record bytes of a fetch response and its
// partition errors; outs is what the last read pass filled.
func countFetched(m *metrics.Metrics, outs []fetchTopicOut) {
	if m == nil {
		return
	}
	for i := range outs {
		var n int32
		for j := range outs[i].parts {
			p := &outs[i].parts[j]
			n += p.bytes
			if p.errCode != 0 {
				m.CountError(1, p.errCode)
			}
		}
		if n > 0 {
			m.FetchedBytes(outs[i].name, int(n))
		}
	}
}

// metricsSource is the broker as metrics.Source.
type metricsSource struct{ b *Broker }

func (s metricsSource) Connections() int {
	s.b.front.mu.Lock()
	defer s.b.front.mu.Unlock()
	return len(s.b.front.conns)
}

// Stats reads every shard: its loop and storage counters, then its
// partitions' offsets and its groups, one Shard.Call each.
func (s metricsSource) Stats() metrics.Stats {
	b := s.b
	out := metrics.Stats{Shards: make([]metrics.ShardStat, len(b.shards))}
	for i, st := range b.shards {
		tasks, busy := st.loop.Stats()
		out.Shards[i] = metrics.ShardStat{Tasks: tasks, Busy: busy, Depth: st.loop.QueueDepth(), FetchReads: st.fetchReads.Load(),
			Prefetches: st.fetchPrefetches.Load(), GroupCommit: st.committer.Stats()}
		if st.loop.IsRing() || st.cache != nil {
			st.loop.Call(func() {
				ss := &out.Shards[i]
				ss.Loop, ss.IsRing = st.loop.RingStats()
				if st.cache != nil {
					ss.Cache, ss.Writes, ss.WritesInFlight = st.cache.Stats(), st.cache.WriteStats(), st.cache.WritesInFlight()
				}
			})
		}
	}
	groupStates := map[string]int{}
	for _, st := range b.shards {
		st.loop.Call(func() {
			for _, p := range st.parts {
				ps := metrics.PartitionStat{Topic: p.topic, Partition: p.index, Start: -1, End: -1, Offline: p.offline != nil}
				if p.log != nil {
					ps.Start, ps.End, ps.Size = p.log.LogStartOffset(), p.log.LogEndOffset(), p.log.Size()
				}
				out.Partitions = append(out.Partitions, ps)
			}
			if gc := b.coord.groups; gc != nil {
				for _, op := range gc.parts {
					if op.st == st {
						out.GroupOffsets += op.mgr.CountGroups(groupStates)
					}
				}
			}
		})
	}
	if b.ctl.meta != nil {
		out.MetadataLog, out.MetadataOffline = true, b.ctl.meta.Offline()
	}
	if b.coord.groups != nil {
		for _, st := range group.StateNames() {
			out.Groups = append(out.Groups, metrics.GroupCount{State: st, Count: groupStates[st]})
		}
	}
	return out
}
