package appliance

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
)

// startMeta builds a broker on dir with props and starts it, returning
// Start's error; a started broker is closed at the end of the test.
func startMeta(t *testing.T, dir string, props map[string]string) (*Broker, error) {
	t.Helper()
	p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir, "shards": "1",
		"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1", "metrics.listener": "none", "log.cleaner.enable": "false"}
	for k, v := range props {
		p[k] = v
	}
	cfg, err := ConfigFromProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { b.Close() })
	return b, nil
}

// TestStartMetaProperties: the start-up rules of meta.properties. A node
// without voters formats itself (with a directory.id); a node with voters
// refuses an unformatted directory and starts on a formatted one; a
// node.id or cluster.id that differs from the file is refused; an older
// file without directory.id gets one and keeps its cluster.id.
func TestStartMetaProperties(t *testing.T) {
	quorum := map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.quorum.voters": "1@127.0.0.1:19093",
		"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:19093", "controller.listener.names": "CONTROLLER"}

	t.Run("self-format without voters", func(t *testing.T) {
		dir := t.TempDir()
		b, err := startMeta(t, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := nvme.ReadMetaProperties(dir)
		if err != nil || m.Version != 1 || m.NodeID != 1 || m.ClusterID != b.Config().ClusterID || m.DirectoryID.IsZero() {
			t.Fatalf("meta.properties %+v, %v (broker cluster id %q)", m, err, b.Config().ClusterID)
		}
		if _, err := nvme.ParseUUID(m.ClusterID); err != nil {
			t.Errorf("generated cluster id: %v", err)
		}
	})

	t.Run("voters refuse an unformatted directory", func(t *testing.T) {
		dir := t.TempDir()
		_, err := startMeta(t, dir, quorum)
		if !errors.Is(err, ErrNotFormatted) || !strings.Contains(err.Error(), "ringbroker format") {
			t.Fatalf("Start = %v, want ErrNotFormatted naming ringbroker format", err)
		}
		if _, err := os.Stat(filepath.Join(dir, nvme.MetaPropertiesFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a refused start left meta.properties: %v", err)
		}
		// Formatted, the same node starts (the lock of the refused start is gone).
		id, _ := nvme.RandomUUID()
		did, _ := nvme.RandomDirectoryID()
		if err := nvme.WriteMetaProperties(dir, nvme.MetaProperties{Version: 1, ClusterID: id.String(), NodeID: 1, DirectoryID: did}); err != nil {
			t.Fatal(err)
		}
		b, err := startMeta(t, dir, quorum)
		if err != nil {
			t.Fatal(err)
		}
		if b.Config().ClusterID != id.String() {
			t.Errorf("cluster id %q, formatted %s", b.Config().ClusterID, id)
		}
		if m, _ := nvme.ReadMetaProperties(dir); m.DirectoryID != did {
			t.Errorf("directory.id changed: %s, formatted %s", m.DirectoryID, did)
		}
	})

	t.Run("bootstrap servers refuse an unformatted directory", func(t *testing.T) {
		p := map[string]string{"controller.quorum.bootstrap.servers": "127.0.0.1:19093",
			"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:19093", "controller.listener.names": "CONTROLLER"}
		if _, err := startMeta(t, t.TempDir(), p); !errors.Is(err, ErrNotFormatted) {
			t.Fatalf("Start = %v, want ErrNotFormatted", err)
		}
	})

	t.Run("mismatches refused", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, nvme.MetaPropertiesFile), []byte("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := startMeta(t, dir, map[string]string{"node.id": "2"}); err == nil || !strings.Contains(err.Error(), "node.id") {
			t.Errorf("node.id 2 on a node 1 directory: %v", err)
		}
		if _, err := startMeta(t, dir, map[string]string{"cluster.id": "QUFBQUFBQUFBQUFBQUFBQQ"}); err == nil || !strings.Contains(err.Error(), "cluster.id") {
			t.Errorf("another cluster.id: %v", err)
		}
	})

	t.Run("older file gains directory.id", func(t *testing.T) {
		dir := t.TempDir()
		const old = "#\n#ringbroker\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\n"
		if err := os.WriteFile(filepath.Join(dir, nvme.MetaPropertiesFile), []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := startMeta(t, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := nvme.ReadMetaProperties(dir)
		if err != nil || m.ClusterID != "MkU3OEVBNTcwNTJENDM2Qg" || m.NodeID != 1 || m.DirectoryID.IsZero() || b.Config().ClusterID != m.ClusterID {
			t.Fatalf("after start: %+v, %v", m, err)
		}
	})
}

// TestConfigCluster: ConfigFromProperties types the cluster section and
// log.dirs; a node with none of the cluster keys is unchanged; a
// controller-only node parses but New refuses it (not served yet).
func TestConfigCluster(t *testing.T) {
	c, err := ConfigFromProperties(map[string]string{"log.dirs": "/a, /b,/a"})
	if err != nil {
		t.Fatal(err)
	}
	if c.LogDir != "/a" || strings.Join(c.LogDirs, ",") != "/a,/b" || !c.Cluster.Broker || !c.Cluster.Controller ||
		c.Cluster.QuorumConfigured() || len(c.Listeners) != 1 || c.ListenAddr != "127.0.0.1:9092" {
		t.Fatalf("defaults: LogDirs %v, cluster %+v, listeners %+v", c.LogDirs, c.Cluster, c.Listeners)
	}

	c, err = ConfigFromProperties(map[string]string{"node.id": "2", "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.2:9093",
		"listeners": "CONTROLLER://127.0.0.2:9093,PLAINTEXT://127.0.0.2:9092", "controller.listener.names": "CONTROLLER",
		"advertised.listeners": "PLAINTEXT://broker2:9092"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 1 || c.Listeners[0].Name != "PLAINTEXT" || c.ListenAddr != "127.0.0.2:9092" || c.AdvertisedHost != "broker2" ||
		len(c.Cluster.ControllerListeners) != 1 || len(c.Cluster.Voters) != 2 {
		t.Fatalf("combined quorum node: listeners %+v, cluster %+v", c.Listeners, c.Cluster)
	}

	c, err = ConfigFromProperties(map[string]string{"node.id": "3", "process.roles": "controller", "controller.quorum.voters": "3@127.0.0.3:9093",
		"listeners": "CONTROLLER://127.0.0.3:9093", "controller.listener.names": "CONTROLLER", "log.dirs": t.TempDir()})
	if err != nil {
		t.Fatalf("controller-only node: %v", err)
	}
	if !c.Cluster.ControllerOnly() || len(c.Listeners) != 0 {
		t.Fatalf("controller-only: %+v", c)
	}
	if _, err := New(c, nil); err == nil || !strings.Contains(err.Error(), "controller-only") {
		t.Errorf("New(controller-only) = %v, want a refusal", err)
	}

	if _, err := ConfigFromProperties(map[string]string{"node.id": "4", "process.roles": "broker,controller",
		"controller.quorum.voters": "1@127.0.0.1:9093", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"}); err == nil ||
		!strings.Contains(err.Error(), "node.id 4") {
		t.Errorf("controller not among voters: %v", err)
	}
}
