package wait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilSeesTheConditionBecomeTrue(t *testing.T) {
	var n atomic.Int32
	go func() {
		for i := 0; i < 3; i++ {
			n.Add(1)
		}
	}()
	if !Until(5*time.Second, func() bool { return n.Load() == 3 }) {
		t.Fatalf("n = %d, want 3", n.Load())
	}
}

func TestUntilGivesUpAtTheDeadline(t *testing.T) {
	start := time.Now()
	calls := 0
	if Until(50*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("a condition that never holds was reported as held")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before the 50ms deadline", d)
	}
	if calls < 2 {
		t.Fatalf("condition checked %d times, want it polled", calls)
	}
}
