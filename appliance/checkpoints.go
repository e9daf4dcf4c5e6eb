package appliance

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ringbroker/ringbroker/nvme"
)

// tpName names a partition by topic name, as Kafka's checkpoint files do
// (the log manager's start offsets at open).
type tpName struct {
	topic string
	p     int32
}

// loadOrWriteMetaProperties reads <log.dirs>/meta.properties (Kafka's
// format: version, cluster.id, node.id) or writes it on first start. A
// node.id that differs from the config is refused, as Kafka does.
func (b *Broker) loadOrWriteMetaProperties() error {
	path := filepath.Join(b.cfg.LogDir, "meta.properties")
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		props, err := ParseProperties(f)
		if err != nil {
			return fmt.Errorf("cannot read %q: %w", path, err)
		}
		if id := props["node.id"]; id != "" && id != strconv.Itoa(int(b.cfg.NodeID)) {
			return fmt.Errorf("cannot start: %q has node.id=%s but the config has node.id=%d", path, id, b.cfg.NodeID)
		}
		if b.cfg.ClusterID == "" {
			b.cfg.ClusterID = props["cluster.id"]
		}
		return nil
	}
	if !os.IsNotExist(err) {
		return fmt.Errorf("cannot open %q: %w", path, err)
	}
	if b.cfg.ClusterID == "" {
		var id [16]byte
		_, _ = rand.Read(id[:])
		b.cfg.ClusterID = base64.RawURLEncoding.EncodeToString(id[:])
	}
	body := fmt.Sprintf("#\n#ringbroker\nversion=1\ncluster.id=%s\nnode.id=%d\n", b.cfg.ClusterID, b.cfg.NodeID)
	return nvme.WriteFileAtomic(path, []byte(body))
}

const logStartCheckpoint = "log-start-offset-checkpoint"

// readLogStartOffsets reads Kafka's log-start-offset-checkpoint
// (nvme.ReadOffsetCheckpoint).
func (b *Broker) readLogStartOffsets() map[tpName]int64 {
	out := map[tpName]int64{}
	for tp, o := range nvme.ReadOffsetCheckpoint(filepath.Join(b.cfg.LogDir, logStartCheckpoint)) {
		out[tpName{tp.Topic, tp.Partition}] = o
	}
	return out
}

// writeLogStartOffsets checkpoints every open partition's log start offset.
func (b *Broker) writeLogStartOffsets() {
	b.store.lsoMu.Lock()
	defer b.store.lsoMu.Unlock()
	offs := map[nvme.TopicPartition]int64{}
	for _, st := range b.shards {
		st.loop.Call(func() {
			for _, p := range st.parts {
				if p.log != nil {
					offs[nvme.TopicPartition{Topic: p.topic, Partition: p.index}] = p.log.LogStartOffset()
				}
			}
		})
	}
	if err := nvme.WriteOffsetCheckpoint(filepath.Join(b.cfg.LogDir, logStartCheckpoint), offs); err != nil {
		b.log.Error("cannot write log start offset checkpoint", "err", err)
	}
}

// removeOrphanPartitionDirs deletes directories of deleted topics
// ("<topic>-<p>.<id>-delete", as Kafka names them) left by a crash.
func (b *Broker) removeOrphanPartitionDirs(im *Image) {
	ents, err := os.ReadDir(b.cfg.LogDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasSuffix(e.Name(), "-delete") {
			if err := os.RemoveAll(filepath.Join(b.cfg.LogDir, e.Name())); err != nil {
				b.log.Warn("cannot remove deleted partition directory", "dir", e.Name(), "err", err)
			}
		}
	}
}
