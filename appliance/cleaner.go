package appliance

// The log cleaner's scheduler (log compaction, cleanup.policy=compact; the
// pass itself is nvme/cleaner.go).
//
// log.cleaner.threads goroutines, off the shard loops, each repeat: ask
// every shard (through its inbox) for its compacted partitions'
// cleanability, pick the dirtiest one that is due (max.compaction.lag.ms
// exceeded first, then the highest dirty ratio at or above
// min.cleanable.dirty.ratio) and not being cleaned by another thread, ask
// its shard for a job (PrepareClean), run the job here under the shared
// log.cleaner.io.max.bytes.per.second token bucket, and hand it back to
// the shard (CommitClean), which swaps the segments in. With nothing due a
// thread sleeps log.cleaner.backoff.ms. Broker.Close stops the threads
// before it closes partitions; a stopped pass removes its files.
//
// Cleaner state survives restarts in <log.dirs>/cleaner-offset-checkpoint
// (Kafka's format: version 0, count, "topic partition offset" lines, the
// first dirty offset) and <log.dirs>/cleaner-horizon-checkpoint
// (ringbroker's: version 0, count, "topic partition topicId end:ms,..."
// lines, when each part of the log was cleaned, which decides when
// tombstones and transaction markers may go). A state whose topic id does
// not match the topic's (a topic deleted and created again) is dropped.

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/nvme"
	"golang.org/x/sys/unix"
)

const (
	cleanerOffsetCheckpoint  = "cleaner-offset-checkpoint"
	cleanerHorizonCheckpoint = "cleaner-horizon-checkpoint"
	// cleanerMapEntryBytes is what one offset map entry costs in memory
	// (config.CleanerMapEntryBytes).
	cleanerMapEntryBytes = config.CleanerMapEntryBytes
)

// logCleaner schedules cleaning passes over the broker's compacted
// partitions. Its maps are guarded by mu; the partitions are touched only
// on their shards.
type logCleaner struct {
	b      *Broker
	cfg    config.Cleaner
	bucket *nvme.TokenBucket
	stop   chan struct{}
	wg     sync.WaitGroup

	mu     sync.Mutex
	states map[tpName]cleanerEntry
	busy   map[tpKey]bool
	ckptMu sync.Mutex // serialises checkpoint writes

}

type cleanerEntry struct {
	id    TopicID
	state nvme.CleanerState
}

// startCleaner starts the cleaner threads (Start, after housekeeping).
func (b *Broker) startCleaner() error {
	cfg := b.cfg.Cleaner
	lc := &logCleaner{b: b, cfg: cfg, bucket: nvme.NewTokenBucket(cfg.IOMaxBytes), stop: make(chan struct{}),
		states: b.readCleanerCheckpoints(), busy: map[tpKey]bool{}}
	b.store.cleaner = lc
	if !cfg.Enable || cfg.Threads == 0 {
		b.log.Info("log cleaner disabled")
		return nil
	}
	for i := 0; i < cfg.Threads; i++ {
		lc.wg.Add(1)
		go lc.thread()
	}
	ioMax := "unlimited"
	if cfg.IOMaxBytes < math.MaxFloat64 {
		ioMax = strconv.FormatFloat(cfg.IOMaxBytes, 'f', -1, 64)
	}
	b.log.Info("log cleaner started", "threads", cfg.Threads, "io.max.bytes.per.second", ioMax, "backoff", cfg.Backoff.String())
	return nil
}

// stopCleaner stops the threads and waits for them (Close, before the
// partitions close). Safe when the cleaner never started.
func (b *Broker) stopCleaner() {
	lc := b.store.cleaner
	if lc == nil {
		return
	}
	select {
	case <-lc.stop:
	default:
		close(lc.stop)
	}
	lc.wg.Wait()
}

func (lc *logCleaner) thread() {
	defer lc.wg.Done()
	for {
		did := lc.cleanOne()
		wait := lc.cfg.Backoff
		if did {
			wait = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-lc.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// candidate is a partition that is due for cleaning.
type candidate struct {
	st    *shardState
	key   tpKey
	name  tpName
	cfg   nvme.CleanConfig
	clean nvme.Cleanable
}

// cleanConfig reads a topic's cleaner knobs from its effective configs.
func (lc *logCleaner) cleanConfig(topic string) (nvme.CleanConfig, bool) {
	t := lc.b.currentImage().Topics[topic]
	if t == nil {
		return nvme.CleanConfig{}, false
	}
	m := lc.b.effectiveTopicConfigs(t)
	if !strings.Contains(m["cleanup.policy"], "compact") {
		return nvme.CleanConfig{}, false
	}
	i64 := func(k string) int64 {
		v, err := strconv.ParseInt(m[k], 10, 64)
		if err != nil {
			v, _ = strconv.ParseInt(lc.b.cfg.TopicDefaults[k], 10, 64)
		}
		return v
	}
	ratio, err := strconv.ParseFloat(m["min.cleanable.dirty.ratio"], 64)
	if err != nil {
		ratio = 0.5
	}
	return nvme.CleanConfig{
		MinCleanableRatio:  ratio,
		MinCompactionLagMs: i64("min.compaction.lag.ms"),
		MaxCompactionLagMs: i64("max.compaction.lag.ms"),
		DeleteRetentionMs:  i64("delete.retention.ms"),
		MaxMapEntries:      int(max(1, lc.cfg.DedupeBytes/int64(max(1, lc.cfg.Threads))/cleanerMapEntryBytes)),
	}, true
}

// stateOf returns the cleaner state of a partition of topic id.
func (lc *logCleaner) stateOf(name tpName, id TopicID) nvme.CleanerState {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	e, ok := lc.states[name]
	if !ok || (e.id != TopicID{} && e.id != id) {
		return nvme.CleanerState{}
	}
	return e.state
}

func (lc *logCleaner) stopped() bool {
	select {
	case <-lc.stop:
		return true
	default:
		return false
	}
}

// cleanOne runs at most one pass; it reports whether it did.
func (lc *logCleaner) cleanOne() bool {
	var cands []candidate
	for _, st := range lc.b.shards {
		if lc.stopped() {
			return false
		}
		st.loop.Call(func() {
			for key, p := range st.parts {
				if p.log == nil || p.offline != nil || !p.cfg.Compact {
					continue
				}
				cfg, ok := lc.cleanConfig(p.topic)
				if !ok {
					continue
				}
				name := tpName{p.topic, p.index}
				c := p.log.Cleanable(lc.stateOf(name, p.id), cfg)
				if c.Needed {
					cands = append(cands, candidate{st: st, key: key, name: name, cfg: cfg, clean: c})
				}
			}
		})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].clean.Forced != cands[j].clean.Forced {
			return cands[i].clean.Forced
		}
		return cands[i].clean.Ratio > cands[j].clean.Ratio
	})
	lc.mu.Lock()
	var pick *candidate
	for i := range cands {
		if !lc.busy[cands[i].key] {
			pick = &cands[i]
			lc.busy[pick.key] = true
			break
		}
	}
	lc.mu.Unlock()
	if pick == nil {
		return false
	}
	defer func() {
		lc.mu.Lock()
		delete(lc.busy, pick.key)
		lc.mu.Unlock()
	}()
	lc.clean(pick)
	return true
}

// clean runs one pass over c's partition.
func (lc *logCleaner) clean(c *candidate) {
	var job *nvme.CleanJob
	var err error
	var id TopicID
	c.st.loop.Call(func() {
		p := c.st.parts[c.key]
		if p == nil || p.log == nil || p.offline != nil {
			return
		}
		id = p.id
		job, err = p.log.PrepareClean(lc.stateOf(c.name, p.id), c.cfg)
	})
	if err != nil {
		lc.failed(c, err)
		return
	}
	if job == nil {
		return
	}
	if err := job.Run(lc.stop, lc.bucket); err != nil {
		if !errors.Is(err, nvme.ErrCleanStopped) {
			lc.failed(c, err)
		}
		return
	}
	var st nvme.CleanerState
	if lc.stopped() {
		job.Abort()
		return
	}
	c.st.loop.Call(func() {
		p := c.st.parts[c.key]
		if p == nil || p.log == nil {
			job.Abort()
			err = nvme.ErrCleanStale
			return
		}
		st, err = p.log.CommitClean(job)
		if err != nil && errors.Is(err, nvme.ErrLogClosed) && p.offline == nil {
			p.goOffline(err)
		}
	})
	if err != nil {
		if !errors.Is(err, nvme.ErrCleanStale) {
			lc.failed(c, err)
		}
		return
	}
	s := job.Stats()
	lc.mu.Lock()
	lc.states[c.name] = cleanerEntry{id: id, state: st}
	lc.mu.Unlock()
	set := lc.b.metrics.set
	set.GetOrCreateCounter("ringbroker_log_cleaner_passes_total").Inc()
	set.GetOrCreateCounter("ringbroker_log_cleaner_read_bytes_total").Add(int(s.BytesRead))
	set.GetOrCreateCounter("ringbroker_log_cleaner_written_bytes_total").Add(int(s.BytesWritten))
	lc.writeCheckpoints()
}

func (lc *logCleaner) failed(c *candidate, err error) {
	lc.b.metrics.set.GetOrCreateCounter("ringbroker_log_cleaner_errors_total").Inc()
	lc.b.log.Warn("log cleaning failed", "topic", c.name.topic, "partition", c.name.p, "err", err)
}

// readCleanerCheckpoints loads both checkpoint files.
func (b *Broker) readCleanerCheckpoints() map[tpName]cleanerEntry {
	out := map[tpName]cleanerEntry{}
	eachLine := func(name string, fn func(fields []string)) {
		f, err := os.Open(filepath.Join(b.cfg.LogDir, name))
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for line := 0; sc.Scan(); line++ {
			if line >= 2 {
				fn(strings.Fields(sc.Text()))
			}
		}
	}
	eachLine(cleanerOffsetCheckpoint, func(fs []string) {
		if len(fs) != 3 {
			return
		}
		p, err1 := strconv.ParseInt(fs[1], 10, 32)
		o, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 == nil && err2 == nil {
			out[tpName{fs[0], int32(p)}] = cleanerEntry{state: nvme.CleanerState{FirstDirty: o}}
		}
	})
	eachLine(cleanerHorizonCheckpoint, func(fs []string) {
		if len(fs) < 3 {
			return
		}
		p, err := strconv.ParseInt(fs[1], 10, 32)
		if err != nil {
			return
		}
		name := tpName{fs[0], int32(p)}
		e, ok := out[name]
		if !ok {
			return
		}
		var id TopicID
		if raw, err := decodeTopicID(fs[2]); err == nil {
			id = raw
		}
		e.id = id
		if len(fs) == 4 {
			for _, pt := range strings.Split(fs[3], ",") {
				a, b, ok := strings.Cut(pt, ":")
				end, err1 := strconv.ParseInt(a, 10, 64)
				ms, err2 := strconv.ParseInt(b, 10, 64)
				if ok && err1 == nil && err2 == nil {
					e.state.Points = append(e.state.Points, nvme.CleanPoint{EndOffset: end, CleanedMs: ms})
				}
			}
		}
		out[name] = e
	})
	// A topic created again under the same name starts over.
	im := b.currentImage()
	for name, e := range out {
		if t := im.Topics[name.topic]; t == nil || (e.id != TopicID{} && e.id != t.ID) {
			delete(out, name)
		}
	}
	return out
}

func decodeTopicID(s string) (TopicID, error) {
	var id TopicID
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != len(id) {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], raw)
	return id, nil
}

// writeCheckpoints writes both checkpoint files from the states.
func (lc *logCleaner) writeCheckpoints() {
	lc.ckptMu.Lock()
	defer lc.ckptMu.Unlock()
	lc.mu.Lock()
	names := make([]tpName, 0, len(lc.states))
	for n := range lc.states {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if names[i].topic != names[j].topic {
			return names[i].topic < names[j].topic
		}
		return names[i].p < names[j].p
	})
	var offs, hor strings.Builder
	fmt.Fprintf(&offs, "0\n%d\n", len(names))
	fmt.Fprintf(&hor, "0\n%d\n", len(names))
	for _, n := range names {
		e := lc.states[n]
		fmt.Fprintf(&offs, "%s %d %d\n", n.topic, n.p, e.state.FirstDirty)
		pts := make([]string, 0, len(e.state.Points))
		for _, p := range e.state.Points {
			pts = append(pts, fmt.Sprintf("%d:%d", p.EndOffset, p.CleanedMs))
		}
		fmt.Fprintf(&hor, "%s %d %s %s\n", n.topic, n.p, e.id.String(), strings.Join(pts, ","))
	}
	lc.mu.Unlock()
	dir := lc.b.cfg.LogDir
	if err := writeFileAtomic(filepath.Join(dir, cleanerHorizonCheckpoint), []byte(hor.String())); err != nil {
		lc.b.log.Error("cannot write cleaner checkpoint", "err", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, cleanerOffsetCheckpoint), []byte(offs.String())); err != nil {
		lc.b.log.Error("cannot write cleaner checkpoint", "err", err)
	}
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

// propOr is broker property k, or def when it is unset or empty.
func (b *Broker) propOr(k, def string) string {
	if v := strings.TrimSpace(b.cfg.Props[k]); v != "" {
		return v
	}
	return def
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
