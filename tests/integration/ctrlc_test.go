package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C of `make run` (SIGINT to the terminal's foreground process group:
// make and the broker it started) stops the broker cleanly and leaves no
// process behind. It runs in the netpoll buffered pass only: the engine
// and I/O mode do not change what make and the signal do.
func TestMakeRunCtrlCLeavesNoBroker(t *testing.T) {
	if os.Getenv("RB_ENGINE") == "uring" || os.Getenv("RB_IO_MODE") == "direct" {
		t.Skip("runs in the netpoll buffered pass")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make not found: %v", err)
	}
	_, root := brokerBinary(t)
	port := freePort(t)
	data := filepath.Join(t.TempDir(), "ctrlc-data")
	binDir := t.TempDir() // its own bin/: the other passes may build at the same time
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "run", "BIN="+binDir,
		fmt.Sprintf("ARGS=--override listeners=PLAINTEXT://127.0.0.1:%d --override metrics.listener=none --override log.dirs=%s", port, data))
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a process group, as a terminal's job
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer syscall.Kill(-pgid, syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not listen on %s within 2 minutes:\n%s", addr, out.String())
		}
		select {
		case err := <-done:
			t.Fatalf("make run ended (%v) before listening on %s:\n%s", err, addr, out.String())
		case <-time.After(100 * time.Millisecond): // polling a port, not waiting for time to pass
		}
	}
	if pids := processesWith(data); len(pids) != 1 {
		t.Fatalf("want one broker process on %s, found %v", data, pids)
	}
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("make run still running 30 s after Ctrl-C:\n%s", out.String())
	}
	if pids := processesWith(data); len(pids) != 0 {
		t.Fatalf("broker processes left after Ctrl-C of make run: %v\n%s", pids, out.String())
	}
	if !strings.Contains(out.String(), "ringbroker stopped") {
		t.Errorf("the broker did not log a clean stop:\n%s", out.String())
	}
}

// processesWith lists the pids whose command line contains s.
func processesWith(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) && !bytes.HasPrefix(b, []byte("make\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
