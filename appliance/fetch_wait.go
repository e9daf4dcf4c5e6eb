package appliance

// The reading part of a fetch, without a goroutine: the partitions are read
// on their owner shards by a reused message (fetchState.step) that runs on
// one shard per run of consecutive partitions on it and posts itself to the
// next; the last one encodes the answer into the request's reused buffers
// and completes the slot. A fetch that has to wait for min_bytes (a long
// poll) stays goroutine-free too: it parks a waiter on the partitions it
// read, and an append, its max_wait_ms timer or the connection's end starts
// the next read pass (fetchLongPoll). Only answers that client quotas may
// hold continue on a goroutine.

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchState is one fetch's request-side and answer-side storage.
type fetchState struct {
	rs   *reqState
	b    *Broker
	r    *request
	req  *kmsg.FetchRequest
	im   *Image
	outs []fetchTopicOut
	ins  []fetchPartIn
	enc  fetchEncoder

	start    time.Time
	maxBytes int32
	i        int // next ins to read
	total    int32
	anyErr   bool
	stepFn   func()
	lp       *fetchLongPoll // set once the first pass came short of min_bytes
}

func (fs *fetchState) init(rs *reqState) {
	fs.rs = rs
	fs.stepFn = fs.step
}

func (fs *fetchState) reset(b *Broker, r *request, req *kmsg.FetchRequest, im *Image) {
	fs.b, fs.r, fs.req, fs.im = b, r, req, im
	fs.outs, fs.ins = fs.outs[:0], fs.ins[:0]
	fs.i, fs.total, fs.anyErr = 0, 0, false
	fs.lp = nil
}

// addTopic appends a response topic, reusing an old one's partitions.
func (fs *fetchState) addTopic(name string, id TopicID) *fetchTopicOut {
	var ot *fetchTopicOut
	fs.outs, ot = growSlice(fs.outs)
	parts := ot.parts[:0]
	*ot = fetchTopicOut{name: name, id: id, parts: parts}
	return ot
}

// addPart appends a response partition to ot, reusing its old chunks.
func addFetchPart(ot *fetchTopicOut, op fetchPartOut) *fetchPartOut {
	var p *fetchPartOut
	ot.parts, p = growSlice(ot.parts)
	chunks := p.chunks[:0]
	*p = op
	p.chunks = chunks
	return p
}

// begin starts the read pass on the first partition's shard.
func (fs *fetchState) begin() {
	fs.start = time.Now()
	fs.maxBytes = fs.req.MaxBytes
	if fs.maxBytes <= 0 {
		fs.maxBytes = 52428800
	}
	fs.b.metrics.fetchPurgatory.Add(1)
	fs.rs.refs.Add(1) // the read pass's
	fs.groupByShard()
	fs.shardOf(0).loop.Post(fs.stepFn)
}

// groupByShard orders the partitions to read so that each shard is visited
// once, the connection's own shard last (its answer then needs no further
// hop). The order of the answer does not change (ins point into outs); only
// which partitions a max_bytes budget reaches first does, as a fetch
// session's rotation would. A fetch of 16 partitions spread over 2 shards
// took up to 16 cross-shard wake-ups in request order, now 2.
func (fs *fetchState) groupByShard() {
	n := len(fs.b.shards)
	if n < 2 || len(fs.ins) < 2 || fs.r.c == nil {
		return
	}
	own := fs.r.c.shard
	rank := func(in *fetchPartIn) int {
		return (fs.b.shardFor(in.topic.Partitions[in.partition]).id - own - 1 + 2*n) % n
	}
	sorted := true
	for i := 1; i < len(fs.ins); i++ {
		if rank(&fs.ins[i-1]) > rank(&fs.ins[i]) {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(fs.ins, func(a, b fetchPartIn) int { return rank(&a) - rank(&b) })
	}
}

func (fs *fetchState) shardOf(i int) *shardState {
	in := &fs.ins[i]
	return fs.b.shardFor(in.topic.Partitions[in.partition])
}

// step reads the run of partitions that starts at fs.i, on their shard;
// during a long poll it parks the waiter on each partition it read.
func (fs *fetchState) step() {
	st := fs.shardOf(fs.i)
	j := fs.i + 1
	for j < len(fs.ins) && fs.shardOf(j) == st {
		j++
	}
	budget := fs.maxBytes - fs.total
	first := fs.total == 0
	lp := fs.lp
	for _, in := range fs.ins[fs.i:j] {
		op := &fs.outs[in.ti].parts[in.pi]
		part := st.parts[tpKey{in.topic.ID, in.partition}]
		n, err := readPartition(part, in, op, budget, first, fs.req.IsolationLevel)
		if err {
			fs.anyErr = true
		}
		if n > 0 {
			first = false
			budget -= n
			fs.total += n
		}
		// Park on every readable partition, also those that gave bytes:
		// with min_bytes not yet reached, any append may complete it.
		if lp != nil && part != nil && !err {
			part.park(&lp.w)
		}
	}
	fs.i = j
	if j < len(fs.ins) {
		fs.shardOf(j).loop.Post(fs.stepFn)
		return
	}
	req := fs.req
	if req.MaxWaitMillis <= 0 || fs.anyErr || fs.total >= req.MinBytes || fs.total > 0 && req.MinBytes <= 1 {
		fs.finish()
		return
	}
	if lp == nil {
		fs.startLongPoll()
		return
	}
	lp.passDone()
}

// finish answers with what the last pass read.
func (fs *fetchState) finish() {
	if lp := fs.lp; lp != nil {
		lp.close()
	}
	fs.answer(fs.enc.encode(fs.r.version, 0, 0, fs.outs), false)
}

// restart begins another read pass from the first partition.
func (fs *fetchState) restart() {
	fs.i, fs.total, fs.anyErr = 0, 0, false
	fs.shardOf(0).loop.Post(fs.stepFn)
}

// Long-poll states: a read pass runs (reading), runs and something changed
// since it began (dirty: it reads again at its end), or none runs and the
// waiter is parked (waiting).
const (
	lpReading int32 = iota
	lpDirty
	lpWaiting
	lpDone
)

// fetchLongPoll is one long poll (min_bytes not reached, max_wait_ms not
// over): a waiter parked on every partition the passes read, a timer for
// max_wait_ms, and a state that decides who starts the next pass. A fresh
// one per long poll, so that a registration left in a partition's waiter
// list can never wake a later fetch on the same request storage.
type fetchLongPoll struct {
	fs       *fetchState
	w        fetchWaiter
	state    atomic.Int32
	expired  atomic.Bool // max_wait_ms is over: the next pass answers
	gone     atomic.Bool // the connection closed: answer nothing
	timer    *time.Timer
	deadline time.Time
}

// startLongPoll runs at the end of the first pass that came short: it
// parks for the rest of max_wait_ms, reading again once with the waiter
// parked so that no append between the passes is missed.
func (fs *fetchState) startLongPoll() {
	deadline := fs.start.Add(time.Duration(fs.req.MaxWaitMillis) * time.Millisecond)
	left := time.Until(deadline)
	if left <= 0 {
		fs.finish()
		return
	}
	lp := &fetchLongPoll{fs: fs, deadline: deadline}
	lp.w.wake = lp.wake
	fs.lp = lp
	if !fs.r.c.addLongPoll(lp) {
		lp.close()
		fs.answer(nil, false) // the connection is closing
		return
	}
	lp.timer = time.AfterFunc(left, lp.expire)
	fs.restart()
}

// wake starts a pass, or marks the running one dirty (any goroutine; a
// partition's append calls it on the partition's shard).
func (lp *fetchLongPoll) wake() {
	for {
		switch st := lp.state.Load(); st {
		case lpWaiting:
			if lp.state.CompareAndSwap(lpWaiting, lpReading) {
				if lp.gone.Load() {
					lp.close()
					lp.fs.answer(nil, true)
					return
				}
				lp.fs.restart()
				return
			}
		case lpReading:
			if lp.state.CompareAndSwap(lpReading, lpDirty) {
				return
			}
		default: // dirty or done
			return
		}
	}
}

func (lp *fetchLongPoll) expire() { lp.expired.Store(true); lp.wake() }

// end wakes the poll for the connection's end (conn.endLongPolls).
func (lp *fetchLongPoll) end() { lp.gone.Store(true); lp.wake() }

// passDone runs at the end of a pass that did not reach min_bytes.
func (lp *fetchLongPoll) passDone() {
	fs := lp.fs
	switch {
	case lp.gone.Load():
		lp.close()
		fs.answer(nil, false)
		return
	case lp.expired.Load() || !time.Now().Before(lp.deadline):
		fs.finish()
		return
	}
	if lp.state.CompareAndSwap(lpReading, lpWaiting) {
		return // parked: wake starts the next pass
	}
	lp.state.Store(lpReading) // dirty: read again now
	fs.restart()
}

// close ends the poll: its waiter drops out of the partitions' lists, its
// timer stops and the connection forgets it.
func (lp *fetchLongPoll) close() {
	lp.state.Store(lpDone)
	lp.w.done.Store(true)
	if lp.timer != nil {
		lp.timer.Stop()
	}
	lp.fs.r.c.removeLongPoll(lp)
}

// answer completes the fetch with out (nil: the connection closed);
// offLoop tells whether it may block (client quotas hold throttled answers).
func (fs *fetchState) answer(out *rawResponse, offLoop bool) {
	b, r, im := fs.b, fs.r, fs.im
	quota := im.quotaKinds&quotaKindFetchBit != 0 && out != nil // a consumer_byte_rate is set somewhere
	if quota && !offLoop {
		go fs.answer(out, true)
		return
	}
	b.metrics.fetched(fs.outs)
	if quota {
		b.fetchQuota(im, r, fs.outs, out) // consumer_byte_rate (quota_enforce.go)
	}
	b.metrics.fetchPurgatory.Add(-1)
	s := &fs.rs.slot
	if out != nil {
		s.resp = out
	}
	r.c.complete(s)
	fs.rs.unref()
}
