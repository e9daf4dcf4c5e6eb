package appliance

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
)

// TestWarnConnCountsDropped: warnings past the limit are not logged but
// counted in ringbroker_connection_warnings_suppressed_total, so a flood
// with no warning after it still shows.
func TestWarnConnCountsDropped(t *testing.T) {
	var buf bytes.Buffer
	b := &Broker{log: slog.New(slog.NewTextHandler(&buf, nil))}
	b.metrics = newBrokerMetrics(b, wire.NewTable())
	for range wire.WarnBurst + 30 {
		b.warnConn("closing connection", "reason", "test")
	}
	if n := bytes.Count(buf.Bytes(), []byte("closing connection")); n != wire.WarnBurst {
		t.Fatalf("%d lines logged, want %d", n, wire.WarnBurst)
	}
	if n := b.metrics.SuppressedConnWarnings(); n != 30 {
		t.Fatalf("ringbroker_connection_warnings_suppressed_total %d, want 30", n)
	}
}
