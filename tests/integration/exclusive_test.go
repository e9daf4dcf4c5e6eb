package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runSecondBroker starts the broker binary with overrides and expects it to
// refuse to start: a non-zero exit within the timeout and want in its output.
func runSecondBroker(t *testing.T, first *Broker, want string, overrides ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := []string{first.config, "--override", "metrics.listener=none"}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	cmd := exec.CommandContext(ctx, first.bin, args...)
	cmd.Dir = first.root
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("second broker (%v) did not exit: it started instead of refusing\n%s", overrides, out)
	}
	if err == nil {
		t.Fatalf("second broker (%v) exited 0\n%s", overrides, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("second broker (%v): output lacks %q\n%s", overrides, want, out)
	}
}

// TestSecondBrokerRefused: a broker on a data directory that another broker
// holds, or on a port another process listens on, refuses to start, and the
// first broker keeps serving.
func TestSecondBrokerRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := startBroker(t, "")
	other := freePort(t)
	runSecondBroker(t, b, "in use by another broker process",
		"log.dirs="+b.DataDir, fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", other))
	runSecondBroker(t, b, "in use by another process",
		"log.dirs="+t.TempDir(), "listeners=PLAINTEXT://"+b.Addr)
	createTopic(t, ctx, b, "still-serving", 1)
}

// TestKcatOffsetOutOfRangeResets: a consumer whose offset is past the log
// end gets OFFSET_OUT_OF_RANGE with empty records, resets (librdkafka's
// auto.offset.reset) and reaches the end, instead of refetching in a loop.
func TestKcatOffsetOutOfRangeResets(t *testing.T) {
	kcat := needTool(t, "kcat")
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := exec.CommandContext(ctx, kcat, "-b", b.Addr, "-P", "-t", "oor")
	prod.Stdin = strings.NewReader("one\ntwo\n")
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	start := time.Now()
	cons := exec.CommandContext(ctx, kcat, "-b", b.Addr, "-C", "-t", "oor", "-o", "1000", "-e")
	out, err := cons.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("kcat -C -o 1000 -e did not finish in 30s")
	}
	if strings.Contains(string(out), "parse failure") || strings.Count(string(out), "\n") > 20 {
		t.Fatalf("kcat output after %v (err %v):\n%s", time.Since(start), err, out)
	}
}
