package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Sample is one progress interval (about a second) of a run.
type Sample struct {
	T            float64 `json:"t_s"` // seconds since the measurement window opened (negative in warm-up)
	PubRPS       float64 `json:"pub_records_per_s"`
	PubMBPS      float64 `json:"pub_mb_per_s"`
	ConsRPS      float64 `json:"cons_records_per_s"`
	ConsMBPS     float64 `json:"cons_mb_per_s"`
	BacklogBytes int64   `json:"backlog_bytes"`
	PubP50Ms     float64 `json:"pub_p50_ms"`
	PubP99Ms     float64 `json:"pub_p99_ms"`
	E2EP99Ms     float64 `json:"e2e_p99_ms"`
	BrokerCPU    float64 `json:"broker_cpu_cores"`
}

// CatchUp reports the catch-up phase of a workload with a backlog.
type CatchUp struct {
	BacklogBytes int64   `json:"backlog_bytes"`
	Seconds      float64 `json:"seconds"`
	MBPS         float64 `json:"mb_per_s"`
	Completed    bool    `json:"completed"`
}

// ProcReport is a process's resource use over the measurement window.
type ProcReport struct {
	Pid             int     `json:"pid,omitempty"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	CPUCores        float64 `json:"cpu_cores"`          // CPUSeconds / window
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb"` // per GB (10^9) published
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
}

// RunResult is the outcome of one workload against one target.
type RunResult struct {
	Workload       *Workload      `json:"workload"`
	Target         Target         `json:"target"`
	Round          int            `json:"round"` // 0-based; see --rounds and RoundOrder
	Started        time.Time      `json:"started"`
	Publish        Rate           `json:"publish"`
	PublishErrors  uint64         `json:"publish_errors"`
	FirstError     string         `json:"first_error,omitempty"`
	Consume        Rate           `json:"consume"`
	PublishLatency LatencySummary `json:"publish_latency"`
	E2ELatency     LatencySummary `json:"end_to_end_latency"`
	MaxBacklog     int64          `json:"max_backlog_bytes"`
	FinalBacklog   int64          `json:"final_backlog_records"`
	CatchUp        *CatchUp       `json:"catch_up,omitempty"`
	Broker         *ProcReport    `json:"broker,omitempty"`
	Loadgen        ProcReport     `json:"loadgen"`
	// HostReportedMiB is the guest memory a VM's free page reporting
	// handed back to the host during the window (page_reporting's
	// reported_kib; -1 where the kernel has no such counter). A run that
	// then takes such pages again (fresh page cache) pays a host page
	// fault for each, in pwrite's copy: on the 2-vCPU development VM that
	// alone moved a max-rate run's broker CPU per GB by up to 2.5x.
	HostReportedMiB float64            `json:"host_reported_mib"`
	Ratios          map[string]float64 `json:"ratios,omitempty"`
	Series          []Sample           `json:"series"`
	Error           string             `json:"error,omitempty"`
}

// counters are the run's shared tallies.
type counters struct {
	ackedRecs, ackedBytes atomic.Uint64 // every acked record, warm-up included
	consRecs, consBytes   atomic.Uint64 // every consumed record
	winPubRecs, winPubB   atomic.Uint64 // acked inside the window (sent inside it)
	winConsRecs, winConsB atomic.Uint64 // consumed while the window was open
	errs                  atomic.Uint64
	firstErr              atomic.Pointer[string]
	windowStart           atomic.Int64 // unix nanos; 0 during warm-up
	windowOpen            atomic.Bool
}

func (c *counters) noteErr(err error) {
	c.errs.Add(1)
	s := err.Error()
	c.firstErr.CompareAndSwap(nil, &s)
}

// RunOpts are a run's knobs that are not part of the workload.
type RunOpts struct {
	Grace    time.Duration
	Progress bool
	Label    string
}

var nonName = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// RunWorkload runs w against brokers; brokerPid > 0 adds the broker's CPU
// and RSS. It returns when the window, catch-up and drain are over, bounded
// by warm-up + duration + grace.
func RunWorkload(parent context.Context, w *Workload, brokers []string, brokerPid int, o RunOpts) *RunResult {
	res := &RunResult{Workload: w, Started: time.Now()}
	hard := w.Warmup.D() + w.Duration.D() + o.Grace + 30*time.Second // +30 s for topic creation
	ctx, cancel := context.WithTimeout(parent, hard)
	defer cancel()

	topics, err := createTopics(ctx, w, brokers)
	if err != nil {
		res.Error = err.Error()
		return res
	}

	var c counters
	pubLat, e2eLat := NewSyncHist(), NewSyncHist()

	// Consumers.
	consCtx, stopCons := context.WithCancel(ctx)
	defer stopCons()
	var consWG sync.WaitGroup
	startConsumers := func() error {
		for ti, topic := range topics {
			for ci := 0; ci < w.ConsumersPerTopic; ci++ {
				opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.FetchMaxWait(500 * time.Millisecond),
					kgo.ClientID(fmt.Sprintf("ringbench-c%d-%d", ti, ci))}
				if w.ConsumerGroup {
					opts = append(opts, kgo.ConsumerGroup("ringbench-"+topic), kgo.ConsumeTopics(topic),
						kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				} else {
					parts := map[int32]kgo.Offset{}
					for p := ci; p < w.PartitionsPerTopic; p += w.ConsumersPerTopic {
						parts[int32(p)] = kgo.NewOffset().AtStart()
					}
					if len(parts) == 0 {
						continue
					}
					opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
				}
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					return fmt.Errorf("cannot create consumer: %w", err)
				}
				consWG.Add(1)
				go func() {
					defer consWG.Done()
					defer cl.Close()
					consume(consCtx, cl, &c, e2eLat)
				}()
			}
		}
		return nil
	}
	if w.BacklogBytes == 0 && w.ConsumersPerTopic > 0 {
		if err := startConsumers(); err != nil {
			res.Error = err.Error()
			return res
		}
	}

	// Producers.
	prodCtx, stopProd := context.WithCancel(ctx)
	defer stopProd()
	var prodWG sync.WaitGroup
	nProd := w.Topics * w.ProducersPerTopic
	perRate := w.ProducerRate / float64(nProd)
	payload := make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	var keys [][]byte
	if w.Keys == "distinct" {
		keys = make([][]byte, w.KeyCount)
		for i := range keys {
			keys[i] = []byte(fmt.Sprintf("key-%08d", i))
		}
	}
	for ti, topic := range topics {
		for pi := 0; pi < w.ProducersPerTopic; pi++ {
			cl, err := kgo.NewClient(producerOpts(w, brokers, topic, fmt.Sprintf("ringbench-p%d-%d", ti, pi))...)
			if err != nil {
				res.Error = fmt.Sprintf("cannot create producer: %v", err)
				return res
			}
			seed := uint64(ti*100003 + pi)
			prodWG.Add(1)
			go func() {
				defer prodWG.Done()
				defer cl.Close()
				produce(prodCtx, ctx, cl, w, topic, perRate, payload, keys, seed, &c, pubLat)
				fctx, fcancel := context.WithTimeout(ctx, o.Grace)
				defer fcancel()
				_ = cl.Flush(fctx)
			}()
		}
	}

	// Sampler: warm-up, window, catch-up, progress.
	startCPU := func() (broker, self ProcStat) {
		if brokerPid > 0 {
			broker, _ = ReadProcStat(brokerPid)
		}
		self, _ = ReadProcStat(0)
		return
	}
	var repStart int64 // reportedKiB at the window's start
	runStart := time.Now()
	var winStart time.Time
	var bStart, sStart ProcStat
	window := w.Duration.D()
	winEnd := time.Time{}
	var catch *CatchUp
	var catchStart time.Time
	var catchTarget uint64
	consStarted := w.BacklogBytes == 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastPubR, lastPubB, lastConsR, lastConsB uint64
	lastT := time.Now()
	var lastBCPU float64
	if brokerPid > 0 {
		s, _ := ReadProcStat(brokerPid)
		lastBCPU = s.CPUSeconds
	}
	// catchDone is when the consumers first reach catchTarget, polled finer
	// than the 1 s sampler so short catch-ups are timed right.
	var catchDone atomic.Int64
	isTTY := false
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		isTTY = true
	}
	stopAt := runStart.Add(w.Warmup.D())
	if w.Warmup == 0 {
		winStart = time.Now()
		bStart, sStart = startCPU()
		repStart = reportedKiB()
		c.windowStart.Store(winStart.UnixNano())
		c.windowOpen.Store(true)
		winEnd = winStart.Add(window)
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case now := <-tick.C:
			if winStart.IsZero() && !now.Before(stopAt) {
				winStart = now
				pubLat.ResetAll()
				e2eLat.ResetAll()
				bStart, sStart = startCPU()
				repStart = reportedKiB()
				c.windowStart.Store(winStart.UnixNano())
				c.windowOpen.Store(true)
				winEnd = winStart.Add(window)
			}
			// Catch-up: start consumers once the backlog is built.
			if !consStarted && !winStart.IsZero() && int64(c.ackedBytes.Load()) >= w.BacklogBytes {
				consStarted = true
				catchStart = now
				catchTarget = c.ackedRecs.Load()
				catch = &CatchUp{BacklogBytes: int64(c.ackedBytes.Load())}
				if w.StopProducersForCatchUp {
					stopProd()
				}
				if err := startConsumers(); err != nil {
					res.Error = err.Error()
					break loop
				}
				go func(target uint64) {
					for ctx.Err() == nil {
						if c.consRecs.Load() >= target {
							catchDone.Store(time.Now().UnixNano())
							return
						}
						time.Sleep(2 * time.Millisecond)
					}
				}(catchTarget)
			}
			if catch != nil && !catch.Completed && catchDone.Load() != 0 {
				catch.Completed = true
				catch.Seconds = time.Unix(0, catchDone.Load()).Sub(catchStart).Seconds()
				catch.MBPS = float64(catch.BacklogBytes) / 1e6 / catch.Seconds
			}
			// Sample.
			dt := now.Sub(lastT).Seconds()
			pr, pb, cr, cb := c.ackedRecs.Load(), c.ackedBytes.Load(), c.consRecs.Load(), c.consBytes.Load()
			s := Sample{
				PubRPS: float64(pr-lastPubR) / dt, PubMBPS: float64(pb-lastPubB) / 1e6 / dt,
				ConsRPS: float64(cr-lastConsR) / dt, ConsMBPS: float64(cb-lastConsB) / 1e6 / dt,
			}
			if w.ConsumersPerTopic > 0 {
				s.BacklogBytes = int64(pb) - int64(cb)
				if s.BacklogBytes > res.MaxBacklog && !winStart.IsZero() {
					res.MaxBacklog = s.BacklogBytes
				}
			}
			if winStart.IsZero() {
				s.T = now.Sub(stopAt).Seconds()
			} else {
				s.T = now.Sub(winStart).Seconds()
			}
			pi := pubLat.TakeInterval()
			ei := e2eLat.TakeInterval()
			s.PubP50Ms, s.PubP99Ms, s.E2EP99Ms = pi.P50Ms, pi.P99Ms, ei.P99Ms
			if brokerPid > 0 {
				if bs, err := ReadProcStat(brokerPid); err == nil {
					s.BrokerCPU = (bs.CPUSeconds - lastBCPU) / dt
					lastBCPU = bs.CPUSeconds
				}
			}
			res.Series = append(res.Series, s)
			lastPubR, lastPubB, lastConsR, lastConsB, lastT = pr, pb, cr, cb, now
			if o.Progress {
				phase := "warm-up"
				if !winStart.IsZero() {
					phase = fmt.Sprintf("%3.0f/%.0fs", s.T, window.Seconds())
				}
				line := fmt.Sprintf("%s %s pub %7.0f r/s %6.1f MB/s p99 %7.2f ms | cons %6.1f MB/s e2e p99 %7.2f ms | backlog %6.1f MB | broker %.2f cores | errs %d",
					o.Label, phase, s.PubRPS, s.PubMBPS, s.PubP99Ms, s.ConsMBPS, s.E2EP99Ms, float64(s.BacklogBytes)/1e6, s.BrokerCPU, c.errs.Load())
				if isTTY {
					fmt.Fprintf(os.Stderr, "\r\033[K%s", line)
				} else {
					fmt.Fprintln(os.Stderr, line)
				}
			}
			if !winEnd.IsZero() && !now.Before(winEnd.Add(-50*time.Millisecond)) {
				// The window is over, unless a catch-up is still running.
				if catch == nil && !consStarted {
					// Backlog never reached: report it as not completed.
					catch = &CatchUp{BacklogBytes: int64(c.ackedBytes.Load())}
					break loop
				}
				if catch == nil || catch.Completed {
					break loop
				}
			}
		}
	}
	if o.Progress && isTTY {
		fmt.Fprintln(os.Stderr)
	}
	winClose := time.Now()
	c.windowOpen.Store(false)
	if winStart.IsZero() {
		winStart = winClose
	}
	// Window numbers.
	winDur := winClose.Sub(winStart)
	bEnd, sEnd := startCPU()
	res.HostReportedMiB = -1
	if repEnd := reportedKiB(); repStart >= 0 && repEnd >= 0 {
		res.HostReportedMiB = float64(repEnd-repStart) / 1024
	}
	stopProd()
	prodWG.Wait()
	// Drain: let consumers reach what was acked, bounded by the grace.
	if w.ConsumersPerTopic > 0 && consStarted {
		deadline := time.Now().Add(o.Grace)
		for c.consRecs.Load() < c.ackedRecs.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	stopCons()
	consWG.Wait()

	res.Publish = NewRate(c.winPubRecs.Load(), c.winPubB.Load(), winDur)
	res.Consume = NewRate(c.winConsRecs.Load(), c.winConsB.Load(), winDur)
	res.PublishErrors = c.errs.Load()
	if p := c.firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	res.PublishLatency = pubLat.Summary()
	res.E2ELatency = e2eLat.Summary()
	if w.ConsumersPerTopic > 0 {
		res.FinalBacklog = int64(c.ackedRecs.Load()) - int64(c.consRecs.Load())
	}
	res.CatchUp = catch
	gb := float64(res.Publish.Bytes) / 1e9
	mk := func(pid int, a, b ProcStat) ProcReport {
		r := ProcReport{Pid: pid, CPUSeconds: b.CPUSeconds - a.CPUSeconds, PeakRSSBytes: b.HWMBytes}
		if winDur > 0 {
			r.CPUCores = r.CPUSeconds / winDur.Seconds()
		}
		if gb > 0 {
			r.CPUSecondsPerGB = r.CPUSeconds / gb
		}
		return r
	}
	if brokerPid > 0 {
		r := mk(brokerPid, bStart, bEnd)
		res.Broker = &r
	}
	res.Loadgen = mk(0, sStart, sEnd)
	if ctx.Err() != nil && res.Error == "" && parent.Err() == nil {
		res.Error = fmt.Sprintf("run hit its hard limit of %v", hard)
	}
	return res
}

// reportedKiBPath is the kernel's count of free guest memory reported to
// the hypervisor (virtio-balloon free page reporting).
const reportedKiBPath = "/sys/module/page_reporting/parameters/reported_kib"

// reportedKiB reads reportedKiBPath, -1 when absent.
func reportedKiB() int64 {
	b, err := os.ReadFile(reportedKiBPath)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func producerOpts(w *Workload, brokers []string, topic, id string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(id),
		kgo.DefaultProduceTopic(topic),
		kgo.DisableIdempotentWrite(), // ringbroker has no idempotent producing yet
		kgo.ProducerLinger(w.Linger.D()),
		kgo.RecordDeliveryTimeout(30 * time.Second),
	}
	switch w.Acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	}
	codec := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}[w.Compression]
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if w.BatchMaxBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(w.BatchMaxBytes)))
	}
	if w.MaxInflight > 0 {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(w.MaxInflight))
	}
	if w.MaxBufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(w.MaxBufferedRecords))
	}
	return opts
}

// sizePicker returns the next message size.
func sizePicker(w *Workload, r *rand.Rand) func() int {
	if len(w.MessageSizes) == 0 {
		return func() int { return w.MessageSize }
	}
	var total int
	for _, s := range w.MessageSizes {
		total += s.Weight
	}
	return func() int {
		n := r.IntN(total)
		for _, s := range w.MessageSizes {
			if n < s.Weight {
				return s.Size
			}
			n -= s.Weight
		}
		return w.MessageSizes[len(w.MessageSizes)-1].Size
	}
}

// produce sends records until stop is done. With perRate > 0 it paces to
// that rate and measures latency from each record's intended send time (no
// coordinated omission); at max rate from the Produce call.
func produce(stop, life context.Context, cl *kgo.Client, w *Workload, topic string, perRate float64,
	payload []byte, keys [][]byte, seed uint64, c *counters, lat *SyncHist) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	nextSize := sizePicker(w, r)
	maxSize := w.MessageSize
	for _, s := range w.MessageSizes {
		maxSize = max(maxSize, s.Size)
	}
	pool := sync.Pool{New: func() any { b := make([]byte, maxSize); return &b }}
	start := time.Now()
	var sent uint64
	for stop.Err() == nil {
		due := uint64(1)
		var intended time.Time
		if perRate > 0 {
			el := time.Since(start)
			// Record i is due at start + i/perRate: at el, records
			// 0..floor(el*perRate) are due.
			want := uint64(el.Seconds()*perRate) + 1
			if want <= sent {
				next := start.Add(time.Duration(float64(sent) / perRate * float64(time.Second)))
				select {
				case <-stop.Done():
					return
				case <-time.After(time.Until(next)):
				}
				continue
			}
			due = want - sent
		}
		for i := uint64(0); i < due && stop.Err() == nil; i++ {
			if perRate > 0 {
				intended = start.Add(time.Duration(float64(sent+i) / perRate * float64(time.Second)))
			} else {
				intended = time.Now()
			}
			size := nextSize()
			bp := pool.Get().(*[]byte)
			v := (*bp)[:size]
			off := r.IntN(len(payload) - size + 1)
			copy(v, payload[off:off+size])
			binary.LittleEndian.PutUint64(v, uint64(intended.UnixNano()))
			rec := &kgo.Record{Topic: topic, Value: v}
			switch w.Keys {
			case "random":
				k := make([]byte, 16)
				binary.LittleEndian.PutUint64(k, r.Uint64())
				binary.LittleEndian.PutUint64(k[8:], r.Uint64())
				rec.Key = k
			case "distinct":
				rec.Key = keys[r.IntN(len(keys))]
			}
			sentAt := intended
			cl.Produce(stop, rec, func(rec *kgo.Record, err error) {
				defer pool.Put(bp)
				if err != nil {
					if !errors.Is(err, context.Canceled) && life.Err() == nil {
						c.noteErr(err)
					}
					return
				}
				n := uint64(len(rec.Value))
				c.ackedRecs.Add(1)
				c.ackedBytes.Add(n)
				ws := c.windowStart.Load()
				if ws != 0 && sentAt.UnixNano() >= ws && c.windowOpen.Load() {
					c.winPubRecs.Add(1)
					c.winPubB.Add(n)
				}
				if ws != 0 && sentAt.UnixNano() >= ws {
					lat.Record(time.Since(sentAt))
				}
			})
		}
		sent += due
	}
}

// consume polls until ctx is done, counting records and recording the
// end-to-end latency of those sent inside the window.
func consume(ctx context.Context, cl *kgo.Client, c *counters, lat *SyncHist) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		fs.EachRecord(func(rec *kgo.Record) {
			n := uint64(len(rec.Value))
			c.consRecs.Add(1)
			c.consBytes.Add(n)
			if c.windowOpen.Load() {
				c.winConsRecs.Add(1)
				c.winConsB.Add(n)
			}
			if len(rec.Value) >= 8 {
				sent := int64(binary.LittleEndian.Uint64(rec.Value))
				if ws := c.windowStart.Load(); ws != 0 && sent >= ws {
					lat.Record(now.Sub(time.Unix(0, sent)))
				}
			}
		})
	}
}

// createTopics creates the workload's topics and waits until each has a
// leader for every partition.
func createTopics(ctx context.Context, w *Workload, brokers []string) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequestTimeoutOverhead(60*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(60000)
	base := nonName.ReplaceAllString(strings.ToLower(w.Name), "-")
	suffix := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)
	var topics []string
	for i := 0; i < w.Topics; i++ {
		topics = append(topics, fmt.Sprintf("rb-%s-%s-%d", base, suffix, i))
	}
	cfg := map[string]*string{}
	for k, v := range w.TopicConfigs {
		cfg[k] = &v
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Create in chunks so one request stays moderate.
	for i := 0; i < len(topics); i += 100 {
		chunk := topics[i:min(i+100, len(topics))]
		resp, err := adm.CreateTopics(cctx, int32(w.PartitionsPerTopic), 1, cfg, chunk...)
		if err != nil {
			return nil, fmt.Errorf("cannot create topics: %w", err)
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				return nil, fmt.Errorf("cannot create topic %q: %w", r.Topic, r.Err)
			}
		}
	}
	for {
		md, err := adm.Metadata(cctx, topics...)
		ready := err == nil
		if ready {
			for _, t := range topics {
				td, ok := md.Topics[t]
				if !ok || td.Err != nil || len(td.Partitions) != w.PartitionsPerTopic {
					ready = false
					break
				}
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ready = false
					}
				}
			}
		}
		if ready {
			return topics, nil
		}
		select {
		case <-cctx.Done():
			return nil, fmt.Errorf("topics not ready: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
