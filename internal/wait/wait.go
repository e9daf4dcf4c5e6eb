// Package wait is a test helper: it waits for a condition to hold, checking
// it on a ticker until a deadline, so that tests wait on what they need
// rather than sleeping for a guessed time.
package wait

import "time"

// Until checks cond every 5 ms until it holds or timeout has passed, and
// reports whether it held. cond runs on the caller's goroutine.
func Until(timeout time.Duration, cond func() bool) bool {
	return Every(5*time.Millisecond, timeout, cond)
}

// Every is Until with the interval between checks given.
func Every(interval, timeout time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}
