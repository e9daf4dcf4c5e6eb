package metrics

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/nvme"
)

// Source is what the metrics read of the broker at scrape time.
type Source interface {
	// Connections returns the open client connections.
	Connections() int
	// Stats reads the shards (one call into each) and returns what they
	// hold. It runs on the scraping goroutine, never on a shard.
	Stats() Stats
}

// Stats is what lives on the shards, read at scrape time.
type Stats struct {
	Shards     []ShardStat     // by shard index
	Partitions []PartitionStat // any order: WriteShardMetrics sorts them
	// MetadataLog is set when the broker has a metadata log;
	// MetadataOffline when a failed write keeps it from taking changes.
	MetadataLog, MetadataOffline bool
	// Groups are the classic groups by state, every state in the order
	// to write; nil without a group coordinator.
	Groups []GroupCount
	// GroupOffsets is the committed offsets the coordinator holds.
	GroupOffsets int
}

// ShardStat is one shard's counters.
type ShardStat struct {
	Tasks          uint64        // closures run by the loop
	Busy           time.Duration // loop time spent running tasks
	Depth          int           // closures waiting in the inbox
	FetchReads     uint64        // fetch passes that read partitions on the shard
	Prefetches     uint64        // fetch prefetches run on the shard
	GroupCommit    nvme.GroupCommitStats
	Cache          nvme.CacheStats  // direct mode's block cache
	Writes         nvme.WriteStats  // its ring writes (uring engine)
	WritesInFlight int              // ring writes submitted and not complete
	Loop           ioring.LoopStats // the uring engine's loop and ring counters
	IsRing         bool             // Loop is set: the shard runs the uring engine
}

// PartitionStat is one partition's offsets (-1 when its log is closed).
type PartitionStat struct {
	Topic      string
	Partition  int32
	Start, End int64
	Size       int64
	Offline    bool // offline after an I/O error
}

// GroupCount is the number of classic groups in a state.
type GroupCount struct {
	State string
	Count int
}

// WriteShardMetrics writes what lives on the shards, in Prometheus text.
// It runs at scrape time, never on a shard; it writes nothing while the
// broker is not ready (Start) or is closing.
func (m *Metrics) WriteShardMetrics(w io.Writer) {
	if m == nil || m.o.Source == nil {
		return
	}
	select {
	case <-m.o.Closing:
		return
	default:
	}
	if !m.ready.Load() {
		return
	}
	st := m.o.Source.Stats()
	// Families are written whole, one after the other, as the text format wants.
	for _, f := range []struct {
		name string
		val  func(s ShardStat) float64
	}{
		{"ringbroker_shard_busy_seconds_total", func(s ShardStat) float64 { return s.Busy.Seconds() }},
		{"ringbroker_shard_tasks_total", func(s ShardStat) float64 { return float64(s.Tasks) }},
		{"ringbroker_shard_queue_depth", func(s ShardStat) float64 { return float64(s.Depth) }},
		{"ringbroker_shard_fetch_reads_total", func(s ShardStat) float64 { return float64(s.FetchReads) }},
		{"ringbroker_shard_fetch_prefetches_total", func(s ShardStat) float64 { return float64(s.Prefetches) }},
		{"ringbroker_log_cache_hits_total", func(s ShardStat) float64 { return float64(s.Cache.Hits) }},
		{"ringbroker_log_cache_misses_total", func(s ShardStat) float64 { return float64(s.Cache.Misses) }},
		{"ringbroker_log_cache_read_bytes_total", func(s ShardStat) float64 { return float64(s.Cache.ReadBytes) }},
		{"ringbroker_log_cache_ring_reads_total", func(s ShardStat) float64 { return float64(s.Cache.AsyncReads) }},
		{"ringbroker_log_cache_evictions_total", func(s ShardStat) float64 { return float64(s.Cache.Evictions) }},
		{"ringbroker_log_cache_buffer_allocs_total", func(s ShardStat) float64 { return float64(s.Cache.BufAllocs) }},
		{"ringbroker_log_cache_buffer_reuses_total", func(s ShardStat) float64 { return float64(s.Cache.BufReuses) }},
		{"ringbroker_log_cache_buffer_bad_releases_total", func(s ShardStat) float64 { return float64(s.Cache.BufBadReleases) }},
		{"ringbroker_log_cache_buffers_registered", func(s ShardStat) float64 { return float64(s.Cache.BufFixed) }},
		{"ringbroker_log_cache_ring_fixed_reads_total", func(s ShardStat) float64 { return float64(s.Cache.FixedReads) }},
		{"ringbroker_log_ring_write_rounds_total", func(s ShardStat) float64 { return float64(s.Writes.Rounds) }},
		{"ringbroker_log_ring_writes_total", func(s ShardStat) float64 { return float64(s.Writes.RingWrites) }},
		{"ringbroker_log_ring_fixed_writes_total", func(s ShardStat) float64 { return float64(s.Writes.FixedWrites) }},
		{"ringbroker_log_ring_writevs_total", func(s ShardStat) float64 { return float64(s.Writes.Writevs) }},
		{"ringbroker_log_ring_writes_in_flight", func(s ShardStat) float64 { return float64(s.WritesInFlight) }},
		{"ringbroker_log_ring_write_waits_total", func(s ShardStat) float64 { return float64(s.Writes.Waits) }},
		{"ringbroker_log_ring_write_pwrites_total", func(s ShardStat) float64 { return float64(s.Writes.Pwrites) }},
		{"ringbroker_log_zero_fills_total", func(s ShardStat) float64 { return float64(s.Writes.ZeroFills) }},
		{"ringbroker_log_zero_fill_bytes_total", func(s ShardStat) float64 { return float64(s.Writes.ZeroFillBytes) }},
		{"ringbroker_log_zero_fill_waits_total", func(s ShardStat) float64 { return float64(s.Writes.ZeroFillWaits) }},
		{"ringbroker_log_flush_windows_total", func(s ShardStat) float64 { return float64(s.GroupCommit.Flushes) }},
		{"ringbroker_log_fsyncs_total", func(s ShardStat) float64 { return float64(s.GroupCommit.Syncs) }},
		{"ringbroker_log_fsync_requests_total", func(s ShardStat) float64 { return float64(s.GroupCommit.Requests) }},
		{"ringbroker_log_fsync_failures_total", func(s ShardStat) float64 { return float64(s.GroupCommit.SyncFails) }},
	} {
		for i, s := range st.Shards {
			fmt.Fprintf(w, "%s{shard=\"%d\"} %g\n", f.name, i, f.val(s))
		}
	}
	// The uring engine's loops: how well they batch (SQEs and CQEs per
	// enter) and how often they sleep, are woken and pass through the Go
	// scheduler. Ring shards only.
	for _, f := range []struct {
		name string
		val  func(s ioring.LoopStats) uint64
	}{
		{"ringbroker_shard_ring_enters_total", func(s ioring.LoopStats) uint64 { return s.Ring.Enters }},
		{"ringbroker_shard_ring_sqes_submitted_total", func(s ioring.LoopStats) uint64 { return s.Ring.Submitted }},
		{"ringbroker_shard_ring_cqes_total", func(s ioring.LoopStats) uint64 { return s.Ring.Completions }},
		{"ringbroker_shard_ring_cq_overflows_total", func(s ioring.LoopStats) uint64 { return s.Ring.Overflows }},
		{"ringbroker_shard_ring_cqes_dropped_total", func(s ioring.LoopStats) uint64 { return uint64(s.Ring.Dropped) }},
		{"ringbroker_shard_loop_sleeps_total", func(s ioring.LoopStats) uint64 { return s.Sleeps }},
		{"ringbroker_shard_loop_wakeups_total", func(s ioring.LoopStats) uint64 { return s.Wakeups }},
		{"ringbroker_shard_loop_yields_total", func(s ioring.LoopStats) uint64 { return s.Yields }},
	} {
		for i, s := range st.Shards {
			if s.IsRing {
				fmt.Fprintf(w, "%s{shard=\"%d\"} %d\n", f.name, i, f.val(s.Loop))
			}
		}
	}
	parts := st.Partitions
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Topic != parts[j].Topic {
			return parts[i].Topic < parts[j].Topic
		}
		return parts[i].Partition < parts[j].Partition
	})
	offline := 0
	for _, p := range parts {
		fmt.Fprintf(w, "ringbroker_log_start_offset{topic=%q,partition=\"%d\"} %d\n", p.Topic, p.Partition, p.Start)
		if p.Offline {
			offline++
		}
	}
	for _, p := range parts {
		fmt.Fprintf(w, "ringbroker_log_end_offset{topic=%q,partition=\"%d\"} %d\n", p.Topic, p.Partition, p.End)
	}
	for _, p := range parts {
		fmt.Fprintf(w, "ringbroker_log_size_bytes{topic=%q,partition=\"%d\"} %d\n", p.Topic, p.Partition, p.Size)
	}
	fmt.Fprintf(w, "ringbroker_partitions_offline %d\n", offline)
	if st.MetadataLog {
		mo := 0
		if st.MetadataOffline {
			mo = 1
		}
		fmt.Fprintf(w, "ringbroker_metadata_log_offline %d\n", mo)
	}
	fmt.Fprintf(w, "ringbroker_partitions %d\n", len(parts))
	if st.Groups != nil {
		for _, g := range st.Groups {
			fmt.Fprintf(w, "ringbroker_group_count{state=%q} %d\n", g.State, g.Count)
		}
		fmt.Fprintf(w, "ringbroker_group_offsets_count %d\n", st.GroupOffsets)
	}
}
