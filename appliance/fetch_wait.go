package appliance

// The reading part of a fetch, without a goroutine: the partitions are read
// on their owner shards by a reused message (fetchState.step) that runs on
// one shard per run of consecutive partitions on it and posts itself to the
// next; the last one encodes the answer into the request's reused buffers
// and completes the slot. A run whose partitions have nothing past their
// fetch offsets is answered from their views (partView) without
// visiting its shard (advance, peekRun). A fetch that may wait for
// min_bytes (a long poll) stays goroutine-free too: each pass parks it on
// the partitions it reads, and an append, its max_wait_ms timer or the
// connection's end starts the next pass (fetchLongPoll). Only answers that
// client quotas may hold continue on a goroutine.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/appliance/fetchsession"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchState is one fetch's request-side and answer-side storage.
type fetchState struct {
	rs   *reqState
	b    *Broker
	r    *wire.Request
	req  *kmsg.FetchRequest
	im   *Image
	outs []fetchTopicOut
	ins  []fetchPartIn
	enc  fetchEncoder

	// The fetch session (KIP-227): what the request is to it, the session
	// of an incremental one, and scratch for its changes.
	sessKind  fetchsession.Kind
	sess      *fetchsession.Session
	upserts   []fetchsession.Part
	forgotten []fetchsession.Key
	newSess   []fetchsession.Part

	// groupByShard's scratch: each in's rank, the count per rank, and the
	// ins in their new order.
	ranks   []int32
	rankEnd []int
	regroup []fetchPartIn

	start    time.Time
	maxBytes int32
	i        int // next ins to read
	total    int32
	anyErr   bool
	full     bool // a read of this pass stopped at max_bytes (the response's): waiting cannot add to it
	stepFn   func()
	lp       fetchLongPoll

	// Direct mode on a ring shard (io.uring.direct.read.async): the blocks
	// the run would miss in the cache are read through the ring first, and
	// step runs again when they are in (afterPrefetch).
	pf       nvme.BlockPrefetch
	pfRounds int // prefetch rounds the current step has had
	pfDone   func()
}

func (fs *fetchState) init(rs *reqState) {
	fs.rs = rs
	fs.stepFn = fs.step
	fs.pfDone = fs.afterPrefetch
	fs.lp.fs = fs
	fs.lp.state.Store(lpDone)
}

func (fs *fetchState) reset(b *Broker, r *wire.Request, req *kmsg.FetchRequest, im *Image) {
	fs.b, fs.r, fs.req, fs.im = b, r, req, im
	fs.outs, fs.ins = fs.outs[:0], fs.ins[:0]
	fs.i, fs.total, fs.anyErr, fs.full = 0, 0, false, false
	fs.sessKind, fs.sess = fetchsession.Sessionless, nil
	fs.enc.brokers = fs.enc.brokers[:0]
}

// goneCode is the error for a partition its shard no longer has. A topic
// deleted since the fetch resolved it (a long poll parked across
// DeleteTopics) answers as a fetch sent now would: UNKNOWN_TOPIC_ID from
// v13 (topic ids), else UNKNOWN_TOPIC_OR_PARTITION. A partition that is
// still in the metadata but not here answers NOT_LEADER_OR_FOLLOWER.
func (fs *fetchState) goneCode(in fetchPartIn) int16 {
	t := fs.b.currentImage().TopicsByID[in.topic.ID]
	switch {
	case t != nil && int(in.partition) < len(t.Partitions):
		return kerr.NotLeaderForPartition.Code
	case t == nil && fs.r.Version >= 13:
		return kerr.UnknownTopicID.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

// dropRefs forgets the record bytes of the last answer: the chunks of the
// response partitions (in direct mode they point into 1 MiB block-cache
// blocks) and the encoded parts that point to them, keeping the slices'
// capacity for the next fetch. A pooled state, or one a closed connection
// left behind (still reachable through its ended long poll's partition
// views until they are pruned), would otherwise keep up to fetch.max.bytes
// of blocks alive: clients that sent 50 MB long polls and dropped their
// connections left ~580 MB held until the next housekeeping pass.
func (fs *fetchState) dropRefs() {
	outs := fs.outs[:cap(fs.outs)]
	for i := range outs {
		parts := outs[i].parts[:cap(outs[i].parts)]
		for j := range parts {
			clear(parts[j].chunks[:cap(parts[j].chunks)])
			parts[j].aborted = nil
		}
	}
	clear(fs.enc.raw.parts[:cap(fs.enc.raw.parts)])
}

// addTopic appends a response topic, reusing an old one's partitions.
func (fs *fetchState) addTopic(name string, id TopicID) *fetchTopicOut {
	var ot *fetchTopicOut
	fs.outs, ot = growSlice(fs.outs)
	parts := ot.parts[:0]
	*ot = fetchTopicOut{name: name, id: id, parts: parts}
	return ot
}

// addFetchPart appends a response partition to ot, reusing its old chunks.
func addFetchPart(ot *fetchTopicOut, op fetchPartOut) *fetchPartOut {
	var p *fetchPartOut
	ot.parts, p = growSlice(ot.parts)
	chunks, ends := p.chunks[:0], p.ends[:0]
	*p = op
	p.chunks, p.ends = chunks, ends
	return p
}

// begin starts the read pass on the first partition's shard.
func (fs *fetchState) begin() {
	fs.start = time.Now()
	// fetch.max.bytes caps what a request asks for, as in Kafka (a
	// request's max_bytes of 0 or less asks for the cap).
	fs.maxBytes = fs.b.cfg.FetchMaxBytes
	if m := fs.req.MaxBytes; m > 0 {
		fs.maxBytes = min(m, fs.maxBytes)
	}
	fs.b.metrics.AddFetchPurgatory(1)
	fs.rs.refs.Add(1) // the read pass's
	fs.groupByShard()
	if fs.req.MaxWaitMillis > 0 {
		fs.lp.begin(fs.start.Add(time.Duration(fs.req.MaxWaitMillis) * time.Millisecond))
	}
	fs.advance()
}

// groupByShard orders the partitions to read so that each shard is visited
// once, the connection's own shard last (its answer then needs no further
// hop). The order of the answer does not change (ins point into outs), nor
// does which partitions max_bytes lets through: each shard reads up to
// max_bytes and trimToMaxBytes applies the limit in request order at the
// end. A fetch of 16 partitions spread over 2 shards took up to 16
// cross-shard wake-ups in request order, now 2.
func (fs *fetchState) groupByShard() {
	n := len(fs.b.shards)
	if n < 2 || len(fs.ins) < 2 || connOf(fs.r) == nil {
		return
	}
	own := connOf(fs.r).shard
	fs.ranks = fs.ranks[:0]
	sorted := true
	for i := range fs.ins {
		in := &fs.ins[i]
		r := int32((fs.b.shardFor(in.topic, in.partition).id - own - 1 + 2*n) % n)
		if i > 0 && fs.ranks[i-1] > r {
			sorted = false
		}
		fs.ranks = append(fs.ranks, r)
	}
	if sorted {
		return
	}
	// A stable counting sort by rank (the rank is below n): the sort with a
	// comparison closure it replaced was ~1% of a ring shard's CPU samples
	// at 10 MB/s (16 partitions per fetch).
	fs.rankEnd = append(fs.rankEnd[:0], make([]int, n)...)
	for _, r := range fs.ranks {
		fs.rankEnd[r]++
	}
	at := 0
	for r, c := range fs.rankEnd {
		fs.rankEnd[r] = at // where rank r starts
		at += c
	}
	fs.regroup = append(fs.regroup[:0], fs.ins...)
	for i, r := range fs.ranks {
		fs.regroup[fs.rankEnd[r]] = fs.ins[i]
		fs.rankEnd[r]++
	}
	fs.ins, fs.regroup = fs.regroup, fs.ins
}

func (fs *fetchState) shardOf(i int) *shardState {
	in := &fs.ins[i]
	return fs.b.shardFor(in.topic, in.partition)
}

// runEnd is the end of the run of partitions on one shard that starts at i.
func (fs *fetchState) runEnd(i int) int {
	st := fs.shardOf(i)
	j := i + 1
	for j < len(fs.ins) && fs.shardOf(j) == st {
		j++
	}
	return j
}

// advance runs the pass from fs.i on any goroutine: it answers the runs
// whose partitions have nothing to give from their views (peekRun) and
// posts step to the first shard that has; at the end of the pass it
// answers or parks, and starts the pass again when a change came while it
// ran (lpDirty).
func (fs *fetchState) advance() {
	for {
		for fs.i < len(fs.ins) {
			j := fs.runEnd(fs.i)
			if !fs.peekRun(fs.i, j) {
				if fs.connGone() {
					// Nobody will read the answer: end before reading
					// (pipelined fetches of a client that left read up
					// to fetch.max.bytes each into direct-mode blocks).
					fs.lp.close()
					fs.answer(nil, false)
					return
				}
				fs.shardOf(fs.i).loop.Post(fs.stepFn)
				return
			}
			fs.i = j
		}
		if !fs.endPass() {
			return
		}
		fs.releaseReads()
		fs.i, fs.anyErr, fs.full = 0, false, false
	}
}

// releaseReads gives back the blocks that the last pass's chunks hold
// before another pass reads again: that pass parked or was overtaken by a
// change (lpDirty), so nothing it read was sent. Dropping them unreleased
// left each buffer to the garbage collector instead of the cache's free
// list, and a buffer registered with the shard's ring (io.uring.fixed.buffers)
// kept its slot for good: a consumer with fetch.min.bytes above what
// one append brings lost a registered buffer per pass.
func (fs *fetchState) releaseReads() {
	for ti := range fs.outs {
		parts := fs.outs[ti].parts
		for pi := range parts {
			op := &parts[pi]
			op.chunks, op.bytes = nvme.ReleaseChunks(op.chunks), 0
		}
	}
}

// connGone reports whether the fetch's connection has closed.
func (fs *fetchState) connGone() bool {
	c := connOf(fs.r)
	if c == nil {
		return false
	}
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// peekRun answers partitions ins[i:j] without visiting their shard when
// every one can be: from its view when it has no records past its fetch
// offset nor an error to give, from its log's published tail (direct
// mode, read_uncommitted) when it has; a fetch that may wait parks on
// each first (partView's doc says why in that order). It reports
// false, with the outs left for step to overwrite and no block held,
// otherwise. Like step, the run reads up to max_bytes, the first batch
// of its first partition with records even beyond.
func (fs *fetchState) peekRun(i, j int) bool {
	park := fs.req.MaxWaitMillis > 0
	gen := fs.lp.gen.Load()
	tail := fs.b.store.tailReads && fs.req.IsolationLevel == 0
	budget, first := fs.maxBytes, true
	for k, in := range fs.ins[i:j] {
		v := fs.b.ctl.lm.viewOf(in.topic.ID, in.partition)
		if v == nil {
			return fs.unpeek(i, i+k)
		}
		if park {
			v.park(&fs.lp, gen)
		}
		s := v.load()
		end := s.hw
		if fs.req.IsolationLevel == 1 {
			end = s.lso
		}
		if !s.open || in.leaderEpoch >= 0 && in.leaderEpoch != s.epoch {
			return fs.unpeek(i, i+k)
		}
		op := &fs.outs[in.ti].parts[in.pi]
		if in.offset != end {
			if !tail || in.offset < s.logStart || in.offset > end {
				return fs.unpeek(i, i+k)
			}
			limit := max(0, min(in.maxBytes, budget))
			res, ends, ok := v.tail.Read(op.chunks, op.ends, in.offset, limit, end, first)
			op.chunks, op.ends = res.Chunks, ends
			if !ok {
				fs.b.metrics.TailRead(false)
				return fs.unpeek(i, i+k)
			}
			fs.b.metrics.TailRead(true)
			op.bytes, op.limited = res.Bytes, res.Limited
			if res.Limited && limit < in.maxBytes {
				fs.full = true // the run's max_bytes budget, not the partition's limit
			}
			if res.Bytes > 0 {
				first = false
				budget -= res.Bytes
			}
		} else {
			op.chunks, op.ends, op.bytes, op.limited = op.chunks[:0], op.ends[:0], 0, false
		}
		op.aborted = nil
		op.hasRecords, op.errCode = true, 0
		op.hw, op.lso, op.logStart = s.hw, s.lso, s.logStart
	}
	return true
}

// unpeek lets go of the blocks peekRun took for ins[i:k] and reports
// false: the run is read on its shard after all.
func (fs *fetchState) unpeek(i, k int) bool {
	for _, in := range fs.ins[i:k] {
		op := &fs.outs[in.ti].parts[in.pi]
		op.chunks, op.bytes = nvme.ReleaseChunks(op.chunks), 0
	}
	return false
}

// step reads the run of partitions that starts at fs.i on their shard,
// where a fetch that may wait parks on each, then advances the pass.
func (fs *fetchState) step() {
	st := fs.shardOf(fs.i)
	j := fs.runEnd(fs.i)
	if st.asyncReads && fs.pfRounds == 0 {
		fs.pf.Begin(st.cache)
	}
	if st.asyncReads && fs.pfRounds < maxPrefetchRounds && fs.prefetch(st, j) {
		fs.pfRounds++
		return // afterPrefetch runs step again
	}
	fs.pfRounds = 0
	st.fetchReads.Add(1)
	// Each shard's run reads up to max_bytes, the first batch of its first
	// non-empty partition even beyond; trimToMaxBytes keeps request order.
	budget := fs.maxBytes
	first := true
	park := fs.req.MaxWaitMillis > 0
	gen := fs.lp.gen.Load()
	for _, in := range fs.ins[fs.i:j] {
		op := &fs.outs[in.ti].parts[in.pi]
		part := st.parts[tpKey{in.topic.ID, in.partition}]
		n, err := readPartition(part, in, op, budget, first, fs.req.IsolationLevel)
		if op.limited && budget < in.maxBytes {
			fs.full = true // the run's max_bytes budget, not the partition's limit
		}
		if err {
			fs.anyErr = true
			if part == nil {
				op.errCode = fs.goneCode(in)
			}
		}
		if n > 0 {
			first = false
			budget -= n
		}
		// Park on every readable partition, also those that gave bytes:
		// should the pass end short of min_bytes, any append may complete
		// it. A fetch that answers at once leaves stale entries behind,
		// which its generation (fetchLongPoll.gen) makes inert.
		if park && part != nil && !err {
			part.view.park(&fs.lp, gen)
		}
	}
	fs.i = j
	fs.advance()
}

// maxPrefetchRounds bounds the rounds of ring reads (each of at most
// nvme.PrefetchBlocks blocks, so a shard's disk queue never holds more)
// one step waits for before it reads what is still missing itself.
const maxPrefetchRounds = 8

// prefetch starts ring reads of the cache blocks that reading ins[fs.i:j]
// would miss, each partition up to what max_bytes leaves of the run's
// budget, and reports whether any started (nvme.Log.Prefetch, nvme.BlockPrefetch).
func (fs *fetchState) prefetch(st *shardState, j int) bool {
	budget := int64(fs.maxBytes)
	for _, in := range fs.ins[fs.i:j] {
		if budget <= 0 || fs.pf.Full() {
			break
		}
		part := st.parts[tpKey{in.topic.ID, in.partition}]
		if part == nil || part.offline != nil || in.maxBytes <= 0 {
			continue
		}
		budget -= part.log.Prefetch(&fs.pf, in.offset, int32(min(int64(in.maxBytes), budget)))
	}
	if fs.pf.Start(st.loop.Ring(), fs.pfDone) == 0 {
		return false
	}
	st.fetchPrefetches.Add(1)
	return true
}

// afterPrefetch runs the step whose reads have completed, on the shard's
// loop (the ring's completion), unless the shard is stopping: the ring then
// cancels what is in flight as it closes, after every connection is gone.
func (fs *fetchState) afterPrefetch() {
	if fs.shardOf(fs.i).loop.Closing() {
		return
	}
	fs.step()
}

// endPass answers the fetch or parks it once every partition is read; it
// reports whether the pass must run again (a change came while it ran).
func (fs *fetchState) endPass() bool {
	fs.trimToMaxBytes()
	req := fs.req
	if req.MaxWaitMillis <= 0 || fs.anyErr || fs.total >= req.MinBytes || fs.total > 0 && req.MinBytes <= 1 ||
		fs.full || fs.readable() >= int64(req.MinBytes) {
		fs.finish()
		return false
	}
	return fs.lp.passDone()
}

// readable is what min_bytes is held against, as Kafka's delayed fetch
// counts it: per partition what the pass read, or its partition_max_bytes
// when the read stopped at that limit with more behind it (whole batches
// never fill a limit exactly, so a fetch whose min_bytes is at or above
// its partition limits waited out max_wait_ms with the data there).
func (fs *fetchState) readable() int64 {
	var n int64
	for ti := range fs.outs {
		for pi := range fs.outs[ti].parts {
			op := &fs.outs[ti].parts[pi]
			if op.limited {
				n += int64(max(op.bytes, op.maxBytes))
			} else {
				n += int64(op.bytes)
			}
		}
	}
	return n
}

// trimToMaxBytes applies max_bytes to what the shards read, in request
// order as Kafka does: the first partition with records keeps them (its
// first batch may exceed the limits, KIP-74), each later one keeps the
// whole batches that fit in what is left and in its partition_max_bytes
// (each shard's run let its own first batch exceed that). A shard read at
// most max_bytes less what its own earlier partitions took, so this only
// ever cuts. It sets fs.total.
func (fs *fetchState) trimToMaxBytes() {
	var total int32
	for ti := range fs.outs {
		parts := fs.outs[ti].parts
		for pi := range parts {
			op := &parts[pi]
			if op.bytes == 0 {
				continue
			}
			if room := min(int64(fs.maxBytes)-int64(total), int64(max(op.maxBytes, 0))); total > 0 && int64(op.bytes) > room {
				keep := int32(0)
				for _, end := range op.ends {
					if int64(end) > room {
						break
					}
					keep = end
				}
				op.cut(keep)
				// Cut by what max_bytes leaves: nothing more can come;
				// by its own limit: it counts at that limit (readable).
				if room < int64(op.maxBytes) {
					fs.full = true
				} else {
					op.limited = true
				}
			}
			total += op.bytes
		}
	}
	fs.total = total
}

// cut keeps the first n bytes of op's records (a batch boundary) and
// releases the chunks it drops.
func (op *fetchPartOut) cut(n int32) {
	if n == 0 {
		op.chunks, op.bytes, op.aborted = nvme.ReleaseChunks(op.chunks), 0, nil
		return
	}
	left := n
	for i := range op.chunks {
		c := &op.chunks[i]
		if c.Len >= left {
			c.Len = left
			if c.Mem != nil {
				c.Mem = c.Mem[:left]
			}
			nvme.ReleaseChunks(op.chunks[i+1:])
			op.chunks = op.chunks[:i+1]
			break
		}
		left -= c.Len
	}
	op.bytes = n
}

// finish answers with what the last pass read.
func (fs *fetchState) finish() {
	fs.lp.close()
	fs.answer(fs.enc.encode(fs.r.Version, 0, fs.sessionAnswer(), fs.outs), false)
}

// restart begins another read pass from the first partition, on the
// waking goroutine (advance).
func (fs *fetchState) restart() {
	fs.releaseReads()
	fs.i, fs.anyErr, fs.full = 0, false, false
	fs.advance()
}

// Long-poll states: a read pass runs (reading), runs and something changed
// since it began (dirty: it reads again at its end), none runs and the
// fetch is parked (waiting), or no poll is on (done).
const (
	lpReading int32 = iota
	lpDirty
	lpWaiting
	lpDone
)

// fetchLongPoll is the waiting side of a fetch with max_wait_ms: parked on
// every partition its passes read, a timer for max_wait_ms, and a state
// that decides who starts the next pass. It lives in the request's storage
// and is reused: gen, bumped when a fetch ends, tells the partitions'
// entries of earlier fetches apart, and a timer that fires late checks
// the deadline of the poll it finds.
type fetchLongPoll struct {
	fs    *fetchState
	gen   atomic.Uint64
	state atomic.Int32
	// goneGen is gen+1 once the connection of poll gen closed (answer
	// nothing); a late end() of an earlier poll stores a stale value.
	goneGen atomic.Uint64
	timer   *time.Timer // made once, Reset for each poll
	armed   bool        // the timer and the conn registration are on (pass owner only)

	mu         sync.Mutex // the timer's view: deadline and expiry
	deadline   time.Time
	expiredGen uint64 // gen+1 once max_wait_ms of poll gen is over
}

// begin starts a poll that may wait until deadline; the first pass runs.
func (lp *fetchLongPoll) begin(deadline time.Time) {
	lp.mu.Lock()
	lp.deadline, lp.expiredGen = deadline, 0
	lp.mu.Unlock()
	lp.armed = false
	lp.state.Store(lpReading)
}

// over reports whether max_wait_ms of the current poll is over.
func (lp *fetchLongPoll) over() bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.expiredGen == lp.gen.Load()+1 || !time.Now().Before(lp.deadline)
}

// passDone runs at the end of a pass that did not reach min_bytes; it
// reports whether the pass must run again at once (dirty).
func (lp *fetchLongPoll) passDone() bool {
	fs := lp.fs
	switch {
	case lp.goneGen.Load() == lp.gen.Load()+1:
		lp.close()
		fs.answer(nil, false)
		return false
	case lp.over():
		fs.finish()
		return false
	}
	if !lp.armed {
		if !connOf(fs.r).addLongPoll(lp, lp.gen.Load()) {
			lp.close()
			fs.answer(nil, false) // the connection is closing
			return false
		}
		lp.mu.Lock()
		left := time.Until(lp.deadline)
		lp.mu.Unlock()
		if lp.timer == nil {
			lp.timer = time.AfterFunc(left, lp.expire)
		} else {
			lp.timer.Reset(left)
		}
		lp.armed = true
	}
	if lp.state.CompareAndSwap(lpReading, lpWaiting) {
		return false // parked: wake starts the next pass
	}
	lp.state.Store(lpReading) // dirty: read again now
	return true
}

// wake starts a pass, or marks the running one dirty; gen is the
// generation the caller parked with (any goroutine: a partition's append
// calls it on the partition's shard).
func (lp *fetchLongPoll) wake(gen uint64) {
	for lp.gen.Load() == gen {
		switch lp.state.Load() {
		case lpWaiting:
			if lp.state.CompareAndSwap(lpWaiting, lpReading) {
				if lp.goneGen.Load() == gen+1 {
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

// expire is the max_wait_ms timer; a late one from an earlier poll finds
// the deadline of the current one still ahead and does nothing.
func (lp *fetchLongPoll) expire() {
	lp.mu.Lock()
	if time.Now().Before(lp.deadline) {
		lp.mu.Unlock()
		return
	}
	gen := lp.gen.Load()
	lp.expiredGen = gen + 1
	lp.mu.Unlock()
	lp.wake(gen)
}

// end wakes poll gen for the connection's end (conn.markClosed).
func (lp *fetchLongPoll) end(gen uint64) {
	lp.goneGen.Store(gen + 1)
	lp.wake(gen)
}

// close ends the poll: its partitions' entries go stale, its timer stops
// and the connection forgets it.
func (lp *fetchLongPoll) close() {
	if lp.state.Load() == lpDone {
		return
	}
	lp.gen.Add(1)
	lp.state.Store(lpDone)
	if lp.armed {
		lp.armed = false
		lp.timer.Stop()
		connOf(lp.fs.r).removeLongPoll(lp)
	}
}

// answer completes the fetch with out (nil: the connection closed);
// offLoop tells whether it may block (client quotas hold throttled answers).
func (fs *fetchState) answer(out *rawResponse, offLoop bool) {
	b, r := fs.b, fs.r
	throttled := b.quotas.Kinds()&quota.KindFetch != 0 && out != nil // a consumer_byte_rate is set somewhere
	if throttled && !offLoop {
		go fs.answer(out, true)
		return
	}
	countFetched(b.metrics, fs.outs)
	if throttled {
		b.fetchQuota(r, fs.outs, out) // consumer_byte_rate (quota.Manager.RecordFetch)
	}
	b.metrics.AddFetchPurgatory(-1)
	s := &fs.rs.slot
	if out != nil {
		s.resp = out
	} else {
		fs.releaseReads() // nobody will send them
		fs.dropRefs()
	}
	connOf(r).complete(s)
	fs.rs.unref()
}
