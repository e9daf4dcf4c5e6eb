package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/tests/cluster/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// syncBuffer is a bytes.Buffer safe for the command's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMakeCluster runs rbcluster as make cluster does (ports 9092 on
// 127.0.0.1-3), inside a network namespace of its own so that it cannot
// clash with a broker on this machine: the first run formats the three
// nodes with one cluster id kept in cluster.id, every node answers, SIGINT
// stops all of them cleanly, and a second run reuses id and data.
func TestMakeCluster(t *testing.T) {
	nw := harness.NewNetwork(t, 1)
	bin := harness.Binary(t)
	tool := filepath.Join(t.TempDir(), "rbcluster")
	if out, err := exec.Command("go", "build", "-o", tool, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := t.TempDir()
	var ids []string
	for round := 1; round <= 2; round++ {
		var out syncBuffer
		cmd := nw.Command(1, tool, "-bin", bin, "-data", data, "-override", "offsets.topic.num.partitions=1",
			"-override", "transaction.state.log.num.partitions=1")
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		for _, host := range harness.LoopbackHosts(3) {
			_, err := harness.WaitFor(context.Background(), time.Minute, 0, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				return harness.Probe(ctx, nw.Dialer(1), host+":9092")
			})
			if err != nil {
				t.Fatalf("run %d: %s:9092 does not answer: %v\n%s", round, host, err, out.String())
			}
		}
		b, err := os.ReadFile(filepath.Join(data, "cluster.id"))
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSpace(string(b))
		ids = append(ids, id)
		for n := 1; n <= 3; n++ {
			meta, err := os.ReadFile(filepath.Join(data, fmt.Sprintf("node-%d", n), "meta.properties"))
			if err != nil || !strings.Contains(string(meta), "cluster.id="+id) || !strings.Contains(string(meta), fmt.Sprintf("node.id=%d", n)) {
				t.Fatalf("node-%d meta.properties: %v\n%s", n, err, meta)
			}
			props, _ := os.ReadFile(filepath.Join(data, fmt.Sprintf("node-%d.properties", n)))
			if !strings.Contains(string(props), "controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.2:9093,3@127.0.0.3:9093\n") ||
				!strings.Contains(string(props), fmt.Sprintf("listeners=PLAINTEXT://127.0.0.%d:9092,CONTROLLER://127.0.0.%d:9093\n", n, n)) {
				t.Fatalf("node-%d.properties:\n%s", n, props)
			}
		}
		formats := strings.Count(out.String(), "Formatting metadata directory")
		if want := map[int]int{1: 3, 2: 0}[round]; formats != want {
			t.Fatalf("run %d formatted %d nodes, want %d:\n%s", round, formats, want, out.String())
		}
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("run %d: rbcluster after SIGINT: %v\n%s", round, err, out.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("run %d: rbcluster still running a minute after SIGINT\n%s", round, out.String())
		}
		for n := 1; n <= 3; n++ {
			if !strings.Contains(out.String(), fmt.Sprintf("rbcluster: node-%d exit status 0", n)) {
				t.Errorf("run %d: node-%d did not stop cleanly:\n%s", round, n, out.String())
			}
		}
		pids, _ := exec.Command("ip", "netns", "pids", nw.Namespace(1)).Output()
		for _, p := range strings.Fields(string(pids)) {
			if p != fmt.Sprint(os.Getpid()) {
				t.Fatalf("run %d: process %s left in the namespace after rbcluster exited", round, p)
			}
		}
	}
	if ids[0] != ids[1] || len(ids[0]) != 22 {
		t.Fatalf("cluster ids %q: want one 22-character id kept across runs", ids)
	}
}

// TestMakeClusterCtrlC runs `make cluster` as a terminal job (its own
// process group) inside a namespace of its own, and sends SIGINT to the
// group as Ctrl-C does: every node stops cleanly and nothing is left.
func TestMakeClusterCtrlC(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make not found: %v", err)
	}
	nw := harness.NewNetwork(t, 1)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir, data := t.TempDir(), t.TempDir() // its own bin/: nothing of the checkout's is touched
	var out syncBuffer
	cmd := nw.Command(1, "make", "-s", "cluster", "BIN="+binDir, "CLUSTER_DATA="+data,
		"CLUSTER_ARGS=-override offsets.topic.num.partitions=1 -override transaction.state.log.num.partitions=1")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for _, host := range harness.LoopbackHosts(3) {
		_, err := harness.WaitFor(context.Background(), 5*time.Minute, 100*time.Millisecond, func() error {
			select {
			case err := <-exited:
				t.Fatalf("make cluster ended (%v) before serving:\n%s", err, out.String())
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return harness.Probe(ctx, nw.Dialer(1), host+":9092")
		})
		if err != nil {
			t.Fatalf("make cluster: %s:9092 does not answer: %v\n%s", host, err, out.String())
		}
	}
	syscall.Kill(-pgid, syscall.SIGINT)
	select {
	case <-exited: // make's own status after an interrupt is not the point
	case <-time.After(time.Minute):
		t.Fatalf("make cluster still running a minute after Ctrl-C:\n%s", out.String())
	}
	_, err = harness.WaitFor(context.Background(), 30*time.Second, 100*time.Millisecond, func() error {
		pids, _ := exec.Command("ip", "netns", "pids", nw.Namespace(1)).Output()
		for _, p := range strings.Fields(string(pids)) {
			if p != fmt.Sprint(os.Getpid()) {
				return fmt.Errorf("process %s still runs in the namespace", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after Ctrl-C: %v\n%s", err, out.String())
	}
	for n := 1; n <= 3; n++ {
		if !strings.Contains(out.String(), fmt.Sprintf("rbcluster: node-%d exit status 0", n)) {
			t.Errorf("node-%d did not stop cleanly:\n%s", n, out.String())
		}
	}
}
