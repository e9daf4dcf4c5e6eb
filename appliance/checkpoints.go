package appliance

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// tpName names a partition by topic name, as Kafka's checkpoint files do.
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
	return writeFileAtomic(path, []byte(body))
}

// writeFileAtomic writes body to path through a synced temp file and rename.
func writeFileAtomic(path string, body []byte) (err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp) // a full disk's failure leaves no stray file
		}
	}()
	if _, err := f.Write(body); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %q: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot sync %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot close %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot rename %q: %w", tmp, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

const logStartCheckpoint = "log-start-offset-checkpoint"

// readLogStartOffsets reads Kafka's log-start-offset-checkpoint: "0",
// a count, then "topic partition offset" lines.
func (b *Broker) readLogStartOffsets() map[tpName]int64 {
	out := map[tpName]int64{}
	f, err := os.Open(filepath.Join(b.cfg.LogDir, logStartCheckpoint))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		if line <= 2 {
			continue
		}
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		p, err1 := strconv.ParseInt(fs[1], 10, 32)
		o, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 == nil && err2 == nil {
			out[tpName{fs[0], int32(p)}] = o
		}
	}
	return out
}

// writeLogStartOffsets checkpoints every open partition's log start offset.
func (b *Broker) writeLogStartOffsets() {
	b.store.lsoMu.Lock()
	defer b.store.lsoMu.Unlock()
	var lines []string
	for _, st := range b.shards {
		var local []string
		st.loop.Call(func() {
			for _, p := range st.parts {
				if p.log != nil {
					local = append(local, fmt.Sprintf("%s %d %d", p.topic, p.index, p.log.LogStartOffset()))
				}
			}
		})
		lines = append(lines, local...)
	}
	sort.Strings(lines)
	body := fmt.Sprintf("0\n%d\n%s", len(lines), strings.Join(lines, "\n"))
	if len(lines) > 0 {
		body += "\n"
	}
	if err := writeFileAtomic(filepath.Join(b.cfg.LogDir, logStartCheckpoint), []byte(body)); err != nil {
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
