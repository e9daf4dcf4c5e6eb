package appliance

// The log manager: the listener of the metadata publisher (metadata.Publisher, Broker.publish) that
// owns this node's partition logs. It learns of partitions only from image
// deltas, whether the records behind them were proposed here, replayed from
// the metadata log at start, or (later) replicated by the quorum: it opens
// the partitions a delta creates, applies changed topic configs, and closes
// and deletes the partitions of removed topics.
//
// Placement is the node's own choice, not metadata: each partition it opens
// goes to the least-loaded shard (numa.PartitionShard) at that moment, in a
// fixed order (topics by name, partitions by index), so a start spreads
// them evenly whatever the history of creates and deletes. The placement
// table maps a partition to its owner shard and to the view any goroutine
// may read its offsets from (partView); it is copied on change and
// published through an atomic pointer, so the produce and fetch paths read
// it without locking. Changes run under the controller mutex (publish).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/numa"
)

// logManager opens, reconfigures and drops partitions from metadata deltas.
type logManager struct {
	b     *Broker
	table atomic.Pointer[placement]
	// load counts the partitions placed on each shard; guarded by the
	// controller mutex, like every change of the table.
	load []int
	// startOffsets are the log start offsets of the checkpoint read at
	// start (Broker.readLogStartOffsets), used by the first open of each partition.
	startOffsets map[tpName]int64
}

// placement is the table of placed partitions by topic id. It is immutable
// once published.
type placement struct {
	topics map[TopicID]*placedTopic
}

// placedTopic is where a topic's partitions live on this node, by index.
type placedTopic struct {
	shards []int32
	views  []*partView
}

func newLogManager(b *Broker) *logManager {
	lm := &logManager{b: b}
	lm.table.Store(&placement{topics: map[TopicID]*placedTopic{}})
	return lm
}

// placed returns where partition p of topic id lives, if it is placed.
func (lm *logManager) placed(id TopicID, p int32) (shard int32, view *partView, ok bool) {
	pt := lm.table.Load().topics[id]
	if pt == nil || p < 0 || int(p) >= len(pt.shards) {
		return 0, nil, false
	}
	return pt.shards[p], pt.views[p], true
}

// shardOf is the owner shard of partition p of topic id. A partition that
// is not placed (its topic was removed after the caller resolved it) maps
// to shard 0, where it is not open: the caller gets the error a closed
// partition gives.
func (lm *logManager) shardOf(id TopicID, p int32) *shardState {
	s, _, _ := lm.placed(id, p)
	return lm.b.shards[int(s)%len(lm.b.shards)]
}

// viewOf is the published view of partition p of topic id, or nil when it
// is not placed.
func (lm *logManager) viewOf(id TopicID, p int32) *partView {
	_, v, _ := lm.placed(id, p)
	return v
}

// Prepare (metadata.Preparer) adds the partitions of d to the table: each new partition gets the
// least-loaded shard and a fresh view. It runs before the image that names
// them is stored, so every reader of that image finds them placed.
func (lm *logManager) Prepare(_, im *Image, d *metadata.Delta) {
	if d.BrokerConfigs { // the topic defaults the partitions are reconfigured with in Publish
		lm.b.ctl.defaults.Update(configRegistry{}, lm.b.cfg.TopicDefaults, im, lm.b.cfg.NodeID)
		lm.b.store.cleaner.Reconfigure(metadata.CleanerWith(lm.b.cfg.Cleaner, im, lm.b.cfg.NodeID)) // nil before Start's startCleaner
	}
	if len(d.Added) == 0 {
		return
	}
	if lm.load == nil {
		lm.load = make([]int, len(lm.b.shards))
	}
	old := lm.table.Load()
	next := &placement{topics: make(map[TopicID]*placedTopic, len(old.topics)+len(d.Added))}
	for id, pt := range old.topics {
		next.topics[id] = pt
	}
	for _, a := range d.Added {
		pt := next.topics[a.Topic.ID]
		c := &placedTopic{}
		if pt != nil {
			c.shards = append(c.shards, pt.shards...)
			c.views = append(c.views, pt.views...)
		}
		for p := a.From; p < int32(len(a.Topic.Partitions)); p++ {
			if int(p) < len(c.shards) {
				continue // placed already (an image published again)
			}
			s := numa.PartitionShard(lm.load)
			lm.load[s]++
			c.shards = append(c.shards, int32(s))
			c.views = append(c.views, &partView{})
		}
		next.topics[a.Topic.ID] = c
	}
	lm.table.Store(next)
}

// unplace removes the removed topics of d from the table, once their
// partitions are closed.
func (lm *logManager) unplace(d *metadata.Delta) {
	if len(d.Removed) == 0 {
		return
	}
	old := lm.table.Load()
	next := &placement{topics: make(map[TopicID]*placedTopic, len(old.topics))}
	for id, pt := range old.topics {
		next.topics[id] = pt
	}
	for _, t := range d.Removed {
		if pt := next.topics[t.ID]; pt != nil {
			for _, s := range pt.shards {
				lm.load[int(s)%len(lm.load)]--
			}
			delete(next.topics, t.ID)
		}
	}
	lm.table.Store(next)
}

// Publish (metadata.Listener) carries out d on the shards after the image that holds it is
// stored: partitions of removed topics are closed and deleted, changed
// configs and leader epochs applied, new partitions opened. It waits for all of it. The
// error names the partitions that did not open (they stay offline: their
// views say so) and counts them.
func (lm *logManager) Publish(_, next *Image, d *metadata.Delta) error {
	for _, t := range d.Removed {
		lm.dropPartitions(t)
	}
	lm.unplace(d)
	for _, t := range d.Reconfigured {
		lm.reconfigure(t)
	}
	for _, t := range d.Releadered {
		lm.releader(t)
	}
	return lm.open(next, d.Added)
}

// open opens the added partitions that live on this node (next.Hosts) on
// their shards, all at once, and waits.
func (lm *logManager) open(next *Image, added []metadata.AddedPartitions) error {
	b := lm.b
	var openErrs []error // the first few, with a count: a join of thousands is slow to print
	failed := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, a := range added {
		t := a.Topic
		for p := a.From; p < int32(len(t.Partitions)); p++ {
			if !next.Hosts(&t.Partitions[p], b.cfg.NodeID) {
				continue
			}
			st := lm.shardOf(t.ID, p)
			view := lm.viewOf(t.ID, p)
			logStart := lm.startOffsets[tpName{t.Name, p}]
			wg.Add(1)
			st.loop.Post(func() {
				defer wg.Done()
				if err := b.openPartition(st, t, p, logStart, view); err != nil {
					// Offline in the metadata until a restart opens it.
					if view != nil {
						view.offline.Store(true)
					}
					mu.Lock()
					failed++
					if len(openErrs) < 5 {
						openErrs = append(openErrs, err)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if failed == 0 {
		return nil
	}
	if failed == 1 {
		return openErrs[0]
	}
	return fmt.Errorf("cannot open %d partitions, first ones: %w", failed, errors.Join(openErrs...))
}

// reconfigure gives t's open partitions t's configs.
func (lm *logManager) reconfigure(t *TopicImage) {
	b := lm.b
	cfg := b.topicConfig(t)
	for _, p := range t.Partitions {
		b.withPartition(t, p.Partition, func(part *partition) {
			if part != nil {
				part.cfg = cfg
				part.log.SetOptions(cfg.LogOptions(b.log, part.log.LogStartOffset()))
			}
		})
	}
}

// releader gives t's open partitions their leader epochs from the image
// (fencing moved leadership away and back); where this node leads, the
// log records the new epoch's start offset, as opening does.
func (lm *logManager) releader(t *TopicImage) {
	b := lm.b
	for _, pi := range t.Partitions {
		b.withPartition(t, pi.Partition, func(part *partition) {
			if part == nil || part.epoch == pi.LeaderEpoch {
				return
			}
			part.epoch = pi.LeaderEpoch
			if pi.Leader == b.cfg.NodeID && part.log != nil && part.offline == nil {
				if err := part.log.AssignEpoch(pi.LeaderEpoch, part.log.LogEndOffset()); err != nil {
					b.log.Warn("cannot record a partition's new leader epoch", "topic", t.Name, "partition", pi.Partition, "err", err)
				}
			}
			part.publishView()
		})
	}
}

// dropPartitions closes a removed topic's partitions on their shards and
// deletes their directories (renamed "<topic>-<p>.<id>-delete" first, as
// Kafka does, so a crash mid-way leaves nothing that looks live).
func (lm *logManager) dropPartitions(t *TopicImage) {
	b := lm.b
	var wg sync.WaitGroup
	for _, p := range t.Partitions {
		st := lm.shardOf(t.ID, p.Partition)
		wg.Add(1)
		st.loop.Post(func() {
			defer wg.Done()
			key := tpKey{t.ID, p.Partition}
			part := st.parts[key]
			delete(st.parts, key)
			if part != nil {
				_ = part.close()
			}
			dir := b.partitionDir(t.Name, p.Partition)
			gone := filepath.Join(b.cfg.LogDir, deletedPartitionDirName(t.Name, p.Partition, t.ID))
			err := os.Rename(dir, gone)
			switch {
			case err == nil:
				go func() {
					if err := os.RemoveAll(gone); err != nil {
						b.log.Warn("cannot remove deleted partition", "dir", gone, "err", err)
					}
				}()
			case os.IsNotExist(err):
			default:
				// The live name must not survive: a topic created again
				// under it would open the deleted records.
				b.log.Warn("cannot rename deleted partition; removing it in place", "dir", dir, "err", err)
				if err := os.RemoveAll(dir); err != nil {
					b.log.Error("cannot remove deleted partition", "dir", dir, "err", err)
				}
			}
		})
	}
	wg.Wait()
}

// maxFileNameBytes is the longest file name Linux file systems take
// (NAME_MAX).
const maxFileNameBytes = 255

// deletedPartitionDirName is "<topic>-<p>.<id>-delete", with the topic cut
// short when the whole would exceed NAME_MAX (a 249-byte topic name fits a
// live directory but not the suffix), as Kafka does.
func deletedPartitionDirName(topic string, partition int32, id TopicID) string {
	suffix := fmt.Sprintf("-%d.%s-delete", partition, id.String())
	if len(topic)+len(suffix) > maxFileNameBytes {
		topic = topic[:maxFileNameBytes-len(suffix)]
	}
	return topic + suffix
}
