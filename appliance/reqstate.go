package appliance

// Reusable request storage: the produce and fetch request path allocates
// nothing per request in steady state (alloc_test.go proves it with
// testing.AllocsPerRun on both engines).
//
// A reqState holds everything one request needs from its frame to its
// answer: the frame bytes, the response-order slot, the request the handler
// sees, the decoded kmsg request (decoded in place, reusing the slices of
// the previous one), the answer, and the per-partition completions that
// owner shards call. Produce and fetch states are taken from reqPool and
// go back to it when the last of their users lets go (refs): the writer
// after it wrote the answer, each partition completion posted to a shard,
// the timeout timer. A state that is never released (a connection closed
// with answers pending, a completion never called) is left to the GC; it
// is never reused early. Other API keys take a state too but never return
// it: their handlers may keep slices of the frame.
//
// Strings: produce and fetch frames are decoded with UnsafeReadFrom, so
// their strings alias the frame, which is reused. Before the handler runs,
// topic names are replaced by the image's copies (unknown names are
// cloned) and the few other strings (transactional id, rack, cluster id)
// are cloned, so nothing a handler keeps points into the frame; the record
// batches ([]byte) do, and they are used only until the partition
// completion that holds a reference returns.

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type reqState struct {
	slot  slot
	req   request
	frame []byte
	refs  atomic.Int32
	// pooled: the state goes back to reqPool once refs drops to zero.
	pooled bool

	produceReq kmsg.ProduceRequest
	fetchReq   kmsg.FetchRequest
	produce    produceState
	fetch      fetchState
}

// reqPool holds released states; Get's nil means none (New would make an
// initialization cycle: a state's callbacks release into the pool).
var reqPool sync.Pool

func newReqState() *reqState {
	rs := &reqState{}
	rs.slot.rs = rs
	rs.req.rs = rs
	rs.produce.init(rs)
	rs.fetch.init(rs)
	return rs
}

// getReqState takes a state for a frame of n bytes (rs.frame has length n).
func getReqState(n int) *reqState {
	rs, _ := reqPool.Get().(*reqState)
	if rs == nil {
		rs = newReqState()
	}
	if cap(rs.frame) < n {
		if n > maxPooledFrame {
			rs.frame = getBigFrame(n)
		} else {
			rs.frame = make([]byte, n, max(n, 512))
		}
	}
	rs.frame = rs.frame[:n]
	rs.refs.Store(1) // the writer's
	rs.pooled = false
	rs.slot.reset()
	rs.req = request{rs: rs}
	return rs
}

// maxPooledFrame is the largest frame buffer a pooled state keeps.
const maxPooledFrame = 1 << 20

// Frames above maxPooledFrame (large produce requests) come from pools by
// power-of-two size class, 2 MiB to 128 MiB: at 240 MB/s of 1-4 MB produce
// requests, allocating each (zeroed, then faulted in) was ~7% of the
// broker's CPU. Larger frames are allocated and left to the GC.
var bigFrames [7]sync.Pool

const bigFrameShift = 21 // class 0 holds 2 MiB buffers

func bigFrameClass(n int) int {
	c := 0
	for n > 1<<(bigFrameShift+c) {
		c++
	}
	return c
}

// getBigFrame returns a buffer of length n > maxPooledFrame.
func getBigFrame(n int) []byte {
	c := bigFrameClass(n)
	if c >= len(bigFrames) {
		return make([]byte, n)
	}
	if b, ok := bigFrames[c].Get().([]byte); ok {
		return b[:n]
	}
	return make([]byte, n, 1<<(bigFrameShift+c))
}

// putBigFrame gives a getBigFrame buffer back.
func putBigFrame(b []byte) {
	c := bigFrameClass(cap(b))
	if c < len(bigFrames) && cap(b) == 1<<(bigFrameShift+c) {
		bigFrames[c].Put(b[:0]) //nolint:staticcheck // the slice header's allocation is noise next to the buffer's
	}
}

// unref drops one reference; the last one returns a pooled state.
func (rs *reqState) unref() {
	if rs.refs.Add(-1) == 0 && rs.pooled {
		rs.slot.resp = nil
		rs.req = request{rs: rs}
		rs.fetch.dropRefs() // a pooled state pins no cache blocks
		if cap(rs.frame) > maxPooledFrame {
			putBigFrame(rs.frame) // one large produce does not pin its frame
			rs.frame = nil
		}
		reqPool.Put(rs)
	}
}

// releaseSlot is called by the writers once s's answer is written (or
// copied into the transport).
func releaseSlot(s *slot) {
	if s.rs != nil {
		s.rs.unref()
	}
}

// abandon is a writer giving up a slot it will not send (its connection
// closed). A done slot is released now; one still in progress is released
// by its completion (conn.complete), so that its state goes back to the
// pool without its record bytes instead of keeping them for as long as
// anything (an ended long poll's partition views) reaches the state.
// Clients that sent 50 MB fetches and closed their connections before the
// answers left ~560 MB of direct-mode cache blocks held that way until the
// shards' housekeeping pruned the views.
func (s *slot) abandon() {
	s.orphan.Store(true)
	if s.ready.Load() {
		s.releaseOnce()
	}
}

// releaseOnce is releaseSlot for an abandoned slot; of the writer and the
// completion, whichever sees the other's mark first releases it.
func (s *slot) releaseOnce() {
	if s.claimed.CompareAndSwap(false, true) {
		releaseSlot(s)
	}
}

// hotKey reports the API keys whose frames are decoded into reused storage.
func hotKey(key int16) bool { return key == 0 || key == 1 }

// internStrings replaces the strings of a request decoded in place (they
// alias the frame) with ones that outlive it: the image's topic names, or
// clones.
func internStrings(b *Broker, req kmsg.Request) {
	im := b.currentImage()
	name := func(s string) string {
		if s == "" {
			return ""
		}
		if t := im.Topics[s]; t != nil {
			return t.Name
		}
		return strings.Clone(s)
	}
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		if req.TransactionID != nil {
			s := strings.Clone(*req.TransactionID)
			req.TransactionID = &s
		}
		for i := range req.Topics {
			req.Topics[i].Topic = name(req.Topics[i].Topic)
		}
	case *kmsg.FetchRequest:
		if req.ClusterID != nil {
			s := strings.Clone(*req.ClusterID)
			req.ClusterID = &s
		}
		req.Rack = strings.Clone(req.Rack)
		for i := range req.Topics {
			req.Topics[i].Topic = name(req.Topics[i].Topic)
		}
		for i := range req.ForgottenTopics {
			req.ForgottenTopics[i].Topic = name(req.ForgottenTopics[i].Topic)
		}
	}
}

// growSlice returns s with one more element and a pointer to it; within
// capacity the element is the old one, so the caller can keep its slices.
func growSlice[T any](s []T) ([]T, *T) {
	if len(s) < cap(s) {
		s = s[:len(s)+1]
	} else {
		var zero T
		s = append(s, zero)
	}
	return s, &s[len(s)-1]
}

// timerOnce is a reusable timeout: arm starts it, disarm stops it and
// reports whether it will not fire.
type timerOnce struct {
	t  *time.Timer
	fn func()
}

func (t *timerOnce) arm(d time.Duration) {
	if t.t == nil {
		t.t = time.AfterFunc(d, t.fn)
		return
	}
	t.t.Reset(d)
}

func (t *timerOnce) disarm() bool { return t.t.Stop() }
