package metrics

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// latencyBuckets spans 100µs to about 13s, doubling.
var latencyBuckets = vm.ExponentialBuckets(0.0001, 2, 18)

// MaxAPIKey bounds the API keys with per-API metrics (Kafka's keys are
// below 100).
const MaxAPIKey = 127

// Options configure a broker's Metrics.
type Options struct {
	// Listener is metrics.listener (host:port); "" or "none" serves
	// nothing (Enabled).
	Listener string
	// APIKeys are the API keys with per-API request metrics; keys outside
	// 0..MaxAPIKey are ignored.
	APIKeys []int16
	// Source reads the shards at scrape time; nil writes no shard metrics.
	Source Source
	// Closing is closed when the broker begins shutting down: scrapes
	// stop reading the shards and /healthz answers 503.
	Closing <-chan struct{}
	Log     *slog.Logger
}

// Metrics is one broker's metrics. Its methods are safe for concurrent use
// and are no-ops on a nil receiver.
type Metrics struct {
	o   Options
	set *vm.Set

	connsRejected    map[string]*vm.Counter // by reason (ConnRejected)
	connWarnsDropped *vm.Counter            // closed-connection warnings not logged

	apis [MaxAPIKey + 1]*apiMetrics

	topicsMu sync.RWMutex
	topics   map[string]*topicMetrics

	producePurgatory atomic.Int64
	fetchPurgatory   atomic.Int64
	tailReads        *vm.Counter // fetch partitions read from their log's published tail
	tailMisses       *vm.Counter // ... that the tail could not answer: read on the owner shard
	flushLatency     *vm.PrometheusHistogram

	// errFields caches, per response type, whether it holds any ErrorCode
	// field, so responses without one are skipped cheaply
	// (countResponseErrors).
	errFields sync.Map // reflect.Type -> bool

	ready atomic.Bool
	srv   *http.Server
	ln    net.Listener
}

type apiMetrics struct {
	name     string
	requests *vm.Counter
	latency  *vm.PrometheusHistogram
}

type topicMetrics struct {
	bytesIn, messagesIn, bytesOut *vm.Counter
}

// New returns the metrics of a broker, not yet served (Start).
func New(o Options) *Metrics {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{o: o, set: vm.NewSet(), topics: map[string]*topicMetrics{}, connsRejected: map[string]*vm.Counter{}}
	for _, key := range o.APIKeys {
		if key < 0 || int(key) > MaxAPIKey {
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
		if o.Source == nil {
			return 0
		}
		return float64(o.Source.Connections())
	})
	m.connWarnsDropped = m.set.NewCounter("ringbroker_connection_warnings_suppressed_total")
	for _, r := range []string{"max_connections", "max_connections_per_ip"} {
		m.connsRejected[r] = m.set.NewCounter(fmt.Sprintf(`ringbroker_network_connections_rejected_total{reason=%q}`, r))
	}
	m.set.RegisterMetricsWriter(m.WriteShardMetrics)
	return m
}

// Set is the broker's metric set, for the parts that create their own
// metrics (quotas, the log cleaner); nil on a nil receiver.
func (m *Metrics) Set() *vm.Set {
	if m == nil {
		return nil
	}
	return m.set
}

// ConnRejected counts a connection refused at accept by a cap; reason is
// max_connections or max_connections_per_ip.
func (m *Metrics) ConnRejected(reason string) {
	if m == nil {
		return
	}
	m.connsRejected[reason].Inc()
}

// RejectedConnections returns the connections refused for reason so far.
func (m *Metrics) RejectedConnections(reason string) uint64 {
	if m == nil || m.connsRejected[reason] == nil {
		return 0
	}
	return m.connsRejected[reason].Get()
}

// ConnWarningSuppressed counts a closed-connection warning the log's rate
// limit dropped.
func (m *Metrics) ConnWarningSuppressed() {
	if m != nil {
		m.connWarnsDropped.Inc()
	}
}

// SuppressedConnWarnings returns the warnings dropped so far.
func (m *Metrics) SuppressedConnWarnings() uint64 {
	if m == nil {
		return 0
	}
	return m.connWarnsDropped.Get()
}

// topic returns the counters of a topic, creating them on first use.
func (m *Metrics) topic(name string) *topicMetrics {
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

// Produced counts an append of bytes and records to topic (on the shard).
func (m *Metrics) Produced(topic string, bytes, records int) {
	if m == nil {
		return
	}
	tm := m.topic(topic)
	tm.bytesIn.Add(bytes)
	tm.messagesIn.Add(records)
}

// FetchedBytes counts n record bytes of topic sent in a fetch response.
func (m *Metrics) FetchedBytes(topic string, n int) {
	if m == nil {
		return
	}
	m.topic(topic).bytesOut.Add(n)
}

// TopicBytesOut returns the record bytes of topic sent in fetch responses
// so far.
func (m *Metrics) TopicBytesOut(topic string) uint64 {
	if m == nil {
		return 0
	}
	return m.topic(topic).bytesOut.Get()
}

// AddProducePurgatory adds delta to the produces with acks=all waiting
// for their fdatasync: +1 when one starts waiting, -1 when it is answered.
func (m *Metrics) AddProducePurgatory(delta int64) {
	if m != nil {
		m.producePurgatory.Add(delta)
	}
}

// AddFetchPurgatory adds delta to the fetches being served (reading, or
// parked until min.bytes arrive or max.wait.ms passes).
func (m *Metrics) AddFetchPurgatory(delta int64) {
	if m != nil {
		m.fetchPurgatory.Add(delta)
	}
}

// FetchPurgatory returns the fetches being served now.
func (m *Metrics) FetchPurgatory() int64 {
	if m == nil {
		return 0
	}
	return m.fetchPurgatory.Load()
}

// TailRead counts a fetched partition read from its log's published tail
// (hit) or that the tail could not answer.
func (m *Metrics) TailRead(hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.tailReads.Inc()
	} else {
		m.tailMisses.Inc()
	}
}

// TailReads returns the tail hits and misses so far.
func (m *Metrics) TailReads() (hits, misses uint64) {
	if m == nil {
		return 0, 0
	}
	return m.tailReads.Get(), m.tailMisses.Get()
}

// Flushed records how long an fdatasync requested at start took to
// complete.
func (m *Metrics) Flushed(start time.Time) {
	if m != nil {
		m.flushLatency.UpdateDuration(start)
	}
}
