package ioring

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newRing creates a ring on the test goroutine's locked OS thread (the
// single issuer) and closes it at the end of the test.
func newRing(t testing.TB, o Options) *Ring {
	t.Helper()
	// IORING_TEST_MODE=plain|nodefer|sqpoll reruns the suite on the
	// fallback flag sets (tests that check flags themselves are unaffected).
	switch os.Getenv("IORING_TEST_MODE") {
	case "plain":
		o.DisableFlags |= setupKnownFlagMask
	case "nodefer":
		o.DisableFlags |= SetupDeferTaskrun
	case "sqpoll":
		if o.DisableFlags == 0 && !o.NoSQArray && o.CQEntries == 0 {
			o.SQPoll = true
		}
	}
	runtime.LockOSThread()
	r, err := New(o)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("New(%+v): %v", o, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		runtime.UnlockOSThread()
	})
	return r
}

// rec records the CQEs of an op.
type rec struct{ cqes []CQE }

func (c *rec) Complete(q CQE) { c.cqes = append(c.cqes, q) }

func (c *rec) last() CQE { return c.cqes[len(c.cqes)-1] }

// done reports whether the op posted its final CQE.
func (c *rec) done() bool { return len(c.cqes) > 0 && !c.last().More() }

// waitUntil waits on the ring until cond holds, failing after 5s.
func waitUntil(t testing.TB, r *Ring, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within 5s (in flight %d, stats %+v)", r.InFlight(), r.Stats())
		}
		if _, err := r.Wait(1, 100*time.Millisecond); err != nil {
			t.Fatalf("Wait: %v", err)
		}
	}
}

// pollTick is how often eventually checks its condition.
const pollTick = 5 * time.Millisecond

// eventually checks cond every pollTick until it holds or timeout passes,
// and reports whether it held. It is for state that other goroutines
// change (an engine's shards, a child process); a test's own ring is
// driven by waitUntil instead.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollTick)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// waitFor fails the test unless cond holds within timeout; what names the
// condition in the failure.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !eventually(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustUD(t testing.TB) func(uint64, error) uint64 {
	return func(ud uint64, err error) uint64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ud
	}
}

func wantErrno(t testing.TB, c CQE, want syscall.Errno) {
	t.Helper()
	if !errors.Is(c.Err(), want) {
		t.Fatalf("cqe res %d (%v), want %v", c.Res, c.Err(), want)
	}
}

func socketpair(t testing.TB) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func pipe(t testing.TB, flags int) (rd, wr int) {
	t.Helper()
	var p [2]int
	must(t, unix.Pipe2(p[:], flags|unix.O_CLOEXEC))
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return p[0], p[1]
}

// listenTCP opens a blocking listening socket on 127.0.0.1 and returns it
// and its address.
func listenTCP(t testing.TB) (int, *unix.SockaddrInet4) {
	t.Helper()
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(ln) })
	must(t, unix.SetsockoptInt(ln, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1))
	must(t, unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	must(t, unix.Listen(ln, 64))
	sa, err := unix.Getsockname(ln)
	must(t, err)
	return ln, sa.(*unix.SockaddrInet4)
}

// dialTCP connects a blocking socket to sa (loopback connects complete at
// once against a listen backlog).
func dialTCP(t testing.TB, sa *unix.SockaddrInet4) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	must(t, unix.Connect(fd, sa))
	return fd
}

// tcpPair returns a connected loopback TCP pair (client, server).
func tcpPair(t testing.TB) (int, int) {
	t.Helper()
	ln, sa := listenTCP(t)
	c := dialTCP(t, sa)
	s, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
	must(t, err)
	t.Cleanup(func() { unix.Close(s) })
	return c, s
}

func tempFile(t testing.TB, content []byte) int {
	t.Helper()
	fd, err := unix.Open(t.TempDir(), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	if len(content) > 0 {
		_, err = unix.Pwrite(fd, content, 0)
		must(t, err)
	}
	return fd
}
