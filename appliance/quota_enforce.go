package appliance

// Enforcement of byte-rate quotas (KIP-13, KIP-55): producer_byte_rate on
// the bytes of a Produce request's records, consumer_byte_rate on the
// record bytes of a Fetch response. Each request is counted in the rate of
// the quota that applies to it (resolveQuota's tags: user ANONYMOUS, as
// every connection is unauthenticated today, and the request's client id).
// A request that takes the rate over the quota gets a throttle time in its
// response's throttle_time_ms, and the response is held that long before it
// is written, as Kafka did before KIP-219. Clients of KIP-219 versions
// (Produce v6+, Fetch v8+) also wait the throttle time after the response,
// so they are held back somewhat more than the quota asks; Kafka instead
// answers at once and stops reading the connection.
//
// With no byte-rate quota set anywhere the cost on the request path is one
// test of the image's quotaKinds, already loaded by the handler.

import (
	"encoding/binary"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaUser is the user name a connection's quotas are resolved with: the
// SASL-authenticated user, or ANONYMOUS (Kafka's User:ANONYMOUS) on
// PLAINTEXT listeners.
func quotaUser(c *conn) string {
	return strings.TrimPrefix(c.Principal(), "User:")
}

// quotaType is a byte-rate quota kind (Kafka's ClientQuotaType).
type quotaType int

const (
	quotaProduce quotaType = iota
	quotaFetch
	numQuotaTypes
)

var quotaTypeKeys = [numQuotaTypes]string{quotaProducerByteRate, quotaConsumerByteRate}
var quotaTypeNames = [numQuotaTypes]string{"Produce", "Fetch"}

// quotaIdleExpiry forgets a rate unused this long (Kafka expires quota
// sensors after an hour without requests).
const quotaIdleExpiry = time.Hour

// quotaManager keeps the sampled rates per quota type and tags.
type quotaManager struct {
	cfg quotaConfig

	mu        sync.Mutex
	rates     [numQuotaTypes]map[quotaTags]*sampledRate
	lastSweep int64

	throttleSeconds [numQuotaTypes]*metrics.FloatCounter
	throttled       [numQuotaTypes]*metrics.Counter
}

// newQuotaManager reads the sampling config from props and registers the
// throttle metrics in set (nil: no metrics):
//
//	ringbroker_quota_throttle_time_seconds_total{type}  time responses were held (Kafka's throttle-time, summed)
//	ringbroker_quota_throttled_requests_total{type}     requests that were throttled
func newQuotaManager(props map[string]string, set *metrics.Set) (*quotaManager, error) {
	cfg, err := quotaConfigFromProps(props)
	if err != nil {
		return nil, err
	}
	q := &quotaManager{cfg: cfg}
	for t := range q.rates {
		q.rates[t] = map[quotaTags]*sampledRate{}
		if set != nil {
			q.throttleSeconds[t] = set.NewFloatCounter(`ringbroker_quota_throttle_time_seconds_total{type="` + quotaTypeNames[t] + `"}`)
			q.throttled[t] = set.NewCounter(`ringbroker_quota_throttled_requests_total{type="` + quotaTypeNames[t] + `"}`)
		}
	}
	return q, nil
}

// record counts bytes of a request from user and clientID against its
// quota of type t in im, and returns how long to throttle it (0 under quota
// or with no quota).
func (q *quotaManager) record(im *Image, t quotaType, user, clientID string, bytes int64, now time.Time) time.Duration {
	limit, tags, ok := im.resolveQuota(quotaTypeKeys[t], user, clientID)
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

// sweep drops rates idle for quotaIdleExpiry. q.mu is held.
func (q *quotaManager) sweep(nowMs int64) {
	q.lastSweep = nowMs
	for t := range q.rates {
		for k, s := range q.rates[t] {
			if nowMs-s.lastMs > int64(quotaIdleExpiry/time.Millisecond) {
				delete(q.rates[t], k)
			}
		}
	}
}

// throttleMillis converts a throttle time for throttle_time_ms.
func throttleMillis(d time.Duration) int32 {
	ms := d.Milliseconds()
	if ms < 1 && d > 0 {
		ms = 1
	}
	return int32(min(ms, 1<<31-1))
}

// holdThrottled waits d before a throttled response is written; it returns
// early when the connection or the broker closes.
func (b *Broker) holdThrottled(r *wire.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-connOf(r).closed:
	case <-b.closing:
	}
}

// produceQuota records a Produce request's record bytes against the
// client's producer_byte_rate and returns the throttle time. Call only
// with im.quotaKinds set.
func (b *Broker) produceQuota(im *Image, r *wire.Request, req *kmsg.ProduceRequest) time.Duration {
	if im.quotaKinds&quotaKindProduceBit == 0 {
		return 0
	}
	var n int64
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			n += int64(len(req.Topics[i].Partitions[j].Records))
		}
	}
	return b.quotas.record(im, quotaProduce, quotaUser(connOf(r)), r.ClientID, n, time.Now())
}

// fetchQuota records a Fetch response's record bytes against the client's
// consumer_byte_rate; when over quota it writes the throttle time into the
// encoded response (out, from encodeFetchResponse) and holds it. Call only
// with im.quotaKinds set.
func (b *Broker) fetchQuota(im *Image, r *wire.Request, outs []fetchTopicOut, out any) {
	if im.quotaKinds&quotaKindFetchBit == 0 {
		return
	}
	var n int64
	for i := range outs {
		for j := range outs[i].parts {
			n += int64(outs[i].parts[j].bytes)
		}
	}
	d := b.quotas.record(im, quotaFetch, quotaUser(connOf(r)), r.ClientID, n, time.Now())
	if d <= 0 {
		return
	}
	// throttle_time_ms is the first field of every Fetch version we answer.
	if raw, ok := out.(*rawResponse); ok && len(raw.parts) > 0 && len(raw.parts[0].b) >= 4 {
		binary.BigEndian.PutUint32(raw.parts[0].b, uint32(throttleMillis(d)))
	}
	b.holdThrottled(r, d)
}
