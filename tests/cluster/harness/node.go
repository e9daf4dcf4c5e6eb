package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	killTimeout     = 10 * time.Second
	pollInterval    = 25 * time.Millisecond
	logTailBytes    = 24 << 10
	logTailMaxLines = 100
)

// ExitInfo says how a node's process ended.
type ExitInfo struct {
	Code   int            // exit status; -1 when killed by a signal
	Signal syscall.Signal // the signal that killed it, or 0
	Err    error          // a wait error other than a non-zero status
}

// String is "exit status N", "killed by signal S" or the wait error.
func (e ExitInfo) String() string {
	switch {
	case e.Signal != 0:
		return "killed by signal " + e.Signal.String()
	case e.Err != nil:
		return "wait error: " + e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Node is one ringbroker process of a Cluster: its configuration, its
// directory and the process now running (or last run) from it. Methods that
// take no error return report harness failures with t.Fatalf, so call them
// from the test's goroutine; the rest may be called from any goroutine.
type Node struct {
	Config    NodeConfig
	Dir       string // the node's directory: server.properties and the process logs
	PropsPath string // Dir/server.properties
	Netns     string // the network namespace it runs in; "" for the test's own

	t            testing.TB
	bin          string
	env          []string
	readyTimeout time.Duration
	dial         DialFunc

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has been waited for
	exit     ExitInfo
	starts   int
	logPaths []string
}

// ID is the node.id.
func (n *Node) ID() int32 { return n.Config.ID }

// Addr is the client (PLAINTEXT) address, host:port.
func (n *Node) Addr() string { return n.Config.Addr() }

// ControllerAddr is the controller listener's address, host:port.
func (n *Node) ControllerAddr() string { return n.Config.ControllerAddr() }

// MetricsAddr is the metrics.listener address (/metrics, /healthz,
// /readyz), host:port, or "" when the node has none (Options.Metrics).
func (n *Node) MetricsAddr() string {
	if n.Config.MetricsPort == 0 {
		return ""
	}
	return net.JoinHostPort(n.Config.Host, strconv.Itoa(n.Config.MetricsPort))
}

func (n *Node) String() string { return fmt.Sprintf("node %d (%s)", n.Config.ID, n.Addr()) }

// Start starts the node's process on its configuration and directory (again
// after Kill or Terminate) and returns without waiting for it to serve:
// WaitReady waits. The process runs in its own process group, in Netns when
// set (through `ip netns exec`), with stdout and stderr in Dir/node-ID.N.log
// (N counts the starts) and is sent SIGKILL should the test process die.
func (n *Node) Start() {
	n.t.Helper()
	if n.Running() {
		n.t.Fatalf("harness: %s: Start while running", n)
	}
	n.mu.Lock()
	n.starts++
	path := filepath.Join(n.Dir, fmt.Sprintf("node-%d.%d.log", n.Config.ID, n.starts))
	n.logPaths = append(n.logPaths, path)
	n.mu.Unlock()
	f, err := os.Create(path)
	if err != nil {
		n.t.Fatalf("harness: cannot create %s: %v", path, err)
	}
	args := []string{n.PropsPath}
	name := n.bin
	if n.Netns != "" {
		args = append([]string{"netns", "exec", n.Netns, n.bin}, args...)
		name = "ip"
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = n.Dir
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = append(os.Environ(), n.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(f, "# harness: %s %s\n", name, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		f.Close()
		n.t.Fatalf("harness: cannot start %s: %v", n, err)
	}
	done := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.done, n.exit = cmd, done, ExitInfo{}
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		info := ExitInfo{Code: cmd.ProcessState.ExitCode()}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			info.Signal = ws.Signal()
		} else if err != nil && !errors.As(err, new(*exec.ExitError)) {
			info.Err = err
		}
		n.mu.Lock()
		n.exit = info
		n.mu.Unlock()
		close(done)
	}()
}

// Pid is the running (or last) process's id; 0 before the first start.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Done is closed when the current process has exited and been waited
// for; nil before the first start.
func (n *Node) Done() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.done
}

// Running reports whether the process is started and has not exited (a
// stopped process is running).
func (n *Node) Running() bool {
	done := n.Done()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Exit says how the last process ended; the zero ExitInfo while it runs.
func (n *Node) Exit() ExitInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exit
}

// State is the kernel's state letter for the process (/proc/PID/stat: R
// running, S sleeping, T stopped, Z zombie...), or "" when it is not
// running.
func (n *Node) State() string {
	if !n.Running() {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.Pid()))
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces, so cut at the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// Stopped reports whether the process is stopped (SIGSTOP).
func (n *Node) Stopped() bool { return n.State() == "T" }

// WaitReady waits until the node accepts connections and answers
// ApiVersions (Probe) on its client address, and fails fast when the
// process exits. timeout 0 is the cluster's ReadyTimeout.
func (n *Node) WaitReady(timeout time.Duration) error {
	if timeout == 0 {
		timeout = n.readyTimeout
	}
	done := n.Done()
	if done == nil {
		return fmt.Errorf("%s was never started", n)
	}
	start := time.Now()
	deadline := start.Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("%s exited while starting (%s); last probe: %v", n, n.Exit(), lastErr)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(2*time.Second, time.Until(deadline)))
		lastErr = n.Probe(ctx)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-done:
		case <-time.After(pollInterval):
		}
	}
	return fmt.Errorf("%s not ready after %v: %v", n, timeout, lastErr)
}

// MustReady is WaitReady failing the test.
func (n *Node) MustReady() {
	n.t.Helper()
	start := time.Now()
	if err := n.WaitReady(0); err != nil {
		n.t.Fatalf("harness: %v\n%s", err, n.Tail())
	}
	n.t.Logf("harness: %s ready after %v", n, time.Since(start).Round(time.Millisecond))
}

// Probe is Probe on the node's client address, from the test's namespace.
func (n *Node) Probe(ctx context.Context) error { return Probe(ctx, n.dial, n.Addr()) }

// signal sends sig to the node's process group.
func (n *Node) signal(sig syscall.Signal) error {
	if !n.Running() {
		return fmt.Errorf("%s is not running (%s)", n, n.Exit())
	}
	return syscall.Kill(-n.Pid(), sig)
}

// Kill sends SIGKILL to the node's process group and waits for the
// process to be gone (kill -9: no clean shutdown).
func (n *Node) Kill() {
	n.t.Helper()
	if err := n.signal(syscall.SIGKILL); err != nil {
		n.t.Fatalf("harness: Kill: %v", err)
	}
	if _, ok := n.Wait(killTimeout); !ok {
		n.t.Fatalf("harness: %s still running %v after SIGKILL", n, killTimeout)
	}
}

// Stop sends SIGSTOP (the process freezes: it keeps its sockets but
// answers nothing) and waits until the kernel shows it stopped.
func (n *Node) Stop() {
	n.t.Helper()
	if err := n.signal(syscall.SIGSTOP); err != nil {
		n.t.Fatalf("harness: Stop: %v", err)
	}
	_, err := WaitFor(context.Background(), killTimeout, pollInterval, func() error {
		if st := n.State(); st != "T" {
			return fmt.Errorf("state %q", st)
		}
		return nil
	})
	if err != nil {
		n.t.Fatalf("harness: %s not stopped %v after SIGSTOP: %v", n, killTimeout, err)
	}
}

// Cont sends SIGCONT to a stopped node.
func (n *Node) Cont() {
	n.t.Helper()
	if err := n.signal(syscall.SIGCONT); err != nil {
		n.t.Fatalf("harness: Cont: %v", err)
	}
}

// Wait waits up to timeout for the process to exit; ok is false when it is
// still running.
func (n *Node) Wait(timeout time.Duration) (info ExitInfo, ok bool) {
	done := n.Done()
	if done == nil {
		return ExitInfo{}, true
	}
	select {
	case <-done:
		return n.Exit(), true
	case <-time.After(timeout):
		return ExitInfo{}, false
	}
}

// Terminate sends SIGTERM (continuing a stopped process first) and waits
// up to timeout for the process to exit; past it the process is killed and
// the error says so. A clean shutdown is ExitInfo{Code: 0}.
func (n *Node) Terminate(timeout time.Duration) (ExitInfo, error) {
	if err := n.signal(syscall.SIGTERM); err != nil {
		return ExitInfo{}, err
	}
	_ = n.signal(syscall.SIGCONT)
	if info, ok := n.Wait(timeout); ok {
		return info, nil
	}
	_ = n.signal(syscall.SIGKILL)
	info, _ := n.Wait(killTimeout)
	return info, fmt.Errorf("%s did not exit within %v of SIGTERM; killed", n, timeout)
}

// Restart terminates a running node (SIGTERM; it must exit 0 within 30 s),
// starts it again and waits until it is ready. After Kill it just starts it.
func (n *Node) Restart() {
	n.t.Helper()
	if n.Running() {
		info, err := n.Terminate(30 * time.Second)
		if err != nil || info.Code != 0 {
			n.t.Fatalf("harness: restart of %s: shutdown %s, %v\n%s", n, info, err, n.Tail())
		}
	}
	n.Start()
	n.MustReady()
}

// LogPaths are the process logs, one per start, oldest first.
func (n *Node) LogPaths() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slicesClone(n.logPaths)
}

// Log is the current (last) process's log.
func (n *Node) Log() string {
	ps := n.LogPaths()
	if len(ps) == 0 {
		return ""
	}
	b, _ := os.ReadFile(ps[len(ps)-1])
	return string(b)
}

// Tail is the end of every process log of the node, for failure messages.
func (n *Node) Tail() string {
	var b strings.Builder
	for _, p := range n.LogPaths() {
		fmt.Fprintf(&b, "---- tail of %s ----\n%s\n", p, tailFile(p))
	}
	return b.String()
}

// kill ends the process group without reporting (clean-up).
func (n *Node) kill() {
	if n.Running() {
		_ = syscall.Kill(-n.Pid(), syscall.SIGKILL)
		n.Wait(killTimeout)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// tailFile returns at most the last logTailMaxLines lines (and logTailBytes
// bytes) of the file at path.
func tailFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot open: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot stat: %v)", err)
	}
	off := max(st.Size()-logTailBytes, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return fmt.Sprintf("(cannot read: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	if len(lines) > logTailMaxLines {
		lines = lines[len(lines)-logTailMaxLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
