package ioring

import (
	"log/slog"
	"time"
)

// fdExhaustedEvery is how often a listener logs that accept(2) fails with
// EMFILE/ENFILE while it keeps failing: once per peer connection attempt
// the log would fill the disk (a netpoll listener logged ~180,000 lines a
// second with its file descriptors used up).
const fdExhaustedEvery = 10 * time.Second

// acceptBackoffMin and acceptBackoffMax bound the pause of a listener
// between accepts that fail for want of file descriptors (the pending
// connection stays in the backlog, so accept fails again at once: without a
// pause a netpoll listener spun on both CPUs; a uring shard re-armed its
// accept every 100 ms).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// fdExhaustedLog rate-limits the "file descriptors exhausted" warning of
// one listener; it is used by one goroutine (or one shard loop) only.
type fdExhaustedLog struct {
	last       time.Time
	suppressed int
}

// warn logs err unless a warning went out less than fdExhaustedEvery ago;
// the next one counts the failures it left out.
func (f *fdExhaustedLog) warn(log *slog.Logger, shard int, err error, now time.Time) {
	if !f.last.IsZero() && now.Sub(f.last) < fdExhaustedEvery {
		f.suppressed++
		return
	}
	log.Warn("accept failed, file descriptors exhausted", "shard", shard, "err", err, "failures_not_logged", f.suppressed)
	f.last, f.suppressed = now, 0
}
