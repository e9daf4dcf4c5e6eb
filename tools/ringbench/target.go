package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Target is what a workload runs against: a ringbroker started by ringbench
// with overrides, or an external cluster at Brokers.
type Target struct {
	// Name is how the target shows in reports: "ringbroker:k=v,..." or
	// "external:host:port".
	Name      string            `json:"name"`
	Kind      string            `json:"kind"` // "ringbroker" or "external"
	Overrides map[string]string `json:"overrides,omitempty"`
	Brokers   []string          `json:"brokers,omitempty"`
}

// ParseTarget reads "ringbroker:k=v,k=v", "ringbroker" or
// "external:host:port[,host:port]".
func ParseTarget(s string) (Target, error) {
	kind, rest, _ := strings.Cut(s, ":")
	switch kind {
	case "ringbroker":
		t := Target{Kind: kind, Overrides: map[string]string{}}
		if rest != "" {
			for _, kv := range strings.Split(rest, ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return Target{}, fmt.Errorf("cannot parse target %q: override %q is not key=value", s, kv)
				}
				t.Overrides[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		t.Name = t.canonicalName()
		return t, nil
	case "external":
		if rest == "" {
			return Target{}, fmt.Errorf("cannot parse target %q: want external:host:port", s)
		}
		return Target{Name: s, Kind: kind, Brokers: strings.Split(rest, ",")}, nil
	}
	return Target{}, fmt.Errorf("cannot parse target %q: want ringbroker:k=v,... or external:host:port", s)
}

func (t Target) canonicalName() string {
	keys := make([]string, 0, len(t.Overrides))
	for k := range t.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + t.Overrides[k]
	}
	if len(parts) == 0 {
		return t.Kind
	}
	return t.Kind + ":" + strings.Join(parts, ",")
}

// Broker is a running ringbroker process started by ringbench.
type Broker struct {
	Addr    string
	DataDir string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartBroker starts bin with config and the target's overrides on a free
// port, its log in dataDir, and waits until it answers Metadata.
func StartBroker(ctx context.Context, bin, config, dataDir string, t Target) (*Broker, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("cannot find a free port: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{config,
		"--override", "listeners=PLAINTEXT://" + addr,
		"--override", "log.dirs=" + filepath.Join(dataDir, "log"),
	}
	keys := make([]string, 0, len(t.Overrides))
	for k := range t.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--override", k+"="+t.Overrides[k])
	}
	logPath := filepath.Join(filepath.Dir(dataDir), filepath.Base(dataDir)+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("cannot start %s: %w", bin, err)
	}
	b := &Broker{Addr: addr, DataDir: dataDir, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() { b.waitErr = cmd.Wait(); lf.Close(); close(b.exited) }()

	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := pingKafka(ctx, addr); err == nil {
			return b, nil
		} else if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("broker at %s not ready after 20s: %v; log tail:\n%s", addr, err, b.LogTail(2000))
		}
		select {
		case <-b.exited:
			return nil, fmt.Errorf("broker exited during start-up: %v; log tail:\n%s", b.waitErr, b.LogTail(2000))
		case <-ctx.Done():
			b.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func pingKafka(ctx context.Context, addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return cl.Ping(pctx)
}

// Pid is the broker's process id.
func (b *Broker) Pid() int { return b.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (b *Broker) Exited() bool {
	select {
	case <-b.exited:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to 10 s, then SIGKILLs.
func (b *Broker) Stop() {
	if b.Exited() {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
}

// LogTail returns the last n bytes of the broker's output.
func (b *Broker) LogTail(n int) string {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return ""
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// ProcStat is a process's CPU time and memory, read from /proc.
type ProcStat struct {
	CPUSeconds float64 // utime + stime
	RSSBytes   int64   // VmRSS
	HWMBytes   int64   // VmHWM: peak RSS
}

// clkTck is USER_HZ; 100 on every Linux architecture Go supports in practice.
const clkTck = 100

// ReadProcStat reads utime+stime from /proc/<pid>/stat and VmRSS/VmHWM from
// /proc/<pid>/status. pid 0 means this process.
func ReadProcStat(pid int) (ProcStat, error) {
	p := "self"
	if pid > 0 {
		p = strconv.Itoa(pid)
	}
	var s ProcStat
	data, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return s, err
	}
	// The command name may contain spaces: fields start after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return s, fmt.Errorf("cannot parse /proc/%s/stat", p)
	}
	f := strings.Fields(string(data[i+1:]))
	// After ')': state(3) ... utime is field 14, stime 15 (1-based over the
	// whole line), so indexes 11 and 12 here.
	if len(f) < 13 {
		return s, fmt.Errorf("cannot parse /proc/%s/stat: %d fields", p, len(f))
	}
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	s.CPUSeconds = float64(ut+st) / clkTck
	status, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fs[0], 10, 64)
		switch k {
		case "VmRSS":
			s.RSSBytes = n << 10
		case "VmHWM":
			s.HWMBytes = n << 10
		}
	}
	return s, nil
}
