package appliance

// The reading part of a fetch, without a goroutine: the partitions are read
// on their owner shards by a reused message (fetchState.step) that runs on
// one shard per run of consecutive partitions on it and posts itself to the
// next; the last one encodes the answer into the request's reused buffers
// and completes the slot. Only a fetch that has to wait for min_bytes (a
// long poll) continues on a goroutine (runFetch), as do answers that client
// quotas may hold.

import (
	"slices"
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
}

func (fs *fetchState) init(rs *reqState) {
	fs.rs = rs
	fs.stepFn = fs.step
}

func (fs *fetchState) reset(b *Broker, r *request, req *kmsg.FetchRequest, im *Image) {
	fs.b, fs.r, fs.req, fs.im = b, r, req, im
	fs.outs, fs.ins = fs.outs[:0], fs.ins[:0]
	fs.i, fs.total, fs.anyErr = 0, 0, false
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

// step reads the run of partitions that starts at fs.i, on their shard.
func (fs *fetchState) step() {
	st := fs.shardOf(fs.i)
	j := fs.i + 1
	for j < len(fs.ins) && fs.shardOf(j) == st {
		j++
	}
	budget := fs.maxBytes - fs.total
	first := fs.total == 0
	for _, in := range fs.ins[fs.i:j] {
		op := &fs.outs[in.ti].parts[in.pi]
		n, err := readPartition(st.parts[tpKey{in.topic.ID, in.partition}], in, op, budget, first, fs.req.IsolationLevel)
		if err {
			fs.anyErr = true
		}
		if n > 0 {
			first = false
			budget -= n
			fs.total += n
		}
	}
	fs.i = j
	if j < len(fs.ins) {
		fs.shardOf(j).loop.Post(fs.stepFn)
		return
	}
	req := fs.req
	if req.MaxWaitMillis <= 0 || fs.anyErr || fs.total >= req.MinBytes || fs.total > 0 && req.MinBytes <= 1 {
		fs.answer(fs.enc.encode(fs.r.version, 0, 0, fs.outs), false)
		return
	}
	go fs.longPoll()
}

// longPoll waits for min_bytes or max_wait_ms on a goroutine of its own.
func (fs *fetchState) longPoll() {
	deadline := fs.start.Add(time.Duration(fs.req.MaxWaitMillis) * time.Millisecond)
	out := fs.b.runFetch(fs.r, fs.req, fs.outs, fs.ins, deadline)
	fs.answer(out, true)
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
