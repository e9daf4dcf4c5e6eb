package ioring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Nested waits. A loop sometimes cannot go on until some of its own ops
// have completed: a segment that rolls must have its queued writes on the
// device before it is trimmed and closed. Dispatching every CQE that
// arrives meanwhile would run unrelated handlers (a fetch answer, a
// connection's receive) in the middle of the caller's state change, so
// WaitFor runs only the handlers that declare themselves safe to run there
// (Urgent) and holds the other CQEs. The next Reap, Poll or Wait
// dispatches the held CQEs first, in the order the kernel posted them, so
// every op still sees its CQEs in order.

// ErrWaitTimeout is returned by WaitFor when its condition did not hold
// within the timeout.
var ErrWaitTimeout = errors.New("ioring: nested wait timed out")

// Urgent is a Handler that WaitFor may run while it waits: its Complete
// touches only the state of its own op and of whoever waits for it, and
// does not call WaitFor.
type Urgent interface {
	Handler
	// Urgent marks the handler; it is never called.
	Urgent()
}

// WaitFor submits the pending SQEs and waits until done() reports true,
// for up to timeout (<= 0: no bound). Meanwhile it dispatches the CQEs of
// ops whose Handler implements Urgent and holds every other CQE for the
// next Reap, which dispatches the held ones first, in order. done is
// called before each wait; it usually reads state that an Urgent handler
// changes. WaitFor may be called from a Handler (inside Reap). Errors:
// ErrClosed, ErrWaitTimeout, ErrCQEsDropped, or the errno of
// io_uring_enter(2).
func (r *Ring) WaitFor(done func() bool, timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		if r.features&FeatExtArg == 0 {
			return fmt.Errorf("cannot wait with a timeout: %w", ErrNotSupported)
		}
		deadline = time.Now().Add(timeout)
	}
	r.urgentFromBatch()
	for !done() {
		if r.closed {
			return ErrClosed
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return fmt.Errorf("cannot wait %v: %w", timeout, ErrWaitTimeout)
		}
		n, flags, arg, argSz := r.waitArgs(r.flushSQ(), deadline)
		need := uint32(1)
		if r.cqReady() > 0 && n == 0 && r.flags&SetupDeferTaskrun == 0 {
			need = 0 // already there: just reap
		}
		_, err := r.enter(n, need, flags, arg, argSz)
		switch err {
		case nil, unix.ETIME, unix.EINTR, unix.EBUSY, unix.EAGAIN:
		case unix.EBADR:
			r.reapUrgent()
			return ErrCQEsDropped
		default:
			r.reapUrgent()
			return fmt.Errorf("cannot wait for completions: %w", err)
		}
		r.reapUrgent()
	}
	return nil
}

// urgentFromBatch dispatches the Urgent CQEs that Reap copied out of the
// CQ and has not dispatched yet, when WaitFor runs inside one of Reap's
// handlers: the op waited for may have completed in the same batch. Their
// user_data is zeroed there, so Reap skips them.
func (r *Ring) urgentFromBatch() {
	if !r.reaping {
		return
	}
	for j := r.batchNext; j < r.batchLen; j++ {
		c := r.batch[j]
		if c.UserData != 0 && r.isUrgent(c) {
			r.batch[j].UserData = 0
			r.dispatch(c)
		}
	}
}

// reapUrgent copies every CQE available out of the CQ (flushing an
// overflowed CQ as Reap does), dispatches those of Urgent handlers and
// appends the others to r.held.
func (r *Ring) reapUrgent() {
	r.urgentDepth++
	defer func() { r.urgentDepth-- }()
	for {
		tail := atomic.LoadUint32(r.cqKTail)
		head := *r.cqKHead
		n := tail - head
		if n == 0 {
			if atomic.LoadUint32(r.sqKFlags)&sqCQOverflow == 0 {
				return
			}
			r.stats.Overflows++
			if _, err := r.enter(0, 0, enterGetEvents, nil, 0); err != nil && err != unix.EINTR {
				return
			}
			if r.cqReady() == 0 {
				return
			}
			continue
		}
		if n > uint32(len(r.batch)) {
			n = uint32(len(r.batch))
		}
		// r.batch may be in use by an outer Reap: copy into our own
		// (a fresh one should an Urgent handler wait after all).
		if cap(r.urgentBatch) < int(n) {
			r.urgentBatch = make([]CQE, len(r.batch))
		}
		b := r.urgentBatch[:n]
		if r.urgentDepth > 1 {
			b = make([]CQE, n)
		}
		for i := uint32(0); i < n; i++ {
			b[i] = r.cqes[(head+i)&r.cqMask]
		}
		atomic.StoreUint32(r.cqKHead, head+n)
		r.stats.Completions += uint64(n)
		for _, c := range b {
			if r.isUrgent(c) {
				r.dispatch(c)
				continue
			}
			r.held = append(r.held, c)
			r.stats.Held++
		}
	}
}

// isUrgent reports whether c belongs to an op whose handler is Urgent.
func (r *Ring) isUrgent(c CQE) bool {
	if c.UserData>>32 == 0 {
		return false
	}
	_, s := r.tab.lookup(c.UserData)
	if s == nil {
		return false
	}
	_, ok := s.h.(Urgent)
	return ok
}

// dispatchHeld dispatches the CQEs WaitFor held, oldest first, and returns
// how many. A handler may wait again (held CQEs then collect in the other
// buffer and go in the next round).
func (r *Ring) dispatchHeld() int {
	total := 0
	for len(r.held) > 0 {
		batch := r.held
		r.held = r.heldSpare[:0]
		for _, c := range batch {
			r.dispatch(c)
		}
		total += len(batch)
		clear(batch)
		r.heldSpare = batch[:0]
	}
	return total
}

// Held is the number of CQEs WaitFor holds for the next Reap.
func (r *Ring) Held() int { return len(r.held) }
