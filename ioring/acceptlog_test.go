package ioring

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countHandler counts the log records with one message.
type countHandler struct {
	msg string
	n   atomic.Int64
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

func TestFDExhaustedLogRateLimit(t *testing.T) {
	h := &countHandler{msg: "accept failed, file descriptors exhausted"}
	log := slog.New(h)
	var f fdExhaustedLog
	t0 := time.Unix(1000, 0)
	for i := range 1000 {
		f.warn(log, 0, syscall.EMFILE, t0.Add(time.Duration(i)*time.Millisecond)) // 1 s of failures
	}
	if h.n.Load() != 1 || f.suppressed != 999 {
		t.Fatalf("%d warnings, %d suppressed after 1000 failures in 1 s; want 1, 999", h.n.Load(), f.suppressed)
	}
	f.warn(log, 0, syscall.EMFILE, t0.Add(fdExhaustedEvery))
	if h.n.Load() != 2 || f.suppressed != 0 {
		t.Fatalf("after %v: %d warnings, %d suppressed; want 2, 0", fdExhaustedEvery, h.n.Load(), f.suppressed)
	}
}

// TestMain lets the test binary act as a client process that holds
// connections open (RB_DIAL_ADDR, RB_DIAL_N), so a listener in the test
// process can run out of descriptors without the clients' own ends. It
// holds them until its stdin reaches EOF: the test kills it, or the test
// process ended and its end of the pipe closed.
func TestMain(m *testing.M) {
	if addr := os.Getenv("RB_DIAL_ADDR"); addr != "" {
		n, _ := strconv.Atoi(os.Getenv("RB_DIAL_N"))
		var conns []net.Conn
		for range n {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conns = append(conns, c)
			}
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		for _, c := range conns {
			c.Close()
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestAcceptFDExhausted: with its descriptors used up, a listener of either
// engine neither spins nor floods the log (at most one warning per shard in
// the window), and accepts again once descriptors are free.
func TestAcceptFDExhausted(t *testing.T) {
	for _, name := range []string{"netpoll", "uring"} {
		t.Run(name, func(t *testing.T) {
			h := &countHandler{msg: "accept failed, file descriptors exhausted"}
			log := slog.New(h)
			var e Engine
			switch name {
			case "netpoll":
				ne, err := NewNetpoll(NetpollOptions{Addr: "127.0.0.1:0", Shards: 1, Logger: log})
				if err != nil {
					t.Fatal(err)
				}
				served := make(chan error, 1)
				go func() { served <- ne.Serve(listenerTeller{}) }()
				t.Cleanup(func() { ne.Close(); <-served })
				e = ne
			case "uring":
				e = startUring(t, 1, &echoServer{}, UringOptions{MaxFrame: 1 << 20, Logger: log})
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "RB_DIAL_ADDR="+e.Addr().String(), "RB_DIAL_N=80")
			hold, err := cmd.StdinPipe() // before the descriptors are counted below
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close()
			var old syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Skip(err)
			}
			fds, err := os.ReadDir("/proc/self/fd")
			if err != nil {
				t.Skip(err)
			}
			low := old
			low.Cur = uint64(len(fds) + 16)
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
				t.Skip(err)
			}
			restored := false
			restore := func() {
				if !restored {
					restored = true
					syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
				}
			}
			defer restore()
			if err := cmd.Start(); err != nil {
				restore()
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			// The clients connect and the listener runs out (the client
			// process may take seconds to start on a loaded machine).
			waitFor(t, 15*time.Second, "the listener to run out of descriptors (its warning)", func() bool { return h.n.Load() > 0 })
			var r0, r1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			time.Sleep(1500 * time.Millisecond) // the measured window of failing accepts, not a wait for an event
			syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			restore()
			cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) * time.Nanosecond
			if n := h.n.Load(); n != 1 {
				t.Errorf("%d warnings about exhausted descriptors after 1.5 s of failures, want 1", n)
			}
			if cpu > 500*time.Millisecond {
				t.Errorf("process used %v of CPU in 1.5 s while accept failed; the listener spins", cpu)
			}
			// Descriptors are free again: a new connection is served.
			c, err := net.Dial("tcp", e.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(frame([]byte("x")))
			readFrame(t, c)
		})
	}
}
