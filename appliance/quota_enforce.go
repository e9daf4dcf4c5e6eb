package appliance

// Enforcement of byte-rate quotas (KIP-13, KIP-55) on the produce and fetch
// paths; the quota values, the sampled rates and the throttle times are
// appliance/quota's. producer_byte_rate counts the bytes of a Produce
// request's records, consumer_byte_rate the record bytes of a Fetch
// response, each in the rate of the quota that applies to the request (its
// user, ANONYMOUS without SASL authentication, and its client id). A
// request that takes the rate over the quota gets a throttle time in its
// response's throttle_time_ms, and the response is held that long before it
// is written, as Kafka did before KIP-219. Clients of KIP-219 versions
// (Produce v6+, Fetch v8+) also wait the throttle time after the response,
// so they are held back somewhat more than the quota asks; Kafka instead
// answers at once and stops reading the connection.
//
// With no quota set anywhere the cost on the request path is one test of
// the image's ClientQuotas, already loaded by the handler.
//
// The image holds the quota values as appliance/metadata's plain values;
// quotaCache builds the quota.Values the Manager resolves against from
// them, once per change.

import (
	"encoding/binary"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The quota record types, as the image and its records name them
// (appliance/metadata's plain values).
type (
	ClientQuotaRecord     = metadata.ClientQuotaRecord
	ClientQuotaEntityPart = metadata.ClientQuotaEntityPart
	quotaEntity           = quota.Entity
)

func toQuotaParts(parts []ClientQuotaEntityPart) []quota.ClientQuotaEntityPart {
	out := make([]quota.ClientQuotaEntityPart, len(parts))
	for i, p := range parts {
		out[i] = quota.ClientQuotaEntityPart(p)
	}
	return out
}

// quotaTable is the quota table built from an image's client quotas.
type quotaTable struct {
	src   *metadata.ClientQuotas
	vals  quota.Values
	kinds uint8 // quota.Kind* bits: enforced keys set on any entity
}

// buildQuotaTable indexes q by quota entity.
func buildQuotaTable(q *metadata.ClientQuotas) *quotaTable {
	t := &quotaTable{src: q}
	if q == nil {
		return t
	}
	t.vals = make(quota.Values, q.Len())
	for _, e := range q.All() {
		// The image checked every entity when it applied it.
		ent, _ := quota.ParseEntity(toQuotaParts(e.Parts))
		t.vals[ent] = e.Values
	}
	t.kinds = t.vals.Kinds()
	return t
}

// quotaCache is the quota table of the latest image's client quotas,
// rebuilt only when they change (images share them otherwise).
type quotaCache struct{ last atomic.Pointer[quotaTable] }

// of returns q's quota table.
func (c *quotaCache) of(q *metadata.ClientQuotas) *quotaTable {
	if t := c.last.Load(); t != nil && t.src == q {
		return t
	}
	t := buildQuotaTable(q)
	c.last.Store(t)
	return t
}

// quotaKinds returns the quota.Kind* bits of im: none without quotas,
// which is the cost of quotas on the request path when none is set.
func (b *Broker) quotaKinds(im *Image) uint8 {
	if im.ClientQuotas == nil {
		return 0
	}
	return b.ctl.quotaTab.of(im.ClientQuotas).kinds
}

// quotaBroker is the broker as the quota handlers' quota.Broker.
type quotaBroker struct{ b *Broker }

func (q quotaBroker) ClientQuotas() quota.Values {
	return q.b.ctl.quotaTab.of(q.b.currentImage().ClientQuotas).vals
}

func (q quotaBroker) CommitClientQuotas(recs []*quota.ClientQuotaRecord) error {
	mrecs := make([]MetadataRecord, len(recs))
	for i, r := range recs {
		parts := make([]ClientQuotaEntityPart, len(r.Entity))
		for j, p := range r.Entity {
			parts[j] = ClientQuotaEntityPart(p)
		}
		mrecs[i] = MetadataRecord{ClientQuota: &ClientQuotaRecord{Entity: parts, Key: r.Key, Value: r.Value, Remove: r.Remove}}
	}
	b := q.b
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	next, err := b.ctl.meta.Commit(b.currentImage(), mrecs)
	if err != nil {
		return commitErr(err)
	}
	b.ctl.image.Store(next)
	return nil
}

// quotaUser is the user name a connection's quotas are resolved with: the
// SASL-authenticated user, or ANONYMOUS (Kafka's User:ANONYMOUS) on
// PLAINTEXT listeners.
func quotaUser(c *conn) string {
	return strings.TrimPrefix(c.Principal(), "User:")
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
	case <-b.life.closing:
	}
}

// produceQuota records a Produce request's record bytes against the
// client's producer_byte_rate and returns the throttle time. Call only
// with quotas in im (b.quotaKinds).
func (b *Broker) produceQuota(im *Image, r *wire.Request, req *kmsg.ProduceRequest) time.Duration {
	if b.quotaKinds(im)&quota.KindProduce == 0 {
		return 0
	}
	var n int64
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			n += int64(len(req.Topics[i].Partitions[j].Records))
		}
	}
	return b.quotas.Record(b.ctl.quotaTab.of(im.ClientQuotas).vals, quota.Produce, quotaUser(connOf(r)), r.ClientID, n, time.Now())
}

// fetchQuota records a Fetch response's record bytes against the client's
// consumer_byte_rate; when over quota it writes the throttle time into the
// encoded response (out, from encodeFetchResponse) and holds it. Call only
// with quotas in im (b.quotaKinds).
func (b *Broker) fetchQuota(im *Image, r *wire.Request, outs []fetchTopicOut, out any) {
	if b.quotaKinds(im)&quota.KindFetch == 0 {
		return
	}
	var n int64
	for i := range outs {
		for j := range outs[i].parts {
			n += int64(outs[i].parts[j].bytes)
		}
	}
	d := b.quotas.Record(b.ctl.quotaTab.of(im.ClientQuotas).vals, quota.Fetch, quotaUser(connOf(r)), r.ClientID, n, time.Now())
	if d <= 0 {
		return
	}
	// throttle_time_ms is the first field of every Fetch version we answer.
	if raw, ok := out.(*rawResponse); ok && len(raw.parts) > 0 && len(raw.parts[0].b) >= 4 {
		binary.BigEndian.PutUint32(raw.parts[0].b, uint32(quota.ThrottleMillis(d)))
	}
	b.holdThrottled(r, d)
}
