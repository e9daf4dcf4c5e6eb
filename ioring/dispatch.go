package ioring

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Handler receives the CQEs of one operation, on the ring's goroutine, in
// the order the kernel posted them. An op started with a Handler posts one
// CQE, or several while CQE.More() is true (multishot accept/recv, send-zc
// whose last CQE is the notification); the CQE without More is the last one,
// after which the op's user_data is recycled and its buffers released.
//
// Complete may start new ops and call Submit, but must not call Wait, Poll,
// Reap or Close (they dispatch nothing when nested). Use a pointer type (or
// HandlerFunc) so that passing it as a Handler does not allocate.
type Handler interface {
	Complete(c CQE)
}

// HandlerFunc adapts a function to Handler. A func value is pointer-shaped,
// so converting it to Handler does not allocate; create it once, not per op.
type HandlerFunc func(c CQE)

// Complete calls f(c).
func (f HandlerFunc) Complete(c CQE) { f(c) }

// The user_data space: a tracked op's user_data is gen<<32 | slot, gen >= 1.
// 0 is never dispatched (internal ops such as Close's cancel use it), and
// [1, 1<<32) goes to Options.OnMessage: MsgRing senders pick such values.
const (
	chunkShift = 8
	chunkSize  = 1 << chunkShift
)

// slot is one in-flight op: its handler and the memory the kernel may touch
// until the op's last CQE. Slots live in fixed chunks so a slot's address
// (and the timespec inside it) never moves while the table grows.
type slot struct {
	h      Handler
	keep   [2]unsafe.Pointer // buffers, iovecs: reachable (so never freed) until completion
	pin    runtime.Pinner    // and pinned, so the runtime promises not to move them
	ts     unix.Timespec     // the timespec of a Timeout op
	gen    uint32
	next   int32 // free list link
	used   bool
	pinned bool
}

// table maps user_data to slots. Owned by the ring's goroutine.
type table struct {
	chunks   []*[chunkSize]slot
	free     int32 // head of the free list, -1 when empty
	inflight int
}

func (t *table) init(hint int) {
	t.free = -1
	for len(t.chunks)*chunkSize < hint {
		t.grow()
	}
}

func (t *table) grow() {
	c := new([chunkSize]slot)
	base := int32(len(t.chunks) * chunkSize)
	for i := chunkSize - 1; i >= 0; i-- {
		c[i].gen = 1
		c[i].next = t.free
		t.free = base + int32(i)
	}
	t.chunks = append(t.chunks, c)
}

func (t *table) at(i int32) *slot { return &t.chunks[i>>chunkShift][i&(chunkSize-1)] }

// alloc takes a free slot for h and keeps keep0/keep1 (either may be nil)
// reachable until release; with pin it also pins them.
func (t *table) alloc(h Handler, keep0, keep1 unsafe.Pointer, pin bool) (int32, *slot) {
	if t.free < 0 {
		t.grow()
	}
	i := t.free
	s := t.at(i)
	t.free = s.next
	s.h, s.used = h, true
	s.keep[0], s.keep[1] = keep0, keep1
	if pin && keep0 != nil {
		s.pin.Pin(keep0)
		s.pinned = true
	}
	if pin && keep1 != nil {
		s.pin.Pin(keep1)
		s.pinned = true
	}
	t.inflight++
	return i, s
}

// lookup returns the slot of user_data ud, or nil if ud is stale or unknown.
func (t *table) lookup(ud uint64) (int32, *slot) {
	i, gen := int32(uint32(ud)), uint32(ud>>32)
	if i < 0 || int(i) >= len(t.chunks)*chunkSize {
		return -1, nil
	}
	s := t.at(i)
	if !s.used || s.gen != gen {
		return -1, nil
	}
	return i, s
}

func (t *table) release(i int32, s *slot) {
	if s.pinned {
		s.pin.Unpin()
		s.pinned = false
	}
	s.h, s.keep = nil, [2]unsafe.Pointer{}
	s.used = false
	s.gen++
	if s.gen == 0 {
		s.gen = 1 // user_data with a zero upper half is not a tracked op
	}
	s.next = t.free
	t.free = i
	t.inflight--
}

func (t *table) releaseAll() {
	for ci, c := range t.chunks {
		for j := range c {
			if c[j].used {
				t.release(int32(ci*chunkSize+j), &c[j])
			}
		}
	}
}

func token(i int32, s *slot) uint64 { return uint64(s.gen)<<32 | uint64(uint32(i)) }

// Start reserves an SQE and an in-flight slot for an op the caller
// prepares itself (links, rw_flags such as RWF_NOWAIT, ops without a Ring
// method). keep is memory the kernel will use; it stays reachable and
// pinned until the op's last CQE. Prep the SQE, then set its UserData to
// the returned user_data (Prep methods clear it). Errors: ErrClosed,
// ErrSQFull, or a submit error.
func (r *Ring) Start(h Handler, keep []byte) (*SQE, uint64, error) {
	s, _, ud, err := r.start(h, bufPtr(keep), nil)
	return s, ud, err
}

// start reserves an SQE and a slot for an op with handler h; keep0/keep1 are
// the memory the kernel will read or write, kept reachable and pinned until
// the op's last CQE. The caller preps the SQE and then sets its UserData to
// the returned token (prep clears it).
func (r *Ring) start(h Handler, keep0, keep1 unsafe.Pointer) (*SQE, *slot, uint64, error) {
	return r.startOp(h, keep0, keep1, true)
}

// startRegistered is start for an op on a registered buffer (ReadFixed,
// WriteFixed): buf is kept reachable until the CQE but not pinned, since
// the kernel pinned its pages at registration and the ring keeps the
// registered buffers reachable (RegisterBuffers); pinning it per op cost
// ~1% of a shard's CPU at 200 MB/s of direct writes.
func (r *Ring) startRegistered(h Handler, buf unsafe.Pointer) (*SQE, uint64, error) {
	sqe, _, ud, err := r.startOp(h, buf, nil, false)
	return sqe, ud, err
}

func (r *Ring) startOp(h Handler, keep0, keep1 unsafe.Pointer, pin bool) (*SQE, *slot, uint64, error) {
	if r.closing || r.closed {
		return nil, nil, 0, ErrClosed
	}
	sqe, err := r.sqe()
	if err != nil {
		return nil, nil, 0, err
	}
	i, s := r.tab.alloc(h, keep0, keep1, pin)
	return sqe, s, token(i, s), nil
}

// Reap dispatches every CQE available now, without entering the kernel
// except to flush an overflowed CQ, and returns how many it dispatched.
// CQEs are copied out in batches: load-acquire of the CQ tail (the kernel
// wrote those CQEs before it), copy, one store-release of the CQ head (we
// are done reading them, the kernel may reuse the slots), then dispatch.
//
// When the kernel had more completions than CQ slots it keeps them on an
// overflow list and sets IORING_SQ_CQ_OVERFLOW (IORING_FEAT_NODROP); Reap
// then enters with IORING_ENTER_GETEVENTS, which moves them into the CQ,
// and keeps reaping until both are empty, so nothing is lost.
func (r *Ring) Reap() int {
	if r.reaping || r.closed {
		return 0
	}
	r.reaping = true
	defer func() { r.reaping = false }()
	total := 0
	for {
		total += r.dispatchHeld() // older than anything still in the CQ
		tail := atomic.LoadUint32(r.cqKTail)
		head := *r.cqKHead // only we write it
		n := tail - head
		if n == 0 {
			if atomic.LoadUint32(r.sqKFlags)&sqCQOverflow == 0 {
				return total
			}
			r.stats.Overflows++
			if _, err := r.enter(0, 0, enterGetEvents, nil, 0); err != nil && err != unix.EINTR {
				return total
			}
			if r.cqReady() == 0 {
				return total
			}
			continue
		}
		if n > uint32(len(r.batch)) {
			n = uint32(len(r.batch))
		}
		for i := uint32(0); i < n; i++ {
			r.batch[i] = r.cqes[(head+i)&r.cqMask]
		}
		atomic.StoreUint32(r.cqKHead, head+n)
		r.stats.Completions += uint64(n)
		r.batchLen = n
		for i := uint32(0); i < n; i++ {
			r.batchNext = i + 1 // a WaitFor in this handler looks past it
			r.dispatch(r.batch[i])
		}
		r.batchLen, r.batchNext = 0, 0
		total += int(n)
	}
}

// dispatch routes one CQE by user_data.
func (r *Ring) dispatch(c CQE) {
	if c.UserData>>32 == 0 {
		if c.UserData == 0 {
			return
		}
		if r.opts.OnMessage != nil {
			r.opts.OnMessage.Complete(c)
			return
		}
		r.stats.Untracked++
		return
	}
	i, s := r.tab.lookup(c.UserData)
	if s == nil {
		r.stats.Untracked++
		return
	}
	h := s.h
	if !c.More() {
		r.tab.release(i, s)
	}
	if h != nil {
		h.Complete(c)
	}
}
