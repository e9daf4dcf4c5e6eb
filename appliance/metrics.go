package appliance

// Metrics: one metrics.Set per broker (never the package-global set, so
// several brokers can run in one process), served as Prometheus text on
// metrics.listener with /healthz and /readyz beside /metrics.
//
// Names follow ringbroker_<area>_<what>_<unit> and carry Kafka's meaning
// where Kafka has the metric:
//
//	ringbroker_topic_bytes_in_total{topic}        BrokerTopicMetrics BytesInPerSec (record batch bytes appended)
//	ringbroker_topic_messages_in_total{topic}     BrokerTopicMetrics MessagesInPerSec
//	ringbroker_topic_bytes_out_total{topic}       BrokerTopicMetrics BytesOutPerSec (record bytes in fetch responses)
//	ringbroker_request_total{api}                 RequestMetrics RequestsPerSec
//	ringbroker_request_errors_total{api,error}    RequestMetrics ErrorsPerSec (non-zero codes, top level and per partition)
//	ringbroker_request_duration_seconds{api}      RequestMetrics TotalTimeMs (dispatch to response ready), histogram
//	ringbroker_purgatory_produce_size             DelayedOperationPurgatory PurgatorySize, Produce (acks=all waiting for fdatasync)
//	ringbroker_purgatory_fetch_size               DelayedOperationPurgatory PurgatorySize, Fetch (parked long polls)
//	ringbroker_log_start_offset{topic,partition}  Log LogStartOffset
//	ringbroker_log_end_offset{topic,partition}    Log LogEndOffset
//	ringbroker_log_size_bytes{topic,partition}    Log Size
//	ringbroker_partitions_offline                 OfflinePartitionsCount (partitions offline after an I/O error)
//	ringbroker_metadata_log_offline               1 while a failed write keeps the metadata log from taking changes (appliance/metadata/log.go)
//	ringbroker_log_flush_duration_seconds         LogFlushStats LogFlushRateAndTimeMs (append to fdatasync done), histogram
//	ringbroker_log_flush_windows_total{shard}     group-commit windows; ..._fsyncs_total, ..._fsync_requests_total, ..._fsync_failures_total
//	ringbroker_shard_busy_seconds_total{shard}    loop time spent running tasks: rate() is the loop utilisation (0..1)
//	ringbroker_shard_tasks_total{shard}           closures run by the loop
//	ringbroker_shard_queue_depth{shard}           closures waiting in the inbox
//	ringbroker_shard_fetch_reads_total{shard}     fetch passes that read partitions on the shard; passes answered from partition views do not count (partition_view.go)
//	ringbroker_fetch_tail_reads_total             fetched partitions with records read from their log's published tail on the fetch's own goroutine (log.io.tail.reads)
//	ringbroker_fetch_tail_misses_total            fetched partitions with records the tail could not answer (read on the owner shard)
//	ringbroker_network_connections                open client connections
//	ringbroker_network_connections_rejected_total{reason}  connections closed at accept by max.connections / max.connections.per.ip (connlimit.go)
//	ringbroker_connection_warnings_suppressed_total      closed-connection warnings over the log's limit of 50 per 10 s (connwarn.go)
//	ringbroker_group_count{state}                 classic groups by state (GroupMetadataManager NumGroups*)
//	ringbroker_group_offsets_count                committed offsets held (GroupMetadataManager NumOffsets)
//	ringbroker_quota_throttle_time_seconds_total{type}  time Produce/Fetch responses were held by byte-rate quotas (ClientQuotaManager throttle-time, summed; quota.Manager)
//	ringbroker_quota_throttled_requests_total{type}     requests throttled by byte-rate quotas
//
// Everything that lives on a shard (offsets, group state) is read at scrape
// time with one Shard.Call per shard; counters bumped on the hot path are
// atomics behind pointers resolved without allocating.

import (
	"context"
	"errors"
	"fmt"
	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"io"
	"net"
	"net/http"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// latencyBuckets spans 100µs to about 13s, doubling.
var latencyBuckets = metrics.ExponentialBuckets(0.0001, 2, 18)

// brokerMetrics is one broker's metrics. Its methods are safe for
// concurrent use and are no-ops on a nil receiver.
type brokerMetrics struct {
	b   *Broker
	set *metrics.Set

	connsRejected    map[string]*metrics.Counter // by reason (connRejected)
	connWarnsDropped *metrics.Counter            // closed-connection warnings not logged (connwarn.go)

	apis [maxMetricAPIKey + 1]*apiMetrics

	topicsMu sync.RWMutex
	topics   map[string]*topicMetrics

	producePurgatory atomic.Int64
	fetchPurgatory   atomic.Int64
	tailReads        *metrics.Counter // fetch partitions read from their log's published tail (fetch_wait.go peekRun)
	tailMisses       *metrics.Counter // ... that the tail could not answer: read on the owner shard
	flushLatency     *metrics.PrometheusHistogram

	ready atomic.Bool
	srv   *http.Server
	ln    net.Listener
}

// maxMetricAPIKey bounds the API keys with per-API metrics (Kafka's keys
// are below 100).
const maxMetricAPIKey = 127

type apiMetrics struct {
	name     string
	requests *metrics.Counter
	latency  *metrics.PrometheusHistogram
}

type topicMetrics struct {
	bytesIn, messagesIn, bytesOut *metrics.Counter
}

func newBrokerMetrics(b *Broker, apis *wire.Table) *brokerMetrics {
	m := &brokerMetrics{b: b, set: metrics.NewSet(), topics: map[string]*topicMetrics{}, connsRejected: map[string]*metrics.Counter{}}
	for _, a := range apis.Sorted() {
		key := a.Key
		if key < 0 || int(key) > maxMetricAPIKey {
			continue
		}
		name := kmsg.NameForKey(key)
		if name == "" {
			name = fmt.Sprintf("Key%d", key)
		}
		m.apis[key] = &apiMetrics{
			name:     name,
			requests: m.set.NewCounter(fmt.Sprintf(`ringbroker_request_total{api=%q}`, name)),
			latency:  m.set.NewPrometheusHistogramExt(fmt.Sprintf(`ringbroker_request_duration_seconds{api=%q}`, name), latencyBuckets),
		}
	}
	m.flushLatency = m.set.NewPrometheusHistogramExt("ringbroker_log_flush_duration_seconds", latencyBuckets)
	m.set.NewGauge("ringbroker_purgatory_produce_size", func() float64 { return float64(m.producePurgatory.Load()) })
	m.set.NewGauge("ringbroker_purgatory_fetch_size", func() float64 { return float64(m.fetchPurgatory.Load()) })
	m.tailReads = m.set.NewCounter("ringbroker_fetch_tail_reads_total")
	m.tailMisses = m.set.NewCounter("ringbroker_fetch_tail_misses_total")
	m.set.NewGauge("ringbroker_network_connections", func() float64 {
		b.front.mu.Lock()
		defer b.front.mu.Unlock()
		return float64(len(b.front.conns))
	})
	m.connWarnsDropped = m.set.NewCounter("ringbroker_connection_warnings_suppressed_total")
	for _, r := range []string{"max_connections", "max_connections_per_ip"} {
		m.connsRejected[r] = m.set.NewCounter(fmt.Sprintf(`ringbroker_network_connections_rejected_total{reason=%q}`, r))
	}
	m.set.RegisterMetricsWriter(m.writeShardMetrics)
	return m
}

// connRejected counts a connection refused by a cap (connlimit.go).
func (m *brokerMetrics) connRejected(reason string) {
	if m == nil {
		return
	}
	m.connsRejected[reason].Inc()
}

// topic returns the counters of a topic, creating them on first use.
func (m *brokerMetrics) topic(name string) *topicMetrics {
	m.topicsMu.RLock()
	tm := m.topics[name]
	m.topicsMu.RUnlock()
	if tm != nil {
		return tm
	}
	m.topicsMu.Lock()
	defer m.topicsMu.Unlock()
	if tm = m.topics[name]; tm == nil {
		tm = &topicMetrics{
			bytesIn:    m.set.GetOrCreateCounter(fmt.Sprintf(`ringbroker_topic_bytes_in_total{topic=%q}`, name)),
			messagesIn: m.set.GetOrCreateCounter(fmt.Sprintf(`ringbroker_topic_messages_in_total{topic=%q}`, name)),
			bytesOut:   m.set.GetOrCreateCounter(fmt.Sprintf(`ringbroker_topic_bytes_out_total{topic=%q}`, name)),
		}
		m.topics[name] = tm
	}
	return tm
}

// produced counts an append of bytes and records to topic (on the shard).
func (m *brokerMetrics) produced(topic string, bytes, records int) {
	if m == nil {
		return
	}
	tm := m.topic(topic)
	tm.bytesIn.Add(bytes)
	tm.messagesIn.Add(records)
}

// fetched counts the record bytes of a fetch response and its partition
// errors; outs is what the last read pass filled.
func (m *brokerMetrics) fetched(outs []fetchTopicOut) {
	if m == nil {
		return
	}
	for i := range outs {
		var n int32
		for j := range outs[i].parts {
			p := &outs[i].parts[j]
			n += p.bytes
			if p.errCode != 0 {
				m.countError(1, p.errCode)
			}
		}
		if n > 0 {
			m.topic(outs[i].name).bytesOut.Add(int(n))
		}
	}
}

// enterProducePurgatory counts a produce with acks=all (-1) as waiting
// until the returned function is called; other acks are not counted.
func (m *brokerMetrics) enterProducePurgatory(acks int16) func() {
	if m == nil || acks != -1 {
		return func() {}
	}
	m.producePurgatory.Add(1)
	return m.leaveProducePurgatory
}

func (m *brokerMetrics) leaveProducePurgatory() { m.producePurgatory.Add(-1) }

// enterFetchPurgatory counts a fetch being served (reading, or parked until
// min.bytes arrive or max.wait.ms passes) until the returned function is
// called.
func (m *brokerMetrics) enterFetchPurgatory() func() {
	if m == nil {
		return func() {}
	}
	m.fetchPurgatory.Add(1)
	return m.leaveFetchPurgatory
}

// tailRead counts a partition read from its published tail (hit) or not.
func (m *brokerMetrics) tailRead(hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.tailReads.Inc()
	} else {
		m.tailMisses.Inc()
	}
}

func (m *brokerMetrics) leaveFetchPurgatory() { m.fetchPurgatory.Add(-1) }

// flushed records how long an fdatasync requested at start took to complete.
func (m *brokerMetrics) flushed(start time.Time) {
	if m != nil {
		m.flushLatency.UpdateDuration(start)
	}
}

// requestDone counts a request of API key whose response (a handler's
// result) is ready, start being when it was dispatched. It runs on the
// connection's writer goroutine.
func (m *brokerMetrics) requestDone(key int16, start time.Time, resp any) {
	if m == nil || key < 0 || int(key) > maxMetricAPIKey || m.apis[key] == nil {
		return
	}
	a := m.apis[key]
	a.requests.Inc()
	if !start.IsZero() {
		a.latency.UpdateDuration(start)
	}
	switch r := resp.(type) {
	case nil, *rawResponse:
		// acks=0, or a fetch (counted in fetched).
	case wire.Close:
		m.countError(key, kerr.UnknownServerError.Code)
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					m.countError(key, c)
				}
			}
		}
	case *wire.FixedVersion:
		m.countResponseErrors(key, r.Resp)
	case kmsg.Response:
		m.countResponseErrors(key, r)
	}
}

func (m *brokerMetrics) countError(key int16, code int16) {
	name := "UNKNOWN"
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			name = ke.Message
		}
	}
	api := fmt.Sprintf("Key%d", key)
	if int(key) <= maxMetricAPIKey && key >= 0 && m.apis[key] != nil {
		api = m.apis[key].name
	}
	m.set.GetOrCreateCounter(fmt.Sprintf(`ringbroker_request_errors_total{api=%q,error=%q}`, api, name)).Inc()
}

// errorCodeFields caches, per response type, whether it holds any
// ErrorCode field, so responses without one are skipped cheaply.
var errorCodeFields sync.Map // reflect.Type -> bool

// countResponseErrors counts every non-zero int16 ErrorCode field in resp,
// at any depth (top level, per topic, per partition, per group). Only the
// less frequent APIs get here; Produce and Fetch are counted directly.
func (m *brokerMetrics) countResponseErrors(key int16, resp kmsg.Response) {
	v := reflect.ValueOf(resp)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if has, ok := errorCodeFields.Load(v.Type()); ok && !has.(bool) {
		return
	}
	found := false
	walkErrorCodes(v, 0, func(code int16) {
		found = true
		if code != 0 {
			m.countError(key, code)
		}
	})
	errorCodeFields.Store(v.Type(), found)
}

func walkErrorCodes(v reflect.Value, depth int, fn func(int16)) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				fn(int16(f.Int()))
				continue
			}
			if f.Kind() == reflect.Slice || f.Kind() == reflect.Struct {
				walkErrorCodes(f, depth+1, fn)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		for i := 0; i < v.Len(); i++ {
			walkErrorCodes(v.Index(i), depth+1, fn)
		}
	}
}

// partitionStat is one partition's offsets, read on its shard at scrape time.
type partitionStat struct {
	topic      string
	partition  int32
	start, end int64
	size       int64
	offline    bool
}

// writeShardMetrics writes what lives on the shards. It runs at scrape
// time, never on a shard.
func (m *brokerMetrics) writeShardMetrics(w io.Writer) {
	b := m.b
	select {
	case <-b.life.closing:
		return
	default:
	}
	if !m.ready.Load() {
		return
	}
	var parts []partitionStat
	groupStates := map[string]int{}
	offsets := 0
	// Families are written whole, one after the other, as the text format wants.
	type shardStat struct {
		tasks      uint64
		busy       time.Duration
		depth      int
		fetchReads uint64
		prefetches uint64
		gc         nvme.GroupCommitStats
		cache      nvme.CacheStats // direct mode's block cache
		writes     nvme.WriteStats // its ring writes (uring engine)
		inFlight   int
		loop       ioring.LoopStats // the uring engine's loop and ring counters
		isRing     bool
	}
	shardStats := make([]shardStat, len(b.shards))
	for i, st := range b.shards {
		tasks, busy := st.loop.Stats()
		shardStats[i] = shardStat{tasks: tasks, busy: busy, depth: st.loop.QueueDepth(), fetchReads: st.fetchReads.Load(), prefetches: st.fetchPrefetches.Load(), gc: st.committer.Stats()}
		if st.loop.IsRing() || st.cache != nil {
			st.loop.Call(func() {
				shardStats[i].loop, shardStats[i].isRing = st.loop.RingStats()
				if st.cache != nil {
					shardStats[i].cache = st.cache.Stats()
					shardStats[i].writes = st.cache.WriteStats()
					shardStats[i].inFlight = st.cache.WritesInFlight()
				}
			})
		}
	}
	for _, f := range []struct {
		name string
		val  func(s shardStat) float64
	}{
		{"ringbroker_shard_busy_seconds_total", func(s shardStat) float64 { return s.busy.Seconds() }},
		{"ringbroker_shard_tasks_total", func(s shardStat) float64 { return float64(s.tasks) }},
		{"ringbroker_shard_queue_depth", func(s shardStat) float64 { return float64(s.depth) }},
		{"ringbroker_shard_fetch_reads_total", func(s shardStat) float64 { return float64(s.fetchReads) }},
		{"ringbroker_shard_fetch_prefetches_total", func(s shardStat) float64 { return float64(s.prefetches) }},
		{"ringbroker_log_cache_hits_total", func(s shardStat) float64 { return float64(s.cache.Hits) }},
		{"ringbroker_log_cache_misses_total", func(s shardStat) float64 { return float64(s.cache.Misses) }},
		{"ringbroker_log_cache_read_bytes_total", func(s shardStat) float64 { return float64(s.cache.ReadBytes) }},
		{"ringbroker_log_cache_ring_reads_total", func(s shardStat) float64 { return float64(s.cache.AsyncReads) }},
		{"ringbroker_log_cache_evictions_total", func(s shardStat) float64 { return float64(s.cache.Evictions) }},
		{"ringbroker_log_cache_buffer_allocs_total", func(s shardStat) float64 { return float64(s.cache.BufAllocs) }},
		{"ringbroker_log_cache_buffer_reuses_total", func(s shardStat) float64 { return float64(s.cache.BufReuses) }},
		{"ringbroker_log_cache_buffer_bad_releases_total", func(s shardStat) float64 { return float64(s.cache.BufBadReleases) }},
		{"ringbroker_log_cache_buffers_registered", func(s shardStat) float64 { return float64(s.cache.BufFixed) }},
		{"ringbroker_log_cache_ring_fixed_reads_total", func(s shardStat) float64 { return float64(s.cache.FixedReads) }},
		{"ringbroker_log_ring_write_rounds_total", func(s shardStat) float64 { return float64(s.writes.Rounds) }},
		{"ringbroker_log_ring_writes_total", func(s shardStat) float64 { return float64(s.writes.RingWrites) }},
		{"ringbroker_log_ring_fixed_writes_total", func(s shardStat) float64 { return float64(s.writes.FixedWrites) }},
		{"ringbroker_log_ring_writevs_total", func(s shardStat) float64 { return float64(s.writes.Writevs) }},
		{"ringbroker_log_ring_writes_in_flight", func(s shardStat) float64 { return float64(s.inFlight) }},
		{"ringbroker_log_ring_write_waits_total", func(s shardStat) float64 { return float64(s.writes.Waits) }},
		{"ringbroker_log_ring_write_pwrites_total", func(s shardStat) float64 { return float64(s.writes.Pwrites) }},
		{"ringbroker_log_zero_fills_total", func(s shardStat) float64 { return float64(s.writes.ZeroFills) }},
		{"ringbroker_log_zero_fill_bytes_total", func(s shardStat) float64 { return float64(s.writes.ZeroFillBytes) }},
		{"ringbroker_log_zero_fill_waits_total", func(s shardStat) float64 { return float64(s.writes.ZeroFillWaits) }},
		{"ringbroker_log_flush_windows_total", func(s shardStat) float64 { return float64(s.gc.Flushes) }},
		{"ringbroker_log_fsyncs_total", func(s shardStat) float64 { return float64(s.gc.Syncs) }},
		{"ringbroker_log_fsync_requests_total", func(s shardStat) float64 { return float64(s.gc.Requests) }},
		{"ringbroker_log_fsync_failures_total", func(s shardStat) float64 { return float64(s.gc.SyncFails) }},
	} {
		for i, s := range shardStats {
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
		for i, s := range shardStats {
			if s.isRing {
				fmt.Fprintf(w, "%s{shard=\"%d\"} %d\n", f.name, i, f.val(s.loop))
			}
		}
	}
	for _, st := range b.shards {
		st.loop.Call(func() {
			for _, p := range st.parts {
				ps := partitionStat{topic: p.topic, partition: p.index, start: -1, end: -1, offline: p.offline != nil}
				if p.log != nil {
					ps.start, ps.end, ps.size = p.log.LogStartOffset(), p.log.LogEndOffset(), p.log.Size()
				}
				parts = append(parts, ps)
			}
			if gc := b.coord.groups; gc != nil {
				for _, op := range gc.parts {
					if op.st != st {
						continue
					}
					offsets += op.mgr.CountGroups(groupStates)
				}
			}
		})
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topic != parts[j].topic {
			return parts[i].topic < parts[j].topic
		}
		return parts[i].partition < parts[j].partition
	})
	offline := 0
	for _, p := range parts {
		fmt.Fprintf(w, "ringbroker_log_start_offset{topic=%q,partition=\"%d\"} %d\n", p.topic, p.partition, p.start)
		if p.offline {
			offline++
		}
	}
	for _, p := range parts {
		fmt.Fprintf(w, "ringbroker_log_end_offset{topic=%q,partition=\"%d\"} %d\n", p.topic, p.partition, p.end)
	}
	for _, p := range parts {
		fmt.Fprintf(w, "ringbroker_log_size_bytes{topic=%q,partition=\"%d\"} %d\n", p.topic, p.partition, p.size)
	}
	fmt.Fprintf(w, "ringbroker_partitions_offline %d\n", offline)
	if b.ctl.meta != nil {
		mo := 0
		if b.ctl.meta.Offline() {
			mo = 1
		}
		fmt.Fprintf(w, "ringbroker_metadata_log_offline %d\n", mo)
	}
	fmt.Fprintf(w, "ringbroker_partitions %d\n", len(parts))
	if b.coord.groups != nil {
		for _, s := range group.StateNames() {
			fmt.Fprintf(w, "ringbroker_group_count{state=%q} %d\n", s, groupStates[s])
		}
		fmt.Fprintf(w, "ringbroker_group_offsets_count %d\n", offsets)
	}
}

// metricsEnabled reports whether addr asks for a metrics listener.
func metricsEnabled(addr string) bool { return addr != "" && addr != "none" }

// startHTTP serves /metrics, /healthz and /readyz on cfg.MetricsListener.
// A listener that cannot be bound is logged, not fatal: the data path runs
// on without metrics.
func (m *brokerMetrics) startHTTP() {
	if m == nil || !metricsEnabled(m.b.cfg.MetricsListener) {
		return
	}
	ln, err := net.Listen("tcp", m.b.cfg.MetricsListener)
	if err != nil {
		m.b.log.Error("cannot listen on metrics.listener; serving without metrics", "metrics.listener", m.b.cfg.MetricsListener, "err", err)
		return
	}
	// # HELP and # TYPE lines, so Prometheus types the histograms.
	metrics.ExposeMetadata(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.set.WritePrometheus(w)
		metrics.WriteProcessMetrics(w)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-m.b.life.closing:
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
		default:
			fmt.Fprintln(w, "ok")
		}
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !m.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	m.ln = ln
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.b.log.Error("metrics server failed", "err", err)
		}
	}()
	m.b.log.Info("metrics listening", "addr", ln.Addr().String())
}

// MetricsAddr is the bound metrics listener address, or nil when metrics
// are disabled or could not be bound.
func (b *Broker) MetricsAddr() net.Addr {
	if b.metrics == nil || b.metrics.ln == nil {
		return nil
	}
	return b.metrics.ln.Addr()
}

// stopHTTP marks the broker not ready and stops the metrics server, waiting
// for scrapes in flight (they read the shards, which must still run).
func (m *brokerMetrics) stopHTTP() {
	if m == nil {
		return
	}
	m.ready.Store(false)
	if m.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil {
		m.srv.Close()
	}
}

// start marks the broker ready and starts the metrics server; Start calls
// it last.
func (m *brokerMetrics) start() {
	if m == nil {
		return
	}
	m.ready.Store(true)
	m.startHTTP()
}
