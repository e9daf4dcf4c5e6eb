package appliance

// Reusable request storage: the produce and fetch request path allocates
// nothing per request in steady state (TestRequestPathAllocs proves it with
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

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type reqState struct {
	slot  slot
	req   wire.Request
	frame []byte
	// own is the state's frame buffer (frames up to maxStateFrame); fb is
	// a larger frame's, from the size-class free lists.
	own  []byte
	fb   *frameBuf
	refs atomic.Int32
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
	rs.req.Owner = rs
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
	if n <= maxStateFrame {
		if cap(rs.own) < n {
			rs.own = make([]byte, stateFrameCap(n))
		}
		rs.frame = rs.own[:n]
	} else {
		rs.fb = getFrameBuf(n)
		rs.frame = rs.fb.b[:n]
	}
	rs.refs.Store(1) // the writer's
	rs.pooled = false
	rs.slot.reset()
	rs.req = wire.Request{Owner: rs}
	return rs
}

// Frame storage. A state keeps its own frame buffer for frames of up to
// maxStateFrame (fetches, small produces), grown in powers of two. Larger
// frames (produce requests) take a buffer from a free list per
// power-of-two size class, 128 KiB to 32 MiB, and give it back when the
// state is released, so a fetch never holds a produce's megabyte and a
// produce never waits on the state it happens to draw to grow.
//
// Why: fresh memory costs a page fault per 4 KiB on first touch (the
// kernel's copy of the received bytes takes it), and on the development VM,
// whose guest memory the host reclaims, each one is a host fault too,
// about 40 us of broker CPU. When states drew frames from one sync.Pool,
// the catch-up benchmark (50 MB/s of ~256 KiB produce requests beside
// fetches) allocated ~50 MB of new frames per 8 s window: 13,000 faults
// on the uring engine, 5,800 on netpoll. The free lists are channels, not
// sync.Pools, so a garbage collection does not empty them, and bounded
// (frameClassKeep) so a burst of large requests does not pin its memory.
const (
	maxStateFrame   = 64 << 10 // largest frame buffer a state keeps
	frameClassShift = 17       // class 0 holds 128 KiB buffers
	frameClasses    = 9        // 128 KiB .. 32 MiB
	// frameClassKeep bounds each class's free list, in bytes (at least
	// one buffer).
	frameClassKeep = 16 << 20
)

// frameBuf is a size-class frame buffer; the holder travels with it so that
// returning it allocates nothing.
type frameBuf struct {
	b     []byte
	class int // -1: larger than every class, left to the GC
}

var frameFree = func() (f [frameClasses]chan *frameBuf) {
	for c := range f {
		f[c] = make(chan *frameBuf, max(1, frameClassKeep>>(frameClassShift+c)))
	}
	return f
}()

// stateFrameCap is the capacity a state's own frame buffer grows to for an
// n-byte frame: the next power of two, at least 512.
func stateFrameCap(n int) int {
	c := 512
	for c < n {
		c <<= 1
	}
	return c
}

// frameClass is the class of a buffer for n bytes; frameClasses when none
// is large enough.
func frameClass(n int) int {
	c := 0
	for c < frameClasses && n > 1<<(frameClassShift+c) {
		c++
	}
	return c
}

// getFrameBuf returns a buffer of at least n bytes: a free one of n's class
// (its bytes are a previous frame's; the caller overwrites all n) or a new
// one.
func getFrameBuf(n int) *frameBuf {
	c := frameClass(n)
	if c == frameClasses {
		return &frameBuf{b: make([]byte, n), class: -1}
	}
	select {
	case fb := <-frameFree[c]:
		return fb
	default:
		return &frameBuf{b: make([]byte, 1<<(frameClassShift+c)), class: c}
	}
}

// prefaultFrameBufs fills the free lists of the classes of minBytes and up,
// short of the largest, to their bounds with buffers whose every page has
// been written (log.io.cache.prefault), and returns the bytes added. A
// produce request grows to megabytes when the producer's batches wait
// (up to the client's batch size per partition), which happens when the
// broker is slow already; a new 16 MiB frame then cost ~4,000 page faults,
// ~160 ms of the receiving shard's time on the development VM, during
// which that shard served nothing. Concurrent with getFrameBuf.
func prefaultFrameBufs(minBytes int) int64 {
	var total atomic.Int64
	var wg sync.WaitGroup
	for c := frameClass(minBytes); c < frameClasses-1; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(frameFree[c]) < cap(frameFree[c]) {
				fb := &frameBuf{b: make([]byte, 1<<(frameClassShift+c)), class: c}
				for i := 0; i < len(fb.b); i += pageSize {
					fb.b[i] = 1
				}
				select {
				case frameFree[c] <- fb:
					total.Add(int64(len(fb.b)))
				default:
					return
				}
			}
		}()
	}
	wg.Wait()
	return total.Load()
}

// pageSize is the unit of first-touch faults prefaultFrameBufs takes;
// frameBufPrefaultMin is the smallest class it fills (1 MiB to 16 MiB: 80
// MiB). The smaller classes fill within the first seconds of steady
// produce traffic.
const (
	pageSize            = 4096
	frameBufPrefaultMin = 1 << 20
)

// putFrameBuf gives a getFrameBuf buffer back (dropped when its free list
// is full).
func putFrameBuf(fb *frameBuf) {
	if fb.class < 0 {
		return
	}
	select {
	case frameFree[fb.class] <- fb:
	default:
	}
}

// unref drops one reference; the last one returns a pooled state.
func (rs *reqState) unref() {
	if rs.refs.Add(-1) == 0 && rs.pooled {
		rs.slot.resp = nil
		rs.req = wire.Request{Owner: rs}
		rs.fetch.dropRefs() // a pooled state pins no cache blocks
		rs.frame = nil
		if rs.fb != nil {
			putFrameBuf(rs.fb) // one large produce does not pin its frame
			rs.fb = nil
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
