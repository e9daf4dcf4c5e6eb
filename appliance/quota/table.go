package quota

// The quota table of the metadata image in force and the produce and
// fetch paths' use of it. The table is rebuilt when the broker's metadata
// publisher hands on a delta that changes the client quotas (the broker's
// listener calls SetValues), never when it is read: whether the change was
// proposed here, replayed at start or replicated, the same publish
// rebuilds it. With no quota set anywhere the cost on the request path is
// one atomic load and a test of Kinds.

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// table is one quota table: the values and their Kind bits.
type table struct {
	vals  Values
	kinds uint8
}

// SetValues makes v (the client quotas of the image in force; not
// modified later) the values requests are counted against. Calls come one
// at a time, in metadata log order.
func (q *Manager) SetValues(v Values) {
	q.cur.Store(&table{vals: v, kinds: v.Kinds()})
}

// Values returns the values in force (nil: none).
func (q *Manager) Values() Values {
	if t := q.cur.Load(); t != nil {
		return t.vals
	}
	return nil
}

// Kinds returns the Kind bits of the values in force: 0 without quotas.
func (q *Manager) Kinds() uint8 {
	if t := q.cur.Load(); t != nil {
		return t.kinds
	}
	return 0
}

// User is the user name a connection's quotas are resolved with, from its
// principal: the SASL-authenticated user, or ANONYMOUS (Kafka's
// User:ANONYMOUS) on PLAINTEXT listeners.
func User(principal string) string { return strings.TrimPrefix(principal, "User:") }

// RecordProduce counts a Produce request's record bytes against the
// producer_byte_rate that applies to principal and clientID, and returns
// the throttle time (0 without a producer_byte_rate anywhere).
func (q *Manager) RecordProduce(principal, clientID string, req *kmsg.ProduceRequest, now time.Time) time.Duration {
	t := q.cur.Load()
	if t == nil || t.kinds&KindProduce == 0 {
		return 0
	}
	var n int64
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			n += int64(len(req.Topics[i].Partitions[j].Records))
		}
	}
	return q.Record(t.vals, Produce, User(principal), clientID, n, now)
}

// RecordFetch counts n record bytes of a Fetch response against the
// consumer_byte_rate that applies to principal and clientID, and returns
// the throttle time (0 without a consumer_byte_rate anywhere).
func (q *Manager) RecordFetch(principal, clientID string, n int64, now time.Time) time.Duration {
	t := q.cur.Load()
	if t == nil || t.kinds&KindFetch == 0 {
		return 0
	}
	return q.Record(t.vals, Fetch, User(principal), clientID, n, now)
}

// Hold waits d before a throttled response is written; it returns early
// when either channel closes (the connection, the broker).
func Hold(d time.Duration, conn, broker <-chan struct{}) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-conn:
	case <-broker:
	}
}
