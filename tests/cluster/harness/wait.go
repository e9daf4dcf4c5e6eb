package harness

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Eventually calls cond every interval (50 ms when 0) until it returns
// nil, and fails the test with cond's last error when timeout passes
// first. It returns how long cond took to hold: the measure of a failover.
func Eventually(t testing.TB, timeout, interval time.Duration, cond func() error) time.Duration {
	t.Helper()
	d, err := WaitFor(context.Background(), timeout, interval, cond)
	if err != nil {
		t.Fatalf("harness: not true after %v: %v", timeout, err)
	}
	return d
}

// WaitFor is Eventually returning the error instead: cond's last error,
// or ctx's when ctx ended first (say, a test's t.Context()).
func WaitFor(ctx context.Context, timeout, interval time.Duration, cond func() error) (time.Duration, error) {
	if interval <= 0 {
		interval = 50 * time.Millisecond
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), err
		case <-tick.C:
		}
	}
}

// NewClient returns a franz-go client for seeds, closed at the end of the
// test; opts come last and win.
func NewClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("harness: client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// NewAdmin returns a kadm client on a new NewClient.
func NewAdmin(t testing.TB, seeds []string, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	return kadm.NewClient(NewClient(t, seeds, opts...))
}
