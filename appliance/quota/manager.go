package quota

// Enforcement of byte-rate quotas (KIP-13, KIP-55): producer_byte_rate on
// the bytes of a Produce request's records, consumer_byte_rate on the
// record bytes of a Fetch response. Each request is counted in the rate of
// the quota that applies to it (Resolve's tags: the request's user,
// ANONYMOUS without SASL authentication, and its client id). A request that
// takes the rate over the quota gets a throttle time, which the broker
// writes into its response's throttle_time_ms and holds the response that
// long before it is written, as Kafka did before KIP-219 (the broker's
// produce and fetch paths do that part).

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Type is a byte-rate quota kind (Kafka's ClientQuotaType).
type Type int

// The byte-rate quota types.
const (
	Produce Type = iota // producer_byte_rate
	Fetch               // consumer_byte_rate
	numTypes
)

var typeKeys = [numTypes]string{ProducerByteRate, ConsumerByteRate}
var typeNames = [numTypes]string{"Produce", "Fetch"}

// idleExpiry forgets a rate unused this long (Kafka expires quota sensors
// after an hour without requests).
const idleExpiry = time.Hour

// Manager keeps the sampled rates per quota type and tags. Safe for
// concurrent use: every connection's requests record into it.
type Manager struct {
	cfg Config

	// cur is the quota table of the metadata image in force (SetValues).
	cur atomic.Pointer[table]

	mu        sync.Mutex
	rates     [numTypes]map[Tags]*sampledRate
	lastSweep int64

	throttleSeconds [numTypes]*metrics.FloatCounter
	throttled       [numTypes]*metrics.Counter
}

// NewManager samples rates as cfg says (ConfigFromProps, parsed once at
// startup by the broker; both fields must be >= 1) and registers the
// throttle metrics in set (nil: no metrics):
//
//	ringbroker_quota_throttle_time_seconds_total{type}  time responses were held (Kafka's throttle-time, summed)
//	ringbroker_quota_throttled_requests_total{type}     requests that were throttled
func NewManager(cfg Config, set *metrics.Set) (*Manager, error) {
	if cfg.WindowNum < 1 || cfg.WindowMs < 1 {
		return nil, fmt.Errorf("cannot create the quota manager: quota.window.num (%d) and quota.window.size.seconds (%d ms) must be >= 1", cfg.WindowNum, cfg.WindowMs)
	}
	q := &Manager{cfg: cfg}
	for t := range q.rates {
		q.rates[t] = map[Tags]*sampledRate{}
		if set != nil {
			q.throttleSeconds[t] = set.NewFloatCounter(`ringbroker_quota_throttle_time_seconds_total{type="` + typeNames[t] + `"}`)
			q.throttled[t] = set.NewCounter(`ringbroker_quota_throttled_requests_total{type="` + typeNames[t] + `"}`)
		}
	}
	return q, nil
}

// Record counts bytes of a request from user and clientID against its
// quota of type t in vals, and returns how long to throttle it (0 under
// quota or with no quota).
func (q *Manager) Record(vals Values, t Type, user, clientID string, bytes int64, now time.Time) time.Duration {
	limit, tags, ok := vals.Resolve(typeKeys[t], user, clientID)
	if !ok {
		return 0
	}
	nowMs := now.UnixMilli()
	q.mu.Lock()
	s := q.rates[t][tags]
	if s == nil {
		s = newSampledRate(q.cfg)
		q.rates[t][tags] = s
	}
	d := s.recordAndThrottle(nowMs, float64(bytes), limit, q.cfg.maxThrottle())
	if nowMs-q.lastSweep > int64(time.Minute/time.Millisecond) {
		q.sweep(nowMs)
	}
	q.mu.Unlock()
	if d > 0 && q.throttled[t] != nil {
		q.throttled[t].Inc()
		q.throttleSeconds[t].Add(d.Seconds())
	}
	return d
}

// sweep drops rates idle for idleExpiry. q.mu is held.
func (q *Manager) sweep(nowMs int64) {
	q.lastSweep = nowMs
	for t := range q.rates {
		for k, s := range q.rates[t] {
			if nowMs-s.lastMs > int64(idleExpiry/time.Millisecond) {
				delete(q.rates[t], k)
			}
		}
	}
}

// ThrottleMillis converts a throttle time for throttle_time_ms: at least 1
// for any positive time, at most the int32 maximum.
func ThrottleMillis(d time.Duration) int32 {
	ms := d.Milliseconds()
	if ms < 1 && d > 0 {
		ms = 1
	}
	return int32(min(ms, 1<<31-1))
}
