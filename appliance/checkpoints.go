package appliance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ringbroker/ringbroker/nvme"
)

// tpName names a partition by topic name, as Kafka's checkpoint files do
// (the log manager's start offsets at open).
type tpName struct {
	topic string
	p     int32
}

// ErrNotFormatted is wrapped by Start's error when the node is configured
// to join a controller quorum (controller.quorum.voters or
// controller.quorum.bootstrap.servers) and its log directory has no
// meta.properties: such a node must be formatted with `ringbroker format`
// first, so that a wiped disk never founds a new cluster of its own.
var ErrNotFormatted = nvme.ErrNotFormatted

// loadOrWriteMetaProperties reads <log.dirs>/meta.properties (Kafka's
// format: version, cluster.id, node.id, directory.id; nvme.MetaDirs) and
// checks it against the config: a node.id or cluster.id that differs is
// refused, as Kafka does. An unformatted directory is formatted here, as
// ringbroker always did, unless the node is configured to join a quorum:
// then it is refused (ErrNotFormatted). A file without directory.id (written
// by an older ringbroker) gets one, as Kafka 3.7 and later add it at start:
// the id is what KIP-858 assigns partitions to directories by, and Kafka's
// own tools expect it.
func (b *Broker) loadOrWriteMetaProperties() error {
	md, err := nvme.LoadMetaDirs([]string{b.cfg.LogDir})
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	clusterID, wrote, err := md.Start(b.cfg.ClusterID, b.cfg.NodeID, b.cfg.Cluster.QuorumConfigured())
	if errors.Is(err, ErrNotFormatted) {
		return fmt.Errorf("cannot start: %w; a node with controller.quorum.voters or controller.quorum.bootstrap.servers set "+
			"never formats itself, so that a wiped disk does not found a new cluster: run `ringbroker format --cluster-id <id> "+
			"<server.properties>` first, with the cluster's id (a new cluster's from `ringbroker random-uuid`)", err)
	}
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	for _, d := range wrote {
		b.log.Info("wrote meta.properties", "dir", d, "cluster.id", clusterID, "node.id", b.cfg.NodeID, "directory.id", md.Props[d].DirectoryID.String())
	}
	b.cfg.ClusterID = clusterID
	return nil
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
