package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runTool runs name with args and stdin under timeout and returns stdout;
// a non-zero exit or a timeout fails the test with both output streams.
func runTool(t *testing.T, timeout time.Duration, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", timeout, ctx.Err())
	}
	if err != nil {
		t.Fatalf("%s %s: %v (after %v)\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err,
			time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestKcat drives the broker with kcat (librdkafka): metadata listing,
// producing lines to an auto-created topic and consuming them back.
func TestKcat(t *testing.T) {
	kcat := needTool(t, "kcat", "-V")
	b := startBroker(t, "")

	list := runTool(t, 30*time.Second, "", kcat, "-b", b.Addr, "-L")
	if want := fmt.Sprintf("broker 1 at %s", b.Addr); !strings.Contains(list, want) {
		t.Errorf("kcat -L output lacks %q:\n%s", want, list)
	}

	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("demo line %03d: the quick brown fox %d", i, i*i))
	}
	runTool(t, 60*time.Second, strings.Join(lines, "\n")+"\n", kcat, "-b", b.Addr, "-P", "-t", "demo")

	list = runTool(t, 30*time.Second, "", kcat, "-b", b.Addr, "-L", "-t", "demo")
	if !strings.Contains(list, `topic "demo" with 1 partitions`) {
		t.Errorf("kcat -L -t demo: want topic demo with 1 partition (num.partitions=1):\n%s", list)
	}

	out := runTool(t, 60*time.Second, "", kcat, "-b", b.Addr, "-C", "-t", "demo", "-o", "beginning", "-e", "-q")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(lines) {
		t.Fatalf("kcat -C returned %d lines, want %d:\n%s", len(got), len(lines), out)
	}
	for i := range lines {
		if got[i] != lines[i] {
			t.Errorf("line %d = %q, want %q", i, got[i], lines[i])
		}
	}

	// Keys, partition and offsets as kcat sees them.
	out = runTool(t, 60*time.Second, "", kcat, "-b", b.Addr, "-C", "-t", "demo", "-o", "beginning", "-e", "-q",
		"-f", `%p %o %s\n`)
	got = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i := range min(len(got), len(lines)) {
		if want := fmt.Sprintf("0 %d %s", i, lines[i]); got[i] != want {
			t.Errorf("formatted line %d = %q, want %q", i, got[i], want)
		}
	}
	if len(got) != len(lines) {
		t.Errorf("kcat -C -f returned %d lines, want %d", len(got), len(lines))
	}
}
