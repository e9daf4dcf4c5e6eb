package appliance

// The broker's side of appliance/quota: the type names the image and its
// records use, quotaListener, which hands the quota.Manager the client
// quotas of every published delta that changes them, quotaBroker, the
// quota handlers' view of the broker, and the produce and fetch paths'
// calls of Manager.RecordProduce and Manager.RecordFetch. The quota
// values, the sampled rates and the throttle times are quota's; a
// request that takes its rate over the quota gets a throttle time in its
// response's throttle_time_ms, and the response is held that long before
// it is written, as Kafka did before KIP-219. Clients of KIP-219 versions
// (Produce v6+, Fetch v8+) also wait the throttle time after the
// response, so they are held back somewhat more than the quota asks;
// Kafka instead answers at once and stops reading the connection.

import (
	"encoding/binary"
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

// quotaValues converts an image's client quotas to quota's Values (nil:
// none).
func quotaValues(q *metadata.ClientQuotas) quota.Values {
	if q == nil {
		return nil
	}
	vals := make(quota.Values, q.Len())
	for _, e := range q.All() {
		// The image checked every entity when it applied it.
		ent, _ := quota.ParseEntity(toQuotaParts(e.Parts))
		vals[ent] = e.Values
	}
	return vals
}

// quotaListener gives the quota manager the client quotas of a published
// delta that changes them.
type quotaListener struct{ b *Broker }

func (l quotaListener) Publish(_, next *Image, d *metadata.Delta) error {
	if d.ClientQuotas {
		l.b.quotas.SetValues(quotaValues(next.ClientQuotas))
	}
	return nil
}

// quotaBroker is the broker as the quota handlers' quota.Broker.
type quotaBroker struct{ b *Broker }

func (q quotaBroker) ClientQuotas() quota.Values { return q.b.quotas.Values() }

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
	if _, err := b.commitLocked(b.currentImage(), mrecs); err != nil {
		return commitErr(err)
	}
	return nil
}

// produceQuota records a Produce request's record bytes against the
// client's producer_byte_rate and returns the throttle time. Without a
// producer_byte_rate anywhere it is one atomic load.
func (b *Broker) produceQuota(r *wire.Request, req *kmsg.ProduceRequest) time.Duration {
	if b.quotas.Kinds()&quota.KindProduce == 0 {
		return 0
	}
	return b.quotas.RecordProduce(connOf(r).Principal(), r.ClientID, req, time.Now())
}

// fetchQuota records a Fetch response's record bytes against the client's
// consumer_byte_rate; when over quota it writes the throttle time into the
// encoded response (out, from encodeFetchResponse) and holds it. Call only
// with a consumer_byte_rate set (quota.KindFetch in b.quotas.Kinds).
func (b *Broker) fetchQuota(r *wire.Request, outs []fetchTopicOut, out any) {
	var n int64
	for i := range outs {
		for j := range outs[i].parts {
			n += int64(outs[i].parts[j].bytes)
		}
	}
	d := b.quotas.RecordFetch(connOf(r).Principal(), r.ClientID, n, time.Now())
	if d <= 0 {
		return
	}
	// throttle_time_ms is the first field of every Fetch version we answer.
	if raw, ok := out.(*rawResponse); ok && len(raw.parts) > 0 && len(raw.parts[0].b) >= 4 {
		binary.BigEndian.PutUint32(raw.parts[0].b, uint32(quota.ThrottleMillis(d)))
	}
	b.holdThrottled(r, d)
}

// holdThrottled waits d before a throttled response to r is written
// (quota.Hold), returning early when the connection or the broker closes.
func (b *Broker) holdThrottled(r *wire.Request, d time.Duration) {
	quota.Hold(d, connOf(r).closed, b.life.closing)
}
