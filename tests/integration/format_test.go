package integration

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
)

// runBinary runs the broker binary with args from the repository root and
// returns its combined output and exit code; it fails the test when the
// binary does not exit within the timeout.
func runBinary(t *testing.T, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	bin, root := brokerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("ringbroker %q did not exit within %v; output:\n%s", args, timeout, out)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("ringbroker %q: %v", args, err)
	return "", -1
}

// quorumProps writes a server.properties for node 1, the one voter of
// controller.quorum.voters (a node of a larger quorum does not serve
// before a majority elects a leader), combined broker and controller, with its data in dataDir and its
// client listener on addr. It returns the file and the node's controller
// listener address.
func quorumProps(t *testing.T, dataDir, addr string) (string, string) {
	t.Helper()
	ctl := "127.0.0.1:" + strconv.Itoa(freePort(t))
	body := strings.Join([]string{
		"node.id=1",
		"process.roles=broker,controller",
		"controller.quorum.voters=1@" + ctl,
		"controller.listener.names=CONTROLLER",
		"listeners=PLAINTEXT://" + addr + ",CONTROLLER://" + ctl,
		"advertised.listeners=PLAINTEXT://" + addr,
		"log.dirs=" + dataDir,
		"metrics.listener=none",
	}, "\n") + "\n"
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, ctl
}

// TestFormatAndQuorumStart runs the real binary: random-uuid prints a
// Kafka UUID; a node configured with controller.quorum.voters refuses to
// start on an unformatted directory (exit != 0, naming ringbroker format,
// writing nothing); format writes meta.properties, a second format is
// refused with exit 1 unless --ignore-formatted; then the node starts on
// the formatted directory with the formatted cluster id.
func TestFormatAndQuorumStart(t *testing.T) {
	out, code := runBinary(t, time.Minute, "random-uuid")
	cid := strings.TrimSpace(out)
	if code != 0 || len(cid) != 22 {
		t.Fatalf("random-uuid: exit %d, output %q", code, out)
	}
	if _, err := nvme.ParseUUID(cid); err != nil {
		t.Fatal(err)
	}
	if out, code := runBinary(t, time.Minute, "--version"); code != 0 || !strings.HasPrefix(out, "ringbroker ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}

	data := t.TempDir()
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	props, ctl := quorumProps(t, data, addr)

	out, code = runBinary(t, time.Minute, props)
	if code == 0 || !strings.Contains(out, "not formatted") || !strings.Contains(out, "ringbroker format") {
		t.Fatalf("start on an unformatted directory with voters: exit %d, output:\n%s", code, out)
	}
	if strings.Contains(out, "ringbroker listening") {
		t.Errorf("the refused node served:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, nvme.MetaPropertiesFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start wrote meta.properties: %v", err)
	}

	if out, code := runBinary(t, time.Minute, "format", "--cluster-id", "not-a-uuid", props); code != 1 || !strings.Contains(out, "valid UUID") {
		t.Errorf("format with a bad cluster id: exit %d\n%s", code, out)
	}
	out, code = runBinary(t, time.Minute, "format", "--cluster-id", cid, props)
	if code != 0 || !strings.Contains(out, "Formatting metadata directory "+data) {
		t.Fatalf("format: exit %d\n%s", code, out)
	}
	m, err := nvme.ReadMetaProperties(data)
	if err != nil || m.Version != 1 || m.ClusterID != cid || m.NodeID != 1 || m.DirectoryID.IsZero() {
		t.Fatalf("formatted meta.properties %+v, %v", m, err)
	}
	out, code = runBinary(t, time.Minute, "format", "--cluster-id", cid, props)
	if code != 1 || !strings.Contains(out, "already formatted") || !strings.Contains(out, "--ignore-formatted") {
		t.Fatalf("second format: exit %d, want 1 naming --ignore-formatted\n%s", code, out)
	}
	if out, code := runBinary(t, time.Minute, "format", "--ignore-formatted", "--cluster-id", cid, props); code != 0 ||
		!strings.Contains(out, "already formatted") {
		t.Fatalf("format --ignore-formatted: exit %d\n%s", code, out)
	}
	if again, _ := nvme.ReadMetaProperties(data); again != m {
		t.Fatalf("a second format changed meta.properties: %+v, was %+v", again, m)
	}

	// Formatted, the node starts and serves with the formatted cluster id.
	bin, root := brokerBinary(t)
	b := &Broker{t: t, bin: bin, root: root, config: props, Port: port, Addr: addr, DataDir: data, logDir: t.TempDir(),
		// The harness sets listeners to the client listener alone; the
		// node's controller listener is added back.
		overrides: []string{"listeners=PLAINTEXT://" + addr + ",CONTROLLER://" + ctl}}
	t.Cleanup(b.cleanup)
	b.Start()
	adm := newAdmin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Cluster != cid {
		t.Errorf("cluster id %q, formatted %s", meta.Cluster, cid)
	}
	for _, br := range meta.Brokers {
		if br.Port != int32(port) {
			t.Errorf("Metadata lists broker %+v: the controller listener must not be advertised", br)
		}
	}
}

// TestSelfFormatWithoutVoters: a node without voters formats its
// directory on first start, as before format existed (make run), with a
// Kafka cluster id and a directory.id, and keeps both across a restart.
func TestSelfFormatWithoutVoters(t *testing.T) {
	data := t.TempDir()
	b := startBroker(t, data, "metrics.listener=none")
	m, err := nvme.ReadMetaProperties(data)
	if err != nil || m.Version != 1 || m.NodeID != 1 || m.DirectoryID.IsZero() {
		t.Fatalf("meta.properties %+v, %v", m, err)
	}
	if _, err := nvme.ParseUUID(m.ClusterID); err != nil {
		t.Fatalf("cluster id %q: %v", m.ClusterID, err)
	}
	b.Restart()
	if again, err := nvme.ReadMetaProperties(data); err != nil || again != m {
		t.Fatalf("after a restart: %+v, %v; was %+v", again, err, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meta, err := newAdmin(t, b).Metadata(ctx)
	if err != nil || meta.Cluster != m.ClusterID {
		t.Fatalf("Metadata cluster %q, %v; meta.properties %s", meta.Cluster, err, m.ClusterID)
	}
}
