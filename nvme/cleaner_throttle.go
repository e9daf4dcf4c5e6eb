package nvme

import (
	"math"
	"sync"
	"time"
)

// TokenBucket is a Throttler of bytes per second shared by cleaner
// goroutines [log.cleaner.io.max.bytes.per.second]: it refills at rate and
// holds at most one second of tokens; a Wait that overdraws it sleeps
// until the debt is paid. Safe for concurrent use.
type TokenBucket struct {
	mu     sync.Mutex
	rate   float64 // bytes per second
	tokens float64
	last   time.Time
}

// NewTokenBucket returns a bucket of bytesPerSecond; a value <= 0 or
// +Inf (Kafka's default is Double.MaxValue) means no limit (nil).
func NewTokenBucket(bytesPerSecond float64) *TokenBucket {
	if bytesPerSecond <= 0 || math.IsInf(bytesPerSecond, 1) || bytesPerSecond >= math.MaxFloat64/2 {
		return nil
	}
	return &TokenBucket{rate: bytesPerSecond, tokens: bytesPerSecond, last: time.Now()}
}

// Wait takes n bytes of budget, sleeping while the bucket is in debt.
// A nil bucket never waits. It returns ErrCleanStopped when stop closes.
func (b *TokenBucket) Wait(n int, stop <-chan struct{}) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	now := time.Now()
	b.tokens = min(b.rate, b.tokens+b.rate*now.Sub(b.last).Seconds())
	b.last = now
	b.tokens -= float64(n)
	debt := -b.tokens
	b.mu.Unlock()
	if debt <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(debt / b.rate * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-stop:
		return ErrCleanStopped
	}
}
