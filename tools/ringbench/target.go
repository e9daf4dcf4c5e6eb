package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
// with overrides, a peer started by ringbench (kfake, NATS JetStream), or
// an external Kafka cluster at Brokers.
type Target struct {
	// Name is how the target shows in reports: "ringbroker:k=v,...",
	// "kfake", "nats" or "external:host:port".
	Name      string            `json:"name"`
	Kind      string            `json:"kind"` // "ringbroker", "kfake", "nats" or "external"
	Overrides map[string]string `json:"overrides,omitempty"`
	Brokers   []string          `json:"brokers,omitempty"`
}

// ParseTarget reads "ringbroker[:k=v,k=v]", "kfake[:k=v]", "nats[:k=v]" or
// "external:host:port[,host:port]". ringbroker's keys are server.properties
// overrides; kfake takes sync-writes=true (persist to the run's data
// directory and fsync every batch; in memory by default); nats takes
// sync=acks|always|default (JetStream's sync_interval: "acks", the
// default, fsyncs every write for acks=all workloads only).
func ParseTarget(s string) (Target, error) {
	kind, rest, _ := strings.Cut(s, ":")
	switch kind {
	case "ringbroker", "kfake", "nats":
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
		for k, v := range t.Overrides {
			switch {
			case kind == "kfake" && k == "sync-writes" && (v == "true" || v == "false"):
			case kind == "nats" && k == "sync" && (v == "acks" || v == "always" || v == "default"):
			case kind == "ringbroker":
			default:
				return Target{}, fmt.Errorf("cannot parse target %q: unknown setting %s=%s for %s", s, k, v, kind)
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
	return Target{}, fmt.Errorf("cannot parse target %q: want ringbroker:k=v,..., kfake, nats or external:host:port", s)
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
	return startProc(ctx, bin, args, dataDir, addr, pingKafka)
}

// StartKfake starts the kfake peer (bench/peers/cmd/kfake) on a free port
// and waits until it answers Metadata.
func StartKfake(ctx context.Context, bin, dataDir string, t Target) (*Broker, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("cannot find a free port: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port)}
	if t.Overrides["sync-writes"] == "true" {
		args = append(args, "--data-dir", filepath.Join(dataDir, "log"), "--sync-writes")
	}
	return startProc(ctx, bin, args, dataDir, fmt.Sprintf("127.0.0.1:%d", port), pingKafka)
}

// StartNATS starts nats-server with JetStream (file store under dataDir) on
// a free loopback port and waits until it greets a client. syncAlways sets
// sync_interval: always (fsync every write); otherwise the server's
// default (every 2 minutes) applies.
func StartNATS(ctx context.Context, bin, dataDir string, syncAlways bool) (*Broker, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("cannot find a free port: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	js := fmt.Sprintf("store_dir: %q", filepath.Join(dataDir, "jetstream"))
	if syncAlways {
		js += ", sync_interval: always"
	}
	conf := fmt.Sprintf("listen: %s\nmax_payload: 8MB\njetstream { %s }\n", addr, js)
	confPath := filepath.Join(dataDir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return startProc(ctx, bin, []string{"-c", confPath}, dataDir, addr, pingNATS)
}

// pingNATS dials addr and reads the server's INFO greeting.
func pingNATS(ctx context.Context, addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "INFO" {
		return fmt.Errorf("nats at %s greeted with %q, want INFO", addr, buf)
	}
	return nil
}

// startProc starts bin with args, its output in <dataDir>.log, and polls
// ready(addr) every 100 ms for up to 20 s.
func startProc(ctx context.Context, bin string, args []string, dataDir, addr string, ready func(context.Context, string) error) (*Broker, error) {
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
		if err := ready(ctx, addr); err == nil {
			return b, nil
		} else if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("%s at %s not ready after 20s: %v; log tail:\n%s", filepath.Base(bin), addr, err, b.LogTail(2000))
		}
		select {
		case <-b.exited:
			return nil, fmt.Errorf("%s exited during start-up: %v; log tail:\n%s", filepath.Base(bin), b.waitErr, b.LogTail(2000))
		case <-ctx.Done():
			b.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// EngineLine returns the io.engine and log.io.mode a ringbroker reports in
// its "ringbroker listening" log line, waiting up to 2 s for the line.
func (b *Broker) EngineLine() (engine, mode string, ok bool) {
	for deadline := time.Now().Add(2 * time.Second); ; {
		data, _ := os.ReadFile(b.logPath)
		for l := range strings.Lines(string(data)) {
			if !strings.Contains(l, "ringbroker listening") {
				continue
			}
			for f := range strings.FieldsSeq(l) {
				if v, found := strings.CutPrefix(f, "io.engine="); found {
					engine, ok = strings.Trim(v, `"`), true
				}
				if v, found := strings.CutPrefix(f, "log.io.mode="); found {
					mode = strings.Trim(v, `"`)
				}
			}
		}
		if ok || time.Now().After(deadline) || b.Exited() {
			return engine, mode, ok
		}
		time.Sleep(50 * time.Millisecond)
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
