package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// echoServer answers each line on ln with the same line until ln closes.
func echoServer(t *testing.T, ln net.Listener) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
}

// echo sends line on c and waits up to timeout for it to come back.
func echo(c net.Conn, r *bufio.Reader, line string, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintln(c, line); err != nil {
		return err
	}
	got, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		return fmt.Errorf("echo %q, want %q", got, line)
	}
	return nil
}

func dialFrom(nw *Network, from int, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if from == 0 {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	return nw.Dialer(from)(ctx, "tcp", addr)
}

// TestNetnsPartition proves with plain TCP that Block cuts traffic between
// two namespaces, new connections and established ones, leaves the others
// alone, and that Heal restores both.
func TestNetnsPartition(t *testing.T) {
	nw := NewNetwork(t, 3)
	addr := nw.IP(2) + ":7000"
	ln, err := nw.Listen(2, addr)
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, ln)
	for _, from := range []int{0, 1, 3} {
		c, err := dialFrom(nw, from, addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial from %d before the partition: %v", from, err)
		}
		if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != nw.IP(from) {
			t.Errorf("a connection from node %d comes from %s, want %s", from, got, nw.IP(from))
		}
		if err := echo(c, bufio.NewReader(c), "hello", 5*time.Second); err != nil {
			t.Fatalf("echo from %d: %v", from, err)
		}
		c.Close()
	}
	est, err := dialFrom(nw, 1, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer est.Close()
	estR := bufio.NewReader(est)
	if err := echo(est, estR, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}

	nw.Block(1, 2)
	if !nw.Blocked(2, 1) {
		t.Fatal("Blocked(2, 1) is false after Block(1, 2)")
	}
	if c, err := dialFrom(nw, 1, addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a new connection from node 1 to node 2 gets through the partition")
	}
	if err := echo(est, estR, "during", time.Second); err == nil {
		t.Fatal("an established connection from node 1 to node 2 works through the partition")
	}
	for _, from := range []int{0, 3} {
		c, err := dialFrom(nw, from, addr, 5*time.Second)
		if err != nil {
			t.Fatalf("node %d cut off from node 2 by a partition of 1 and 2: %v", from, err)
		}
		c.Close()
	}

	nw.Heal()
	c, err := dialFrom(nw, 1, addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial after Heal: %v", err)
	}
	if err := echo(c, bufio.NewReader(c), "healed", 5*time.Second); err != nil {
		t.Fatalf("echo after Heal: %v", err)
	}
	c.Close()
	// The established connection recovers: TCP retransmits the line sent
	// during the partition, and its echo arrives (the read deadline above
	// broke only the read).
	est.SetDeadline(time.Now().Add(20 * time.Second))
	if got, err := estR.ReadString('\n'); err != nil || got != "during\n" {
		t.Fatalf("established connection after Heal: %q, %v", got, err)
	}

	// The test process itself can be cut off from a node.
	nw.Block(2, 0)
	if c, err := dialFrom(nw, 0, addr, time.Second); err == nil {
		c.Close()
		t.Fatal("Block(2, 0) lets the test process reach node 2")
	}
	nw.Partition([]int{1}, []int{3})
	if c, err := dialFrom(nw, 1, addr, 5*time.Second); err != nil {
		t.Fatalf("node 1 to node 2, in no partition group: %v", err)
	} else {
		c.Close()
	}
	nw.Heal()
	if c, err := dialFrom(nw, 0, addr, 5*time.Second); err != nil {
		t.Fatalf("test process to node 2 after Heal: %v", err)
	} else {
		c.Close()
	}
}

// TestNetnsLoss drops a share of the packets between two namespaces:
// data still gets through, and the rules count what they dropped.
func TestNetnsLoss(t *testing.T) {
	nw := NewNetwork(t, 2)
	addr := nw.IP(2) + ":7000"
	ln, err := nw.Listen(2, addr)
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, ln)
	c, err := dialFrom(nw, 1, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if nw.Dropped(1) != 0 {
		t.Fatalf("%d packets dropped before any fault", nw.Dropped(1))
	}
	nw.Loss(1, 2, 0.1)
	deadline := time.Now().Add(time.Minute)
	for i := range 2000 {
		if err := echo(c, r, fmt.Sprintf("line %d", i), time.Until(deadline)); err != nil {
			t.Fatalf("line %d through 10%% loss: %v (dropped %d)", i, err, nw.Dropped(1))
		}
		if i >= 20 && nw.Dropped(1)+nw.Dropped(2) > 0 {
			break
		}
	}
	if d := nw.Dropped(1) + nw.Dropped(2); d == 0 {
		t.Fatal("no packet dropped with 10% loss")
	} else {
		t.Logf("%d packets dropped", d)
	}
	nw.Heal()
	if d := nw.Dropped(1) + nw.Dropped(2); d != 0 {
		t.Fatalf("drop counters after Heal: %d", d)
	}
	if err := echo(c, r, "healed", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestNetnsCluster runs three formatted combined nodes, one per namespace,
// on port 9092 of their own addresses, and isolates one of them.
func TestNetnsCluster(t *testing.T) {
	nw := NewNetwork(t, 3)
	c := New(t, Options{Nodes: 3, Network: nw, Props: smallProps})
	for i, n := range c.Nodes {
		if n.Addr() != nw.IP(i+1)+":9092" {
			t.Errorf("node %d at %s, want %s:9092", n.ID(), n.Addr(), nw.IP(i+1))
		}
		out, err := exec.Command("ip", "netns", "identify", fmt.Sprint(n.Pid())).Output()
		if err != nil || strings.TrimSpace(string(out)) != nw.Namespace(i+1) {
			t.Errorf("node %d (pid %d) runs in namespace %q (%v), want %s", n.ID(), n.Pid(), out, err, nw.Namespace(i+1))
		}
	}
	fromNode1 := func(n *Node, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return Probe(ctx, nw.Dialer(1), n.Addr())
	}
	if err := fromNode1(c.Node(2), 5*time.Second); err != nil {
		t.Fatalf("node 1's namespace to node 2: %v", err)
	}
	nw.Isolate(2)
	if err := fromNode1(c.Node(2), time.Second); err == nil {
		t.Fatal("node 2 answers node 1 while isolated")
	}
	if err := fromNode1(c.Node(3), 5*time.Second); err != nil {
		t.Fatalf("node 1 to node 3 while node 2 is isolated: %v", err)
	}
	if err := probe(c.Node(2), 5*time.Second); err != nil {
		t.Fatalf("the test process to isolated node 2: %v", err)
	}
	nw.Heal()
	if err := fromNode1(c.Node(2), 5*time.Second); err != nil {
		t.Fatalf("node 1 to node 2 after Heal: %v", err)
	}
	c.Node(2).Kill()
	c.Node(2).Start()
	c.Node(2).MustReady()
}

// TestNetnsStaleRemoved leaves a namespace named as a dead test process's,
// with a process inside, and checks that NewNetwork removes both.
func TestNetnsStaleRemoved(t *testing.T) {
	RequireNetns(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := dead.Process.Pid
	if pidAlive(pid) {
		t.Skipf("pid %d was reused at once", pid)
	}
	stale := fmt.Sprintf("%s%d-7-n1", nsPrefix, pid)
	if out, err := run("ip", "netns", "add", stale); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { run("ip", "netns", "del", stale) })
	sleeper := exec.Command("ip", "netns", "exec", stale, "sleep", "120")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	// pids in a namespace show once the process has entered it.
	Eventually(t, 10*time.Second, pollInterval, func() error {
		if out, _ := run("ip", "netns", "pids", stale); strings.TrimSpace(out) == "" {
			return errors.New("the sleeper is not in the stale namespace yet")
		}
		return nil
	})
	NewNetwork(t, 1)
	if _, err := os.Stat(filepath.Join("/var/run/netns", stale)); err == nil {
		t.Fatalf("stale namespace %s still exists", stale)
	}
	select {
	case err := <-exited:
		if ws, ok := sleeper.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the process in the stale namespace ended with %v, want SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process in the stale namespace still runs")
	}
}

// TestRequireNetnsWithoutRoot runs this test binary again as user nobody,
// where namespaces cannot be used: RequireNetns skips, and fails with
// RB_REQUIRE_NETNS=1.
func TestRequireNetnsWithoutRoot(t *testing.T) {
	if os.Getenv("RB_HARNESS_CHILD") == "1" {
		RequireNetns(t)
		t.Fatal("RequireNetns returned as user nobody")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as nobody")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ringbroker-harness-child-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "harness.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		require string
		want    string
	}{{"", "--- SKIP"}, {"1", "--- FAIL"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, bin, "-test.run", "^TestRequireNetnsWithoutRoot$", "-test.v")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "RB_HARNESS_CHILD=1", RequireNetnsEnv+"="+tc.require, "HOME="+dir, "TMPDIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, _ := cmd.CombinedOutput()
		cancel()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "need root") {
			t.Errorf("%s=%q as nobody: want %s naming root:\n%s", RequireNetnsEnv, tc.require, tc.want, out)
		}
	}
}
