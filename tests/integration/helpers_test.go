package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// newClient returns a franz-go client seeded with the broker, closed at the
// end of the test. Idempotent writes are off until the broker supports
// InitProducerId.
func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.DisableIdempotentWrite(),
		kgo.DialTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(10 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client over a new franz-go client.
func newAdmin(t testing.TB, b *Broker) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, b))
}

// createTopic creates topic with the given partition count (replication
// factor 1) and fails the test on any error, top-level or per topic.
func createTopic(t testing.TB, ctx context.Context, b *Broker, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := newAdmin(t, b).CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	r, ok := resp[topic]
	if !ok {
		t.Fatalf("CreateTopics %s: no response for the topic: %v", topic, resp)
	}
	if r.Err != nil {
		t.Fatalf("CreateTopics %s: %v (%s)", topic, r.Err, r.ErrMessage)
	}
	if r.NumPartitions != -1 && r.NumPartitions != partitions {
		t.Errorf("CreateTopics %s: response says %d partitions, want %d", topic, r.NumPartitions, partitions)
	}
}

// genRecord returns record i of a deterministic stream: the same (seed, i)
// always gives the same ~100-byte record. Values are random hex plus text, so
// every codec shrinks the batches (franz-go sends a batch uncompressed when
// compressing does not make it smaller). Every tenth record carries headers,
// every 97th has a nil value (a tombstone-shaped record).
func genRecord(seed uint64, topic string, partition int32, i int) *kgo.Record {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	var rnd [20]byte
	for j := range rnd {
		rnd[j] = byte(rng.Uint32())
	}
	r := &kgo.Record{
		Topic:     topic,
		Partition: partition,
		Key:       fmt.Appendf(nil, "key-%09d", i),
	}
	if i%97 != 96 {
		r.Value = fmt.Appendf(nil, "value %09d %s lorem ipsum dolor sit amet %d", i, hex.EncodeToString(rnd[:]), rng.IntN(1000))
	}
	if i%10 == 0 {
		r.Headers = []kgo.RecordHeader{
			{Key: "h-index", Value: fmt.Appendf(nil, "%d", i)},
			{Key: "h-rand", Value: rnd[:4]},
			{Key: "h-empty", Value: nil},
		}
	}
	return r
}

// sameRecord reports how got differs from want in key, value and headers
// (nil and empty are the same on the wire only for header values).
func sameRecord(got, want *kgo.Record) error {
	if !bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) {
		return fmt.Errorf("key %q, want %q", got.Key, want.Key)
	}
	if !bytes.Equal(got.Value, want.Value) || (got.Value == nil) != (want.Value == nil) {
		return fmt.Errorf("value %q (nil=%v), want %q (nil=%v)", got.Value, got.Value == nil, want.Value, want.Value == nil)
	}
	if len(got.Headers) != len(want.Headers) {
		return fmt.Errorf("%d headers %v, want %d %v", len(got.Headers), got.Headers, len(want.Headers), want.Headers)
	}
	for i := range got.Headers {
		g, w := got.Headers[i], want.Headers[i]
		if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) {
			return fmt.Errorf("header %d = %q:%q, want %q:%q", i, g.Key, g.Value, w.Key, w.Value)
		}
	}
	return nil
}

// startOffsets returns ConsumePartitions' map for partitions 0..n-1 of topic,
// each from the log start.
func startOffsets(topic string, n int32) map[string]map[int32]kgo.Offset {
	ps := make(map[int32]kgo.Offset, n)
	for p := range n {
		ps[p] = kgo.NewOffset().AtStart()
	}
	return map[string]map[int32]kgo.Offset{topic: ps}
}

// consumeN polls cl until it has returned at least want records or timeout
// passes, and returns what it got. Fetch errors are logged (at most 10) and,
// if the count is not reached, reported with the failure.
func consumeN(t testing.TB, ctx context.Context, cl *kgo.Client, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got := make([]*kgo.Record, 0, want)
	var errs []error
	for len(got) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() != nil && (err == context.DeadlineExceeded || err == context.Canceled) {
				return
			}
			if len(errs) < 10 {
				errs = append(errs, fmt.Errorf("%s/%d: %w", topic, p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	if len(got) < want {
		t.Fatalf("consumed %d of %d records in %v; fetch errors: %v", len(got), want, timeout, errs)
	}
	if len(errs) > 0 {
		t.Logf("fetch errors while consuming (count reached anyway): %v", errs)
	}
	return got
}

// needTool returns the path of an external program the test needs. When it
// is missing the test is skipped, unless CI is set: then it fails, because
// CI installs it (.ci/deps.sh).
func needTool(t testing.TB, name string, check ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil && len(check) > 0 {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var out []byte
		out, err = exec.CommandContext(ctx, path, check...).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%s %v: %w: %s", path, check, err, out)
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required under CI (see .ci/deps.sh): %v", name, err)
		}
		t.Skipf("%s unavailable (install with .ci/deps.sh): %v", name, err)
	}
	return path
}

// waitFor polls cond every pollInterval until it is true or timeout passes,
// then fails with what.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waitForEvery(t, timeout, pollInterval, what, cond)
}

// waitForEvery is waitFor polling every tick, for conditions that cost a
// broker something to check (reading a whole topic back).
func waitForEvery(t testing.TB, timeout, tick time.Duration, what string, cond func() bool) {
	t.Helper()
	if eventually(t, timeout, tick, cond) {
		return
	}
	if t.Context().Err() != nil {
		t.Fatalf("test ended while waiting for %s", what)
	}
	t.Fatalf("timed out after %v waiting for %s", timeout, what)
}

// eventually polls cond every tick until it is true or timeout passes (or
// the test ends) and reports whether it held, for callers that fail with
// the state they saw.
func eventually(t testing.TB, timeout, tick time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for range int(timeout/tick) + 1 {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-t.Context().Done():
			return false
		case <-time.After(tick):
		}
	}
	return cond()
}

// peerHasRead reports whether the broker has read every byte sent on c:
// none waits in c's send queue (SIOCOUTQ) nor in the receive queue of the
// broker's end, found in /proc/net/tcp{,6} by its ports (rx_queue: bytes
// received that the broker has not read).
func peerHasRead(t testing.TB, c net.Conn) bool {
	t.Helper()
	sc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatalf("cannot reach the socket: %v", err)
	}
	outq, qerr := 0, error(nil)
	if err := sc.Control(func(fd uintptr) { outq, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || qerr != nil {
		t.Fatalf("cannot read the send queue: %v %v", err, qerr)
	}
	if outq > 0 {
		return false
	}
	local := fmt.Sprintf(":%04X", c.RemoteAddr().(*net.TCPAddr).Port)
	remote := fmt.Sprintf(":%04X", c.LocalAddr().(*net.TCPAddr).Port)
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 || !strings.HasSuffix(f[1], local) || !strings.HasSuffix(f[2], remote) {
				continue
			}
			_, rx, _ := strings.Cut(f[4], ":")
			return strings.Trim(rx, "0") == ""
		}
	}
	t.Fatalf("the broker's end of %v -> %v is not in /proc/net/tcp", c.LocalAddr(), c.RemoteAddr())
	return false
}

// longRun reports whether RB_LONG=1 asks for the soak sizes (make
// test-long); make test runs the shorter ones.
func longRun() bool { return os.Getenv("RB_LONG") == "1" }
