package ioring

import (
	"testing"
	"time"
)

// TestSleepFor: a busy ring loop sleeps only until its next yield is due
// (plus busySleepMax), never less than 50 us; an idle one sleeps a second.
func TestSleepFor(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name                  string
		sinceYield, sinceWork time.Duration
		want                  time.Duration
	}{
		{"busy, just yielded", 0, 0, schedYieldEvery + busySleepMax},
		{"busy, yielded 2 ms ago", 2 * time.Millisecond, time.Millisecond, schedYieldEvery + busySleepMax - 2*time.Millisecond},
		{"busy, yield overdue", 20 * time.Millisecond, time.Millisecond, 50 * time.Microsecond},
		{"idle", 5 * time.Millisecond, idleAfter, time.Second},
	} {
		if got := sleepFor(now, now.Add(-tc.sinceYield), now.Add(-tc.sinceWork)); got != tc.want {
			t.Errorf("%s: sleepFor %v, want %v", tc.name, got, tc.want)
		}
	}
	if schedYieldEvery+busySleepMax >= 10*time.Millisecond {
		t.Fatalf("a busy loop may sleep %v past its yield: sysmon retakes at 10 ms", schedYieldEvery+busySleepMax)
	}
}
