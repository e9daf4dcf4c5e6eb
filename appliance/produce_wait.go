package appliance

// The waiting part of a produce, without a goroutine: each partition's
// append is posted to its owner shard as a reused message (produceWait),
// whose completion records the result; the completion that answers last,
// or the timeout, fills the response and marks the slot done. Everything
// lives in the request's reqState, so a produce allocates nothing per
// request (acks=0 and 1; acks=-1 adds the group commit's callback).

import (
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceState is one produce's answer and its partition completions.
type produceState struct {
	rs       *reqState
	b        *Broker
	resp     kmsg.ProduceResponse
	waits    []*produceWait // waits[:n] are in use; the rest are kept for reuse
	heads    []*produceWait // per shard id: the first wait of a ring-write shard's message (postWaits)
	tails    []*produceWait
	n        int
	pending  atomic.Int32 // waits not yet answered
	finished atomic.Bool
	timer    timerOnce
	acks     int16
	throttle time.Duration
}

// produceWait is one partition's append, posted to its owner shard.
type produceWait struct {
	ps      *produceState
	ti, pi  int
	st      *shardState
	key     tpKey
	records []byte
	state   atomic.Int32 // 0 waiting, 1 answered, 2 timed out
	res     produceResult
	postFn  func()
	doneFn  func(produceResult)

	// Ring writes (shardState.batchWrites): the request's next wait on
	// the same shard and the message that appends them all (postBatch).
	next    *produceWait
	batchFn func()

	// acks=-1: the appended partition, its answer and when its fdatasync
	// was asked for, kept for syncFn (partition.appendFor).
	part       *partition
	synced     produceResult
	flushStart time.Time
	syncFn     func(error)
}

func (ps *produceState) init(rs *reqState) {
	ps.rs = rs
	ps.timer.fn = ps.onTimeout
}

// reset prepares ps for a new request.
func (ps *produceState) reset(b *Broker, acks int16) {
	ps.b, ps.acks, ps.n, ps.throttle = b, acks, 0, 0
	ps.finished.Store(false)
	ps.pending.Store(0)
	topics := ps.resp.Topics[:0]
	ps.resp = kmsg.ProduceResponse{Topics: topics}
}

// addTopic appends a response topic, reusing an old one's partitions.
func (ps *produceState) addTopic(name string) *kmsg.ProduceResponseTopic {
	var rt *kmsg.ProduceResponseTopic
	ps.resp.Topics, rt = growSlice(ps.resp.Topics)
	parts := rt.Partitions[:0]
	*rt = kmsg.ProduceResponseTopic{Topic: name, Partitions: parts}
	return rt
}

// addProducePartition appends a response partition with no result yet.
func addProducePartition(rt *kmsg.ProduceResponseTopic, p int32) *kmsg.ProduceResponseTopicPartition {
	var rp *kmsg.ProduceResponseTopicPartition
	rt.Partitions, rp = growSlice(rt.Partitions)
	*rp = kmsg.ProduceResponseTopicPartition{Partition: p, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
	return rp
}

// addWait registers an append of records to partition key on st, answered
// into resp.Topics[ti].Partitions[pi].
func (ps *produceState) addWait(ti, pi int, st *shardState, key tpKey, records []byte) *produceWait {
	if ps.n == len(ps.waits) {
		w := &produceWait{ps: ps}
		w.postFn = w.post
		w.batchFn = w.postBatch
		w.doneFn = w.done
		w.syncFn = w.onSync
		ps.waits = append(ps.waits, w)
	}
	w := ps.waits[ps.n]
	ps.n++
	w.ti, w.pi, w.st, w.key, w.records = ti, pi, st, key, records
	w.state.Store(0)
	w.res = produceResult{}
	return w
}

// start arms the timeout and counts the waits as pending; the posts come
// after it. Each wait and the timer hold a reference on the state.
func (ps *produceState) start(timeout time.Duration) {
	ps.pending.Store(int32(ps.n))
	ps.rs.refs.Add(int32(ps.n) + 1)
	if ps.acks == -1 {
		ps.b.metrics.AddProducePurgatory(1)
	}
	ps.timer.arm(timeout)
}

// postWaits posts each wait to its owner shard. On a shard that batches
// writes, the request's waits go as one message (postBatch), so that their
// segment writes are submitted together.
func (ps *produceState) postWaits() {
	batches := 0
	for _, w := range ps.waits[:ps.n] {
		if !w.st.batchWrites {
			w.st.loop.Post(w.postFn)
			continue
		}
		id := w.st.id
		for len(ps.heads) <= id {
			ps.heads = append(ps.heads, nil)
			ps.tails = append(ps.tails, nil)
		}
		w.next = nil
		if ps.heads[id] == nil {
			ps.heads[id] = w
			batches++
		} else {
			ps.tails[id].next = w
		}
		ps.tails[id] = w
	}
	// Once the last batch is posted the request may be answered and its
	// state reused: stop reading ps then.
	for id := 0; batches > 0; id++ {
		if h := ps.heads[id]; h != nil {
			ps.heads[id], ps.tails[id] = nil, nil
			batches--
			h.st.loop.Post(h.batchFn)
		}
	}
}

// postBatch runs on the owner shard for the waits chained from w: each
// append queues its segment writes on the shard's ring (which submits them
// together when the loop next enters the kernel), and its answer, fdatasync
// request and publication follow once they are written
// (partition.whenWritten), so nothing is acknowledged or served before it
// is written, and the shard does not wait for the device meanwhile.
func (w *produceWait) postBatch() {
	for x := w; x != nil; {
		next := x.next // x's answer may be the request's last
		part := x.st.parts[x.key]
		if part == nil {
			x.done(notLeaderResult)
		} else {
			info, err := part.appendLog(x.records)
			part.whenWritten(info, err, x.ps.acks, x.doneFn, x)
		}
		x = next
	}
}

// notLeaderResult answers an append to a partition its shard no longer leads.
var notLeaderResult = produceResult{err: kerr.NotLeaderForPartition, baseOffset: -1, logAppendTime: -1, logStartOffset: -1}

// post runs on the owner shard: append, answering through done.
func (w *produceWait) post() {
	part := w.st.parts[w.key]
	if part == nil {
		w.done(notLeaderResult)
		return
	}
	part.appendFor(w.records, w.ps.acks, w.doneFn, w)
}

// onSync answers an acks=-1 append once its fdatasync is done (group-commit
// goroutine).
func (w *produceWait) onSync(err error) {
	p := w.part
	p.b.metrics.Flushed(w.flushStart)
	if err != nil {
		p.syncFailed(err)
		w.done(syncFailedResult(err))
		return
	}
	w.done(w.synced)
}

// done records the partition's result (any goroutine, once).
func (w *produceWait) done(res produceResult) {
	ps := w.ps
	w.res = res
	if w.state.CompareAndSwap(0, 1) && ps.pending.Add(-1) == 0 {
		ps.finish()
	}
	ps.rs.unref()
}

// onTimeout answers REQUEST_TIMED_OUT for every partition still waiting.
func (ps *produceState) onTimeout() {
	for _, w := range ps.waits[:ps.n] {
		w.state.CompareAndSwap(0, 2)
	}
	ps.finish()
	ps.rs.unref()
}

// finish fills the response and completes the slot (once).
func (ps *produceState) finish() {
	if !ps.finished.CompareAndSwap(false, true) {
		return
	}
	if ps.timer.disarm() {
		ps.rs.unref() // the timer's reference: it will not run
	}
	r := &ps.rs.req
	for _, w := range ps.waits[:ps.n] {
		rp := &ps.resp.Topics[w.ti].Partitions[w.pi]
		if w.state.Load() != 1 {
			rp.ErrorCode = kerr.RequestTimedOut.Code
			continue
		}
		res := w.res
		rp.ErrorCode = wire.ErrCode(res.err)
		rp.BaseOffset = res.baseOffset
		rp.LogAppendTime = res.logAppendTime
		rp.LogStartOffset = res.logStartOffset
		if res.err != nil && r.Version >= 8 {
			msg := res.err.Error()
			rp.ErrorMessage = &msg
			rp.ErrorRecords = wire.RecordErrors(res.err)
		}
	}
	if ps.acks == -1 {
		ps.b.metrics.AddProducePurgatory(-1)
	}
	s := &ps.rs.slot
	if ps.acks != 0 {
		s.resp = &ps.resp
	} else if reason := acks0Failure(&ps.resp); reason != "" {
		s.resp = wire.Close{Reason: reason}
	}
	if ps.throttle > 0 {
		// producer_byte_rate: hold the answer (Broker.holdThrottled) off the
		// shard; only throttled requests pay for the goroutine.
		ps.resp.ThrottleMillis = quota.ThrottleMillis(ps.throttle)
		ps.rs.refs.Add(1)
		go func() {
			ps.b.holdThrottled(r, ps.throttle)
			connOf(r).complete(s)
			ps.rs.unref()
		}()
		return
	}
	connOf(r).complete(s)
}
