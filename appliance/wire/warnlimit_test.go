package wire

import (
	"testing"
	"time"
)

func TestWarnLimit(t *testing.T) {
	var l WarnLimit
	t0 := time.Unix(1000, 0)
	for i := range WarnBurst {
		if ok, d := l.Allow(t0.Add(time.Duration(i) * time.Millisecond)); !ok || d != 0 {
			t.Fatalf("warning %d of the burst: allowed %v, dropped %d", i, ok, d)
		}
	}
	for i := range 250 {
		if ok, _ := l.Allow(t0.Add(time.Second)); ok {
			t.Fatalf("warning %d past the burst let through", WarnBurst+i)
		}
	}
	ok, d := l.Allow(t0.Add(WarnWindow))
	if !ok || d != 250 {
		t.Fatalf("first warning of the next window: allowed %v, dropped %d, want true and 250", ok, d)
	}
	if ok, d := l.Allow(t0.Add(WarnWindow + time.Millisecond)); !ok || d != 0 {
		t.Fatalf("second warning of the next window: allowed %v, dropped %d", ok, d)
	}
}
