package cleaner

import (
	"errors"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/ringbroker/ringbroker/nvme"
)

// Log is what the cleaner does with a partition's log; *nvme.Log
// implements it. Its methods are called only inside Host callbacks, on the
// log's shard.
type Log interface {
	Cleanable(st nvme.CleanerState, c nvme.CleanConfig) nvme.Cleanable
	PrepareClean(st nvme.CleanerState, c nvme.CleanConfig) (*nvme.CleanJob, error)
	CommitClean(j *nvme.CleanJob) (nvme.CleanerState, error)
}

// Key identifies a partition by topic id and index (a topic deleted and
// created again under its name is another key).
type Key struct {
	TopicID [16]byte
	Index   int32
}

// Partition is a partition as its shard shows it to the cleaner, valid
// only inside the Host callback that passed it.
type Partition struct {
	Key
	Topic string
	// Log is the open log; Host.Compacted never passes a nil one,
	// Host.OnPartition passes nil when the partition is closed.
	Log Log
	// Offline is set after an I/O error took the partition offline.
	Offline bool
	// GoOffline takes the partition offline after err (Host.OnPartition
	// only; nil in Host.Compacted).
	GoOffline func(err error)
}

// Host is what the cleaner needs of the broker. Shard callbacks run on
// the shard's loop and the call waits for them; they must not block.
type Host interface {
	// Shards returns the number of shards, fixed for the broker's life.
	Shards() int
	// Compacted runs fn on the loop of shard with each of its partitions
	// that is open, online and of a compacted topic.
	Compacted(shard int, fn func(p Partition))
	// OnPartition runs fn on the loop of shard with partition k, or with
	// nil when the shard no longer holds it.
	OnPartition(shard int, k Key, fn func(p *Partition))
	// TopicConfigs returns the effective configs of a topic (broker
	// defaults under its own), false when the topic does not exist.
	TopicConfigs(topic string) (map[string]string, bool)
	// TopicID returns the id of a topic, false when it does not exist.
	TopicID(topic string) ([16]byte, bool)
}

// Options configure a Cleaner.
type Options struct {
	Config Config
	// LogDir holds the checkpoint files (log.dirs).
	LogDir string
	// TopicDefaults are the broker's topic config defaults, used where a
	// topic's own value does not parse.
	TopicDefaults map[string]string
	// Metrics receives ringbroker_log_cleaner_* counters, created on first
	// use.
	Metrics *metrics.Set
	Log     *slog.Logger
}

// Cleaner schedules cleaning passes over the broker's compacted
// partitions. Its maps are guarded by mu; the partitions are touched only
// on their shards, through Host.
type Cleaner struct {
	h    Host
	o    Options
	stop chan struct{}
	// The dynamic knobs (Reconfigure): log.cleaner.io.max.bytes.per.second's
	// token bucket (nil: unlimited) and log.cleaner.backoff.ms.
	bucket  atomic.Pointer[nvme.TokenBucket]
	backoff atomic.Int64  // time.Duration
	ioMax   atomic.Uint64 // math.Float64bits of the bucket's rate
	wg      sync.WaitGroup

	ckptMu sync.Mutex // serialises checkpoint writes; taken before mu
	mu     sync.Mutex
	states map[name]entry
	busy   map[Key]bool
}

// name names a partition by topic name, as Kafka's checkpoint files do.
type name = nvme.TopicPartition

// entry is a partition's cleaner state and the topic id it belongs to
// (zero when the checkpoint did not say).
type entry struct {
	id    [16]byte
	state nvme.CleanerState
}

// New returns a cleaner with the state of the checkpoint files in
// o.LogDir, dropping states of topics that no longer exist or whose id
// changed. It does not start the threads.
func New(h Host, o Options) *Cleaner {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	c := &Cleaner{h: h, o: o, stop: make(chan struct{}), states: readCheckpoints(o.LogDir), busy: map[Key]bool{}}
	c.bucket.Store(nvme.NewTokenBucket(o.Config.IOMaxBytes))
	c.backoff.Store(int64(o.Config.Backoff))
	c.ioMax.Store(math.Float64bits(o.Config.IOMaxBytes))
	// A topic created again under the same name starts over.
	for n, e := range c.states {
		if id, ok := h.TopicID(n.Topic); !ok || (e.id != [16]byte{} && e.id != id) {
			delete(c.states, n)
		}
	}
	return c
}

// Start starts the cleaner threads, or logs that the cleaner is disabled
// (log.cleaner.enable=false or log.cleaner.threads=0).
func (c *Cleaner) Start() {
	cfg := c.o.Config
	if !cfg.Enable || cfg.Threads == 0 {
		c.o.Log.Info("log cleaner disabled")
		return
	}
	for i := 0; i < cfg.Threads; i++ {
		c.wg.Add(1)
		go c.thread()
	}
	ioMax := "unlimited"
	if cfg.IOMaxBytes < math.MaxFloat64 {
		ioMax = strconv.FormatFloat(cfg.IOMaxBytes, 'f', -1, 64)
	}
	c.o.Log.Info("log cleaner started", "threads", cfg.Threads, "io.max.bytes.per.second", ioMax, "backoff", cfg.Backoff.String())
}

// Reconfigure applies the dynamic broker configs the cleaner takes
// without a restart (Kafka's DynamicBrokerConfig): cfg's Backoff
// (log.cleaner.backoff.ms) from the threads' next sleep, and IOMaxBytes
// (log.cleaner.io.max.bytes.per.second) from the next pass, with a new
// token bucket when the rate changed. The other fields need a restart.
// Safe on a nil Cleaner and from any goroutine.
func (c *Cleaner) Reconfigure(cfg Config) {
	if c == nil {
		return
	}
	c.backoff.Store(int64(cfg.Backoff))
	if bits := math.Float64bits(cfg.IOMaxBytes); c.ioMax.Swap(bits) != bits {
		c.bucket.Store(nvme.NewTokenBucket(cfg.IOMaxBytes))
	}
}

// Dynamic returns the knobs Reconfigure sets: the backoff and the I/O
// rate in bytes per second.
func (c *Cleaner) Dynamic() (backoff time.Duration, ioMaxBytes float64) {
	return time.Duration(c.backoff.Load()), math.Float64frombits(c.ioMax.Load())
}

// Stop stops the threads and waits for them; a pass in flight is
// abandoned. The broker calls it before its partitions close. Safe to call
// more than once, and on a nil Cleaner.
func (c *Cleaner) Stop() {
	if c == nil {
		return
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.wg.Wait()
}

func (c *Cleaner) thread() {
	defer c.wg.Done()
	for {
		did := c.cleanOne()
		wait := time.Duration(c.backoff.Load())
		if did {
			wait = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// candidate is a partition that is due for cleaning.
type candidate struct {
	shard int
	key   Key
	name  name
	cfg   nvme.CleanConfig
	clean nvme.Cleanable
}

// cleanConfig reads a topic's cleaner knobs from its effective configs;
// false when the topic is gone or not compacted.
func (c *Cleaner) cleanConfig(topic string) (nvme.CleanConfig, bool) {
	m, ok := c.h.TopicConfigs(topic)
	if !ok || !strings.Contains(m["cleanup.policy"], "compact") {
		return nvme.CleanConfig{}, false
	}
	i64 := func(k string) int64 {
		v, err := strconv.ParseInt(m[k], 10, 64)
		if err != nil {
			v, _ = strconv.ParseInt(c.o.TopicDefaults[k], 10, 64)
		}
		return v
	}
	ratio, err := strconv.ParseFloat(m["min.cleanable.dirty.ratio"], 64)
	if err != nil {
		ratio = 0.5
	}
	cfg := c.o.Config
	return nvme.CleanConfig{
		MinCleanableRatio:  ratio,
		MinCompactionLagMs: i64("min.compaction.lag.ms"),
		MaxCompactionLagMs: i64("max.compaction.lag.ms"),
		DeleteRetentionMs:  i64("delete.retention.ms"),
		MaxMapEntries:      int(max(1, cfg.DedupeBytes/int64(max(1, cfg.Threads))/mapEntryBytes)),
	}, true
}

// stateOf returns the cleaner state of a partition of topic id.
func (c *Cleaner) stateOf(n name, id [16]byte) nvme.CleanerState {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.states[n]
	if !ok || (e.id != [16]byte{} && e.id != id) {
		return nvme.CleanerState{}
	}
	return e.state
}

func (c *Cleaner) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// cleanOne runs at most one pass; it reports whether it did.
func (c *Cleaner) cleanOne() bool {
	var cands []candidate
	for shard := 0; shard < c.h.Shards(); shard++ {
		if c.stopped() {
			return false
		}
		c.h.Compacted(shard, func(p Partition) {
			cfg, ok := c.cleanConfig(p.Topic)
			if !ok {
				return
			}
			n := name{Topic: p.Topic, Partition: p.Index}
			cl := p.Log.Cleanable(c.stateOf(n, p.TopicID), cfg)
			if cl.Needed {
				cands = append(cands, candidate{shard: shard, key: p.Key, name: n, cfg: cfg, clean: cl})
			}
		})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].clean.Forced != cands[j].clean.Forced {
			return cands[i].clean.Forced
		}
		return cands[i].clean.Ratio > cands[j].clean.Ratio
	})
	c.mu.Lock()
	var pick *candidate
	for i := range cands {
		if !c.busy[cands[i].key] {
			pick = &cands[i]
			c.busy[pick.key] = true
			break
		}
	}
	c.mu.Unlock()
	if pick == nil {
		return false
	}
	defer func() {
		c.mu.Lock()
		delete(c.busy, pick.key)
		c.mu.Unlock()
	}()
	c.clean(pick)
	return true
}

// clean runs one pass over cand's partition.
func (c *Cleaner) clean(cand *candidate) {
	var job *nvme.CleanJob
	var err error
	var id [16]byte
	c.h.OnPartition(cand.shard, cand.key, func(p *Partition) {
		if p == nil || p.Log == nil || p.Offline {
			return
		}
		id = p.TopicID
		job, err = p.Log.PrepareClean(c.stateOf(cand.name, p.TopicID), cand.cfg)
	})
	if err != nil {
		c.failed(cand, err)
		return
	}
	if job == nil {
		return
	}
	if err := job.Run(c.stop, c.bucket.Load()); err != nil {
		if !errors.Is(err, nvme.ErrCleanStopped) {
			c.failed(cand, err)
		}
		return
	}
	var st nvme.CleanerState
	if c.stopped() {
		job.Abort()
		return
	}
	c.h.OnPartition(cand.shard, cand.key, func(p *Partition) {
		if p == nil || p.Log == nil {
			job.Abort()
			err = nvme.ErrCleanStale
			return
		}
		st, err = p.Log.CommitClean(job)
		if err != nil && errors.Is(err, nvme.ErrLogClosed) && !p.Offline {
			p.GoOffline(err)
		}
	})
	if err != nil {
		if !errors.Is(err, nvme.ErrCleanStale) {
			c.failed(cand, err)
		}
		return
	}
	s := job.Stats()
	c.mu.Lock()
	c.states[cand.name] = entry{id: id, state: st}
	c.mu.Unlock()
	set := c.o.Metrics
	set.GetOrCreateCounter("ringbroker_log_cleaner_passes_total").Inc()
	set.GetOrCreateCounter("ringbroker_log_cleaner_read_bytes_total").Add(int(s.BytesRead))
	set.GetOrCreateCounter("ringbroker_log_cleaner_written_bytes_total").Add(int(s.BytesWritten))
	c.writeCheckpoints()
}

func (c *Cleaner) failed(cand *candidate, err error) {
	c.o.Metrics.GetOrCreateCounter("ringbroker_log_cleaner_errors_total").Inc()
	c.o.Log.Warn("log cleaning failed", "topic", cand.name.Topic, "partition", cand.name.Partition, "err", err)
}
