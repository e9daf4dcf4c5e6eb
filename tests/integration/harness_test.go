package integration

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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	buildTimeout    = 5 * time.Minute
	readyTimeout    = 30 * time.Second
	stopTimeout     = 30 * time.Second
	killTimeout     = 10 * time.Second
	pollInterval    = 50 * time.Millisecond
	logTailBytes    = 16 << 10
	logTailMaxLines = 80
)

// buildState is the broker binary built once per test binary run.
var buildState struct {
	once sync.Once
	dir  string // temporary directory holding the binary; removed by TestMain
	root string // repository root
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildState.dir != "" {
		os.RemoveAll(buildState.dir)
	}
	os.Exit(code)
}

// repoRoot returns the module root: the directory of `go env GOMOD`, or the
// first directory holding go.mod walking up from the working directory.
func repoRoot() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output(); err == nil {
		gomod := strings.TrimSpace(string(out))
		if gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot get working directory: %w", err)
	}
	for range 64 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("cannot find go.mod above the working directory")
}

// brokerBinary builds tools/ringbroker once (or takes RB_BROKER_BIN) and
// returns the binary's path and the repository root.
func brokerBinary(t testing.TB) (bin, root string) {
	t.Helper()
	buildState.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			buildState.err = err
			return
		}
		buildState.root = root
		if prebuilt := os.Getenv("RB_BROKER_BIN"); prebuilt != "" {
			buildState.bin, buildState.err = filepath.Abs(prebuilt)
			return
		}
		dir, err := os.MkdirTemp("", "ringbroker-it-")
		if err != nil {
			buildState.err = fmt.Errorf("cannot create build directory: %w", err)
			return
		}
		buildState.dir = dir
		bin := filepath.Join(dir, "ringbroker")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./tools/ringbroker")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildState.err = fmt.Errorf("cannot build ./tools/ringbroker in %s: %w\n%s", root, err, out)
			return
		}
		buildState.bin = bin
	})
	if buildState.err != nil {
		t.Fatalf("broker binary: %v", buildState.err)
	}
	return buildState.bin, buildState.root
}

// Broker is one ringbroker process started by a test. Its methods report
// through the test that started it; call them from that test's goroutine.
type Broker struct {
	t         *testing.T
	bin       string
	root      string
	config    string
	Port      int
	Addr      string // 127.0.0.1:Port
	DataDir   string
	logDir    string
	overrides []string

	starts   int
	logPaths []string
	cmd      *exec.Cmd
	logFile  *os.File
	done     chan struct{} // closed when the current process has been waited for
	waitErr  error
}

// startBroker starts a broker on a free 127.0.0.1 port with the repository's
// config/server.properties, log.dirs=dataDir (a fresh temporary directory when
// dataDir is empty), the engine from RB_ENGINE/RB_IO_MODE/RB_SHARDS and then
// overrides ("key=value", later ones win). It returns once the broker answers
// ApiVersions and Metadata. At the end of the test a running broker is stopped
// with SIGTERM and must exit 0; if the test failed, the tail of every broker
// log is printed.
func startBroker(t *testing.T, dataDir string, overrides ...string) *Broker {
	t.Helper()
	bin, root := brokerBinary(t)
	// Temporary directories first: t.Cleanup runs last-in first-out, so they
	// are removed after the cleanup below has printed the logs.
	logDir := t.TempDir()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	b := &Broker{
		t:         t,
		bin:       bin,
		root:      root,
		config:    configPath(t, root, logDir),
		Port:      freePort(t),
		DataDir:   dataDir,
		logDir:    logDir,
		overrides: overrides,
	}
	b.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	t.Cleanup(b.cleanup)
	b.Start()
	return b
}

// configPath returns the repository's config/server.properties, or, while that
// file has not been written yet, a minimal stand-in under dir.
func configPath(t *testing.T, root, dir string) string {
	t.Helper()
	p := filepath.Join(root, "config", "server.properties")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	t.Logf("harness: %s is missing; using a minimal stand-in", p)
	p = filepath.Join(dir, "server.properties")
	const minimal = "node.id=1\nprocess.roles=broker,controller\n" +
		"listeners=PLAINTEXT://127.0.0.1:9092\nlog.dirs=./data\n" +
		"num.partitions=1\nauto.create.topics.enable=true\n"
	if err := os.WriteFile(p, []byte(minimal), 0o644); err != nil {
		t.Fatalf("cannot write %s: %v", p, err)
	}
	return p
}

// freePort returns a 127.0.0.1 TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// args returns the broker's command line.
func (b *Broker) args() []string {
	listener := fmt.Sprintf("PLAINTEXT://%s", b.Addr)
	ov := []string{
		"listeners=" + listener,
		"advertised.listeners=" + listener,
		"log.dirs=" + b.DataDir,
	}
	for _, e := range []struct{ env, key string }{
		{"RB_ENGINE", "io.engine"},
		{"RB_IO_MODE", "log.io.mode"},
		{"RB_SHARDS", "shards"},
	} {
		if v := os.Getenv(e.env); v != "" {
			ov = append(ov, e.key+"="+v)
		}
	}
	ov = append(ov, b.overrides...)
	args := []string{b.config}
	for _, o := range ov {
		args = append(args, "--override", o)
	}
	return args
}

// Running reports whether the broker process is started and has not exited.
func (b *Broker) Running() bool {
	if b.cmd == nil {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// Start starts the broker process (on the same port and data directory as
// before, after Stop or Kill) and waits until it serves requests.
func (b *Broker) Start() {
	b.t.Helper()
	if b.Running() {
		b.t.Fatalf("broker %s: Start while running", b.Addr)
	}
	b.starts++
	path := filepath.Join(b.logDir, fmt.Sprintf("broker-%d.log", b.starts))
	f, err := os.Create(path)
	if err != nil {
		b.t.Fatalf("cannot create broker log: %v", err)
	}
	b.logPaths = append(b.logPaths, path)
	b.logFile = f
	cmd := exec.Command(b.bin, b.args()...)
	cmd.Dir = b.root
	cmd.Stdout = f
	cmd.Stderr = f
	// The broker must not outlive a test binary that dies (timeout panic).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(f, "# harness: %s %s\n", b.bin, strings.Join(cmd.Args[1:], " "))
	if err := cmd.Start(); err != nil {
		f.Close()
		b.t.Fatalf("cannot start broker: %v", err)
	}
	b.cmd = cmd
	done := make(chan struct{})
	b.done = done
	go func() {
		b.waitErr = cmd.Wait()
		f.Close()
		close(done)
	}()
	b.waitReady()
}

// waitReady polls until a TCP connect, ApiVersions and Metadata succeed, the
// process exits, or readyTimeout passes.
func (b *Broker) waitReady() {
	b.t.Helper()
	start := time.Now()
	deadline := start.Add(readyTimeout)
	var lastErr error
	for attempt := 0; attempt < int(readyTimeout/pollInterval)+1; attempt++ {
		if !b.Running() {
			b.t.Fatalf("broker %s exited during start-up (%s); last probe error: %v", b.Addr, b.exitDesc(), lastErr)
		}
		if time.Now().After(deadline) {
			break
		}
		if lastErr = b.probe(); lastErr == nil {
			b.t.Logf("broker %s ready after %v (start %d)", b.Addr, time.Since(start).Round(time.Millisecond), b.starts)
			b.checkEngine()
			return
		}
		select {
		case <-b.done:
		case <-time.After(pollInterval):
		}
	}
	b.t.Fatalf("broker %s not ready after %v: %v", b.Addr, readyTimeout, lastErr)
}

// checkEngine fails the test when RB_ENGINE or RB_IO_MODE asked for an
// engine or mode that the broker's start-up line ("ringbroker listening ...
// io.engine=X log.io.mode=Y") says it is not running, so that a per-engine
// rerun of the suite cannot silently test the fallback instead. A broker
// that does not log such a line is not checked.
func (b *Broker) checkEngine() {
	b.t.Helper()
	data, err := os.ReadFile(b.logPaths[len(b.logPaths)-1])
	if err != nil {
		return
	}
	var line string
	for l := range strings.Lines(string(data)) {
		if strings.Contains(l, "ringbroker listening") {
			line = l
		}
	}
	for _, e := range []struct{ env, key string }{{"RB_ENGINE", "io.engine"}, {"RB_IO_MODE", "log.io.mode"}} {
		want := os.Getenv(e.env)
		if want == "" || want == "auto" {
			continue
		}
		for f := range strings.FieldsSeq(line) {
			if got, ok := strings.CutPrefix(f, e.key+"="); ok && got != want {
				b.t.Fatalf("%s=%s asked for %s=%s, but the broker runs %s=%s", e.env, want, e.key, want, e.key, got)
			}
		}
	}
}

// probe checks that the broker accepts a connection and answers ApiVersions
// and Metadata listing node 1 at its address.
func (b *Broker) probe() error {
	conn, err := net.DialTimeout("tcp", b.Addr, time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr),
		kgo.DialTimeout(time.Second),
		kgo.RequestRetries(0),
		kgo.DisableIdempotentWrite(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(b.t.Context(), 3*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	for _, v := range vs {
		if v.Err != nil {
			return fmt.Errorf("ApiVersions from node %d: %w", v.NodeID, v.Err)
		}
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("Metadata: %w", err)
	}
	for _, br := range md.Brokers {
		if br.NodeID == 1 && br.Port == int32(b.Port) {
			return nil
		}
	}
	return fmt.Errorf("Metadata brokers %v do not list node 1 at %s", md.Brokers, b.Addr)
}

// Stop sends SIGTERM, waits for the process and asserts exit status 0.
func (b *Broker) Stop() {
	b.t.Helper()
	if err := b.stop(); err != nil {
		b.t.Errorf("broker %s: %v", b.Addr, err)
	}
}

func (b *Broker) stop() error {
	if !b.Running() {
		return fmt.Errorf("Stop: broker not running (%s)", b.exitDesc())
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("cannot send SIGTERM: %w", err)
	}
	select {
	case <-b.done:
	case <-time.After(stopTimeout):
		b.cmd.Process.Kill()
		<-b.done
		return fmt.Errorf("did not exit within %v of SIGTERM; killed", stopTimeout)
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("exit after SIGTERM: %s, want status 0", b.exitDesc())
	}
	return nil
}

// Kill sends SIGKILL and waits for the process to go.
func (b *Broker) Kill() {
	b.t.Helper()
	if !b.Running() {
		b.t.Fatalf("broker %s: Kill while not running (%s)", b.Addr, b.exitDesc())
	}
	b.cmd.Process.Kill()
	select {
	case <-b.done:
	case <-time.After(killTimeout):
		b.t.Fatalf("broker %s: still running %v after SIGKILL", b.Addr, killTimeout)
	}
}

// Restart stops the broker cleanly (SIGTERM, exit 0) and starts it again on
// the same port and data directory.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	b.Start()
}

// exitDesc describes how the last process ended.
func (b *Broker) exitDesc() string {
	if b.cmd == nil {
		return "never started"
	}
	select {
	case <-b.done:
	default:
		return "running"
	}
	ps := b.cmd.ProcessState
	if ps == nil {
		return fmt.Sprintf("wait error: %v", b.waitErr)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %v", ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}

// cleanup stops a running broker (exit status 0 required unless the test has
// already failed, then it is killed) and prints the tail of every broker log
// of a failed test (so failure messages need not carry it).
func (b *Broker) cleanup() {
	if b.Running() {
		if b.t.Failed() {
			b.cmd.Process.Kill()
			select {
			case <-b.done:
			case <-time.After(killTimeout):
			}
		} else if err := b.stop(); err != nil {
			b.t.Errorf("broker %s at end of test: %v", b.Addr, err)
		}
	}
	if b.t.Failed() {
		for _, p := range b.logPaths {
			b.t.Logf("---- tail of %s ----\n%s", filepath.Base(p), tailFile(p))
		}
	}
}

// tail returns the end of the current process's log.
func (b *Broker) tail() string {
	if len(b.logPaths) == 0 {
		return ""
	}
	p := b.logPaths[len(b.logPaths)-1]
	return fmt.Sprintf("---- tail of %s ----\n%s", filepath.Base(p), tailFile(p))
}

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
