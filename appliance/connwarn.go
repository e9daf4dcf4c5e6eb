package appliance

import (
	"sync"
	"time"
)

// Warnings about closed connections (bad frames, bad requests, peers that
// left mid-request) come one per connection, so a client that opens bad
// connections in a loop wrote one log line each (300 fuzzed connections,
// 300 lines: the fresh-user test). connWarnLimit lets connWarnBurst of
// them through per connWarnWindow; the first one after a window with
// suppressed lines carries their count (connection_warnings_suppressed),
// and ringbroker_connection_warnings_suppressed_total counts them all.
const (
	connWarnWindow = 10 * time.Second
	connWarnBurst  = 50
)

type connWarnLimit struct {
	mu         sync.Mutex
	start      time.Time
	n          int // lines let through in the window
	suppressed int // lines dropped since the last one let through
}

// allow reports whether a warning at now may be logged and, if so, how
// many were dropped before it.
func (l *connWarnLimit) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= connWarnWindow {
		l.start, l.n = now, 0
	}
	if l.n >= connWarnBurst {
		l.suppressed++
		return false, 0
	}
	l.n++
	dropped, l.suppressed = l.suppressed, 0
	return true, dropped
}

// warnConn logs a connection's closing warning through the broker's limit.
func (b *Broker) warnConn(msg string, args ...any) {
	ok, dropped := b.front.warn.allow(time.Now())
	if !ok {
		if b.metrics != nil {
			b.metrics.ConnWarningSuppressed()
		}
		return
	}
	if dropped > 0 {
		args = append(args, "connection_warnings_suppressed", dropped)
	}
	b.log.Warn(msg, args...)
}
