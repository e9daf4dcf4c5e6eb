package appliance

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
)

func TestConnWarnLimit(t *testing.T) {
	var l connWarnLimit
	t0 := time.Unix(1000, 0)
	for i := range connWarnBurst {
		if ok, d := l.allow(t0.Add(time.Duration(i) * time.Millisecond)); !ok || d != 0 {
			t.Fatalf("warning %d of the burst: allowed %v, dropped %d", i, ok, d)
		}
	}
	for i := range 250 {
		if ok, _ := l.allow(t0.Add(time.Second)); ok {
			t.Fatalf("warning %d past the burst let through", connWarnBurst+i)
		}
	}
	ok, d := l.allow(t0.Add(connWarnWindow))
	if !ok || d != 250 {
		t.Fatalf("first warning of the next window: allowed %v, dropped %d, want true and 250", ok, d)
	}
	if ok, d := l.allow(t0.Add(connWarnWindow + time.Millisecond)); !ok || d != 0 {
		t.Fatalf("second warning of the next window: allowed %v, dropped %d", ok, d)
	}
}

// TestWarnConnCountsDropped: warnings past the limit are not logged but
// counted in ringbroker_connection_warnings_suppressed_total, so a flood
// with no warning after it still shows.
func TestWarnConnCountsDropped(t *testing.T) {
	var buf bytes.Buffer
	b := &Broker{log: slog.New(slog.NewTextHandler(&buf, nil))}
	b.metrics = newBrokerMetrics(b, wire.NewTable())
	for range connWarnBurst + 30 {
		b.warnConn("closing connection", "reason", "test")
	}
	if n := bytes.Count(buf.Bytes(), []byte("closing connection")); n != connWarnBurst {
		t.Fatalf("%d lines logged, want %d", n, connWarnBurst)
	}
	if n := b.metrics.SuppressedConnWarnings(); n != 30 {
		t.Fatalf("ringbroker_connection_warnings_suppressed_total %d, want 30", n)
	}
}
