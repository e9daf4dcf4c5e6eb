package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// counters are the run's shared tallies, as ringbench's.
type counters struct {
	ackedRecs, ackedBytes atomic.Uint64
	consRecs, consBytes   atomic.Uint64
	winPubRecs, winPubB   atomic.Uint64
	winConsRecs, winConsB atomic.Uint64
	errs                  atomic.Uint64
	firstErr              atomic.Pointer[string]
	windowStart           atomic.Int64
	windowOpen            atomic.Bool
}

func (c *counters) noteErr(err error) {
	c.errs.Add(1)
	s := err.Error()
	c.firstErr.CompareAndSwap(nil, &s)
}

// acked counts one stored message whose value carries its intended send
// time in the first 8 bytes.
func (c *counters) acked(v []byte, lat *syncHist) {
	n := uint64(len(v))
	c.ackedRecs.Add(1)
	c.ackedBytes.Add(n)
	sent := int64(binary.LittleEndian.Uint64(v))
	ws := c.windowStart.Load()
	if ws != 0 && sent >= ws {
		if c.windowOpen.Load() {
			c.winPubRecs.Add(1)
			c.winPubB.Add(n)
		}
		lat.Record(time.Since(time.Unix(0, sent)))
	}
}

var nonName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// RunWorkload runs w against the NATS server at url; brokerPid > 0 adds the
// server's CPU and RSS. It is ringbench's RunWorkload with JetStream in
// place of Kafka.
func RunWorkload(parent context.Context, w *Workload, url string, brokerPid int, grace time.Duration, progress bool, label string) *Result {
	res := &Result{Started: time.Now()}
	hard := w.Warmup.D() + w.Duration.D() + grace + 30*time.Second
	ctx, cancel := context.WithTimeout(parent, hard)
	defer cancel()

	admin, err := nats.Connect(url, nats.Name("ringbench-admin"))
	if err != nil {
		res.Error = fmt.Sprintf("cannot connect to %s: %v", url, err)
		return res
	}
	defer admin.Close()
	streams, err := createStreams(ctx, w, admin)
	if err != nil {
		res.Error = err.Error()
		return res
	}

	var c counters
	pubLat, e2eLat := newSyncHist(), newSyncHist()

	// Consumers.
	var consMu sync.Mutex
	var stopConsFns []func()
	stopCons := func() {
		consMu.Lock()
		defer consMu.Unlock()
		for _, f := range stopConsFns {
			f()
		}
		stopConsFns = nil
	}
	defer stopCons()
	startConsumers := func() error {
		for ti, stream := range streams {
			var shared jetstream.Consumer
			for ci := 0; ci < w.ConsumersPerTopic; ci++ {
				nc, err := nats.Connect(url, nats.Name(fmt.Sprintf("ringbench-c%d-%d", ti, ci)))
				if err != nil {
					return fmt.Errorf("cannot connect consumer: %w", err)
				}
				js, err := jetstream.New(nc)
				if err != nil {
					nc.Close()
					return err
				}
				var cons jetstream.Consumer
				if w.ConsumerGroup {
					if shared == nil {
						shared, err = js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
							Durable: "ringbench", AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
						if err != nil {
							nc.Close()
							return fmt.Errorf("cannot create consumer on %q: %w", stream, err)
						}
					}
					cons, err = js.Consumer(ctx, stream, "ringbench")
				} else {
					var filters []string
					if w.ConsumersPerTopic > 1 {
						for p := ci; p < w.PartitionsPerTopic; p += w.ConsumersPerTopic {
							filters = append(filters, stream+"."+strconv.Itoa(p))
						}
						if len(filters) == 0 {
							nc.Close()
							continue
						}
					}
					cons, err = js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
						FilterSubjects: filters, DeliverPolicy: jetstream.DeliverAllPolicy})
				}
				if err != nil {
					nc.Close()
					return fmt.Errorf("cannot create consumer on %q: %w", stream, err)
				}
				cc, err := cons.Consume(func(m jetstream.Msg) {
					consumeOne(m.Data(), &c, e2eLat)
				}, jetstream.PullMaxMessages(20000))
				if err != nil {
					nc.Close()
					return fmt.Errorf("cannot consume %q: %w", stream, err)
				}
				consMu.Lock()
				stopConsFns = append(stopConsFns, func() { cc.Stop(); nc.Close() })
				consMu.Unlock()
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
	for ti, stream := range streams {
		for pi := 0; pi < w.ProducersPerTopic; pi++ {
			p, err := newProducer(url, fmt.Sprintf("ringbench-p%d-%d", ti, pi), w, stream, &c, pubLat, grace)
			if err != nil {
				res.Error = err.Error()
				return res
			}
			seed := uint64(ti*100003 + pi)
			prodWG.Add(1)
			go func() {
				defer prodWG.Done()
				defer p.nc.Close()
				p.run(prodCtx, ctx, perRate, payload, seed)
				select {
				case <-p.js.PublishAsyncComplete():
				case <-time.After(grace):
				case <-ctx.Done():
				}
			}()
		}
	}

	// Sampler: warm-up, window, catch-up, progress.
	readCPU := func() (broker, self procStat) {
		if brokerPid > 0 {
			broker, _ = readProcStat(brokerPid)
		}
		self, _ = readProcStat(0)
		return
	}
	runStart := time.Now()
	var winStart time.Time
	var bStart, sStart procStat
	window := w.Duration.D()
	winEnd := time.Time{}
	var catch *CatchUp
	var catchStart time.Time
	consStarted := w.BacklogBytes == 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastPubR, lastPubB, lastConsR, lastConsB uint64
	lastT := time.Now()
	var lastBCPU float64
	if brokerPid > 0 {
		s, _ := readProcStat(brokerPid)
		lastBCPU = s.CPUSeconds
	}
	var catchDone atomic.Int64
	isTTY := false
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		isTTY = true
	}
	stopAt := runStart.Add(w.Warmup.D())
	openWindow := func(now time.Time) {
		winStart = now
		pubLat.ResetAll()
		e2eLat.ResetAll()
		bStart, sStart = readCPU()
		c.windowStart.Store(winStart.UnixNano())
		c.windowOpen.Store(true)
		winEnd = winStart.Add(window)
	}
	if w.Warmup == 0 {
		openWindow(time.Now())
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case now := <-tick.C:
			if winStart.IsZero() && !now.Before(stopAt) {
				openWindow(now)
			}
			if !consStarted && !winStart.IsZero() && int64(c.ackedBytes.Load()) >= w.BacklogBytes {
				consStarted = true
				catchStart = now
				target := c.ackedRecs.Load()
				catch = &CatchUp{BacklogBytes: int64(c.ackedBytes.Load())}
				if w.StopProducersForCatchUp {
					stopProd()
				}
				if err := startConsumers(); err != nil {
					res.Error = err.Error()
					break loop
				}
				go func() {
					for ctx.Err() == nil {
						if c.consRecs.Load() >= target {
							catchDone.Store(time.Now().UnixNano())
							return
						}
						time.Sleep(2 * time.Millisecond)
					}
				}()
			}
			if catch != nil && !catch.Completed && catchDone.Load() != 0 {
				catch.Completed = true
				catch.Seconds = time.Unix(0, catchDone.Load()).Sub(catchStart).Seconds()
				catch.MBPS = float64(catch.BacklogBytes) / 1e6 / catch.Seconds
			}
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
				if bs, err := readProcStat(brokerPid); err == nil {
					s.BrokerCPU = (bs.CPUSeconds - lastBCPU) / dt
					lastBCPU = bs.CPUSeconds
				}
			}
			res.Series = append(res.Series, s)
			lastPubR, lastPubB, lastConsR, lastConsB, lastT = pr, pb, cr, cb, now
			if progress {
				phase := "warm-up"
				if !winStart.IsZero() {
					phase = fmt.Sprintf("%3.0f/%.0fs", s.T, window.Seconds())
				}
				line := fmt.Sprintf("%s %s pub %7.0f r/s %6.1f MB/s p99 %7.2f ms | cons %6.1f MB/s e2e p99 %7.2f ms | backlog %6.1f MB | broker %.2f cores | errs %d",
					label, phase, s.PubRPS, s.PubMBPS, s.PubP99Ms, s.ConsMBPS, s.E2EP99Ms, float64(s.BacklogBytes)/1e6, s.BrokerCPU, c.errs.Load())
				if isTTY {
					fmt.Fprintf(os.Stderr, "\r\033[K%s", line)
				} else {
					fmt.Fprintln(os.Stderr, line)
				}
			}
			if !winEnd.IsZero() && !now.Before(winEnd.Add(-50*time.Millisecond)) {
				if catch == nil && !consStarted {
					catch = &CatchUp{BacklogBytes: int64(c.ackedBytes.Load())}
					break loop
				}
				if catch == nil || catch.Completed {
					break loop
				}
			}
		}
	}
	if progress && isTTY {
		fmt.Fprintln(os.Stderr)
	}
	winClose := time.Now()
	c.windowOpen.Store(false)
	if winStart.IsZero() {
		winStart = winClose
	}
	winDur := winClose.Sub(winStart)
	bEnd, sEnd := readCPU()
	stopProd()
	prodWG.Wait()
	if w.ConsumersPerTopic > 0 && consStarted {
		deadline := time.Now().Add(grace)
		for c.consRecs.Load() < c.ackedRecs.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	stopCons()

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
	mk := func(pid int, a, b procStat) ProcReport {
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

// consumeOne counts a delivered message and records its end-to-end latency
// when it was sent inside the window.
func consumeOne(v []byte, c *counters, lat *syncHist) {
	now := time.Now()
	n := uint64(len(v))
	c.consRecs.Add(1)
	c.consBytes.Add(n)
	if c.windowOpen.Load() {
		c.winConsRecs.Add(1)
		c.winConsB.Add(n)
	}
	if len(v) >= 8 {
		sent := int64(binary.LittleEndian.Uint64(v))
		if ws := c.windowStart.Load(); ws != 0 && sent >= ws {
			lat.Record(now.Sub(time.Unix(0, sent)))
		}
	}
}

// createStreams creates one file-storage stream per topic, subjects
// "<name>.<partition>", and returns their names.
func createStreams(ctx context.Context, w *Workload, nc *nats.Conn) ([]string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	base := nonName.ReplaceAllString(strings.ToLower(w.Name), "-")
	suffix := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)
	comp := jetstream.NoCompression
	if w.Compression != "" && w.Compression != "none" {
		comp = jetstream.S2Compression
	}
	var names []string
	for i := 0; i < w.Topics; i++ {
		name := fmt.Sprintf("rb-%s-%s-%d", base, suffix, i)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := js.CreateStream(cctx, jetstream.StreamConfig{
			Name:        name,
			Subjects:    []string{name + ".*"},
			Storage:     jetstream.FileStorage,
			Replicas:    1,
			Retention:   jetstream.LimitsPolicy,
			Compression: comp,
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("cannot create stream %q: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// producer is one connection publishing to one stream.
type producer struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	w        *Workload
	subjects []string
	c        *counters
	lat      *syncHist
	pool     sync.Pool
	stall    time.Duration
}

func newProducer(url, id string, w *Workload, stream string, c *counters, lat *syncHist, stall time.Duration) (*producer, error) {
	nc, err := nats.Connect(url, nats.Name(id))
	if err != nil {
		return nil, fmt.Errorf("cannot connect producer: %w", err)
	}
	p := &producer{nc: nc, w: w, c: c, lat: lat, stall: stall}
	maxSize := w.MessageSize
	for _, s := range w.MessageSizes {
		maxSize = max(maxSize, s.Size)
	}
	p.pool.New = func() any { b := make([]byte, maxSize); return &b }
	for i := 0; i < w.PartitionsPerTopic; i++ {
		p.subjects = append(p.subjects, stream+"."+strconv.Itoa(i))
	}
	pending := w.MaxBufferedRecords
	if pending <= 0 {
		pending = 10000
	}
	p.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(pending),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			c.acked(m.Data, lat)
			p.put(m.Data)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			if !errors.Is(err, nats.ErrConnectionClosed) {
				c.noteErr(err)
			}
			p.put(m.Data)
		}))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

func (p *producer) put(v []byte) {
	v = v[:cap(v)]
	p.pool.Put(&v)
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

// run publishes until stop is done, paced as ringbench's produce: with
// perRate > 0 each message's latency counts from its intended send time.
func (p *producer) run(stop, life context.Context, perRate float64, payload []byte, seed uint64) {
	w := p.w
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	nextSize := sizePicker(w, r)
	var keys []uint32
	if w.Keys == "distinct" {
		for i := 0; i < w.KeyCount; i++ {
			h := fnv.New32a()
			fmt.Fprintf(h, "key-%08d", i)
			keys = append(keys, h.Sum32())
		}
	}
	start := time.Now()
	var sent uint64
	for stop.Err() == nil {
		due := uint64(1)
		if perRate > 0 {
			want := uint64(time.Since(start).Seconds()*perRate) + 1
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
			var intended time.Time
			if perRate > 0 {
				intended = start.Add(time.Duration(float64(sent+i) / perRate * float64(time.Second)))
			} else {
				intended = time.Now()
			}
			size := nextSize()
			bp := p.pool.Get().(*[]byte)
			v := (*bp)[:size]
			off := r.IntN(len(payload) - size + 1)
			copy(v, payload[off:off+size])
			binary.LittleEndian.PutUint64(v, uint64(intended.UnixNano()))
			var part int
			switch w.Keys {
			case "random":
				part = r.IntN(len(p.subjects))
			case "distinct":
				part = int(keys[r.IntN(len(keys))] % uint32(len(p.subjects)))
			default:
				part = int((sent + i) % uint64(len(p.subjects)))
			}
			m := &nats.Msg{Subject: p.subjects[part], Data: v}
			if w.Acks == "0" {
				if err := p.nc.PublishMsg(m); err != nil {
					if life.Err() == nil {
						p.c.noteErr(err)
					}
				} else {
					p.c.acked(v, p.lat)
				}
				p.put(v)
				continue
			}
			if _, err := p.js.PublishMsgAsync(m, jetstream.WithStallWait(p.stall)); err != nil {
				if life.Err() == nil && stop.Err() == nil {
					p.c.noteErr(err)
				}
				p.put(v)
			}
		}
		sent += due
	}
}
