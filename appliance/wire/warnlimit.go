package wire

import (
	"sync"
	"time"
)

// Warnings about closed connections (bad frames, bad requests, peers that
// left mid-request) come one per connection, so a client that opens bad
// connections in a loop wrote one log line each (300 fuzzed connections,
// 300 lines: the fresh-user test). A WarnLimit lets WarnBurst of them
// through per WarnWindow; the first one after a window with suppressed
// lines carries their count (the broker logs it as
// connection_warnings_suppressed, and counts them all in
// ringbroker_connection_warnings_suppressed_total).
const (
	WarnWindow = 10 * time.Second
	WarnBurst  = 50
)

// WarnLimit is the limit of connection warnings; its zero value is ready.
// Safe for concurrent use.
type WarnLimit struct {
	mu         sync.Mutex
	start      time.Time
	n          int // lines let through in the window
	suppressed int // lines dropped since the last one let through
}

// Allow reports whether a warning at now may be logged and, if so, how
// many were dropped before it.
func (l *WarnLimit) Allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= WarnWindow {
		l.start, l.n = now, 0
	}
	if l.n >= WarnBurst {
		l.suppressed++
		return false, 0
	}
	l.n++
	dropped, l.suppressed = l.suppressed, 0
	return true, dropped
}
