package appliance

// The log cleaner's adapter: package appliance/cleaner schedules the
// passes; cleanerHost gives it the shards, their compacted partitions and
// the topics' configs. A helper of compacted logs (batchesEnd)
// lives here too; config.Topic.CleanupOptions applies cleanup.policy.

import (
	"encoding/binary"

	"github.com/ringbroker/ringbroker/appliance/cleaner"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/nvme"
	"golang.org/x/sys/unix"
)

// startCleaner starts the cleaner threads (Start, after housekeeping).
func (b *Broker) startCleaner() error {
	b.store.cleaner = cleaner.New(cleanerHost{b}, cleaner.Options{Config: metadata.CleanerWith(b.cfg.Cleaner, b.currentImage(), b.cfg.NodeID), LogDir: b.cfg.LogDir,
		TopicDefaults: b.cfg.TopicDefaults, Metrics: b.metrics.Set(), Log: b.log})
	b.store.cleaner.Start()
	return nil
}

// stopCleaner stops the threads and waits for them (Close, before the
// partitions close). Safe when the cleaner never started.
func (b *Broker) stopCleaner() { b.store.cleaner.Stop() }

// cleanerHost is the broker as cleaner.Host.
type cleanerHost struct{ b *Broker }

func (h cleanerHost) Shards() int { return len(h.b.shards) }

func (h cleanerHost) Compacted(shard int, fn func(cleaner.Partition)) {
	st := h.b.shards[shard]
	st.loop.Call(func() {
		for key, p := range st.parts {
			if p.log != nil && p.offline == nil && p.cfg.Compact {
				fn(cleaner.Partition{Key: cleaner.Key{TopicID: key.id, Index: key.p}, Topic: p.topic, Log: p.log})
			}
		}
	})
}

func (h cleanerHost) OnPartition(shard int, k cleaner.Key, fn func(*cleaner.Partition)) {
	st := h.b.shards[shard]
	st.loop.Call(func() {
		p := st.parts[tpKey{TopicID(k.TopicID), k.Index}]
		if p == nil {
			fn(nil)
			return
		}
		cp := &cleaner.Partition{Key: k, Topic: p.topic, Offline: p.offline != nil, GoOffline: p.goOffline}
		if p.log != nil { // a nil *nvme.Log is not a nil cleaner.Log
			cp.Log = p.log
		}
		fn(cp)
	})
}

func (h cleanerHost) TopicConfigs(topic string) (map[string]string, bool) {
	t := h.b.currentImage().Topics[topic]
	if t == nil {
		return nil, false
	}
	return h.b.effectiveTopicConfigs(t), true
}

func (h cleanerHost) TopicID(topic string) ([16]byte, bool) {
	t := h.b.currentImage().Topics[topic]
	if t == nil {
		return [16]byte{}, false
	}
	return t.ID, true
}

// batchesEnd returns the offset after the last batch in raw (whole record
// batches v2), or -1 when raw holds none. Replays of compacted internal
// topics advance with it: a cleaned batch may hold no record at all.
func batchesEnd(raw []byte) int64 {
	end := int64(-1)
	for len(raw) >= 61 {
		n := int(int32(binary.BigEndian.Uint32(raw[8:]))) + 12
		if n < 61 || n > len(raw) {
			break
		}
		end = int64(binary.BigEndian.Uint64(raw)) + int64(int32(binary.BigEndian.Uint32(raw[23:]))) + 1
		raw = raw[n:]
	}
	return end
}

// chunkBytes returns the bytes of a read chunk: a copy of the file range in
// buffered mode, the cached memory in direct mode (nvme.Chunk). The
// internal topics' replays read their logs through it.
func chunkBytes(c nvme.Chunk) ([]byte, error) {
	if c.File == nil {
		return c.Mem[:c.Len], nil
	}
	buf := make([]byte, c.Len)
	if _, err := unix.Pread(int(c.File.Fd()), buf, c.Pos); err != nil {
		return nil, err
	}
	return buf, nil
}
