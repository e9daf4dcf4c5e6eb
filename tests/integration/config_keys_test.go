package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUnknownConfigKeyWarning starts the real binary with a misspelt key
// (log.retention.hour) and checks that start-up logs one warning line that
// names the key and suggests log.retention.hours, and that the broker
// serves anyway.
func TestUnknownConfigKeyWarning(t *testing.T) {
	b := startBroker(t, "", "log.retention.hour=1", "metrics.listener=none")
	data, err := os.ReadFile(b.logPaths[len(b.logPaths)-1])
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		if strings.Contains(l, "unknown configuration key") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) != 1 {
		t.Fatalf("got %d unknown-key lines, want 1: %q", len(lines), lines)
	}
	for _, want := range []string{"level=WARN", "key=log.retention.hour ", "suggestion=log.retention.hours"} {
		if !strings.Contains(lines[0]+" ", want) {
			t.Errorf("warning %q does not contain %q", lines[0], want)
		}
	}
}

// TestConfigStrictRefusesUnknownKey starts the real binary with the same
// misspelt key and config.strict=true: it must exit non-zero before
// serving, with a message that names the key and the suggestion.
func TestConfigStrictRefusesUnknownKey(t *testing.T) {
	bin, root := brokerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.CommandContext(ctx, bin, configPath(t, root, t.TempDir()),
		"--override", "listeners=PLAINTEXT://"+addr,
		"--override", "log.dirs="+t.TempDir(),
		"--override", "metrics.listener=none",
		"--override", "log.retention.hour=1",
		"--override", "config.strict=true")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the broker did not exit within 60 s with config.strict=true and an unknown key; output:\n%s", out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("exit: %v, want a non-zero status; output:\n%s", err, out)
	}
	for _, want := range []string{"config.strict=true", `"log.retention.hour"`, `did you mean "log.retention.hours"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "ringbroker listening") {
		t.Errorf("the broker started serving:\n%s", out)
	}
}
