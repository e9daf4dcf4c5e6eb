package ioring

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/numa"
)

// Shard is one event loop that owns a set of partitions exclusively. Work
// for it arrives as closures through its inbox and runs on its loop
// goroutine, one at a time, in arrival order.
type Shard struct {
	id    int
	inbox chan func()
	done  chan struct{}
	wg    sync.WaitGroup

	// Counters read at scrape time (owned by the loop, read atomically).
	tasks    atomic.Uint64
	busyNano atomic.Int64

	// Set for a ring shard (NewRingShard); see ringState.
	rs *ringState
}

// ShardOptions configures a shard.
type ShardOptions struct {
	// InboxSize is the number of queued closures before Post blocks (default 4096).
	InboxSize int
	// LockThread locks the loop goroutine to its OS thread (pinning comes with numa).
	LockThread bool
	// OnStart runs on the loop goroutine before the first task (pinning, first-touch allocations).
	OnStart func()
	// Pin, when set, locks the loop to its OS thread and pins that thread
	// to Pin.CPU (numa.PinThread); with Pin.Node >= 0 the thread's memory
	// policy prefers that node (numa.SetMemPolicy), so buffers the shard
	// allocates afterwards (its ring, provided buffers) are node-local.
	// A pinned loop's goroutine exits locked, ending the thread, so the
	// affinity never leaks to other goroutines.
	Pin *Placement
	// Ring configures the io_uring ring of a ring shard (NewRingShard).
	Ring Options
}

// Placement is where a shard's loop runs.
type Placement struct {
	CPU  int
	Node int // NUMA node for MPOL_PREFERRED; -1 leaves the policy alone
}

// pin applies o.Pin on the calling goroutine; it reports whether it locked
// the thread for good.
func (o *ShardOptions) pin() (locked bool, err error) {
	if o.Pin == nil {
		return false, nil
	}
	runtime.LockOSThread()
	if err := numa.PinThread(o.Pin.CPU); err != nil {
		return true, err
	}
	if o.Pin.Node >= 0 {
		if err := numa.SetMemPolicy(numa.MPolPreferred, []int{o.Pin.Node}); err != nil {
			return true, err
		}
	}
	return true, nil
}

// NewShard starts shard id's loop.
func NewShard(id int, o ShardOptions) *Shard {
	if o.InboxSize <= 0 {
		o.InboxSize = 4096
	}
	s := &Shard{id: id, inbox: make(chan func(), o.InboxSize), done: make(chan struct{})}
	s.wg.Add(1)
	go s.loop(o)
	return s
}

// ID is the shard's index, 0..N-1.
func (s *Shard) ID() int { return s.id }

func (s *Shard) loop(o ShardOptions) {
	defer s.wg.Done()
	if locked, _ := o.pin(); !locked && o.LockThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if o.OnStart != nil {
		o.OnStart()
	}
	for {
		select {
		case fn := <-s.inbox:
			start := time.Now()
			fn()
			// Drain what is already queued before going back to select: batches
			// completions the way the ring loop will.
			n := uint64(1)
		drain:
			for i := 0; i < 256; i++ {
				select {
				case fn = <-s.inbox:
					fn()
					n++
				default:
					break drain
				}
			}
			s.tasks.Add(n)
			s.busyNano.Add(int64(time.Since(start)))
		case <-s.done:
			// Run what is left so that no caller waits forever.
			for {
				select {
				case fn := <-s.inbox:
					fn()
				default:
					return
				}
			}
		}
	}
}

// Post queues fn to run on the shard's loop. It must not be called after
// Close. A ring shard's loop sleeping in io_uring_enter is woken through its
// eventfd, written only when the loop said it sleeps (see ringState.wake).
func (s *Shard) Post(fn func()) {
	s.inbox <- fn
	if s.rs != nil {
		s.rs.wake()
	}
}

// Call runs fn on the shard's loop and waits for it. Never call it from the
// shard's own loop (it would deadlock); use OnLoop to check.
func (s *Shard) Call(fn func()) {
	ch := make(chan struct{})
	s.Post(func() { fn(); close(ch) })
	<-ch
}

// Closing reports whether Close has been called: the loop runs only what
// is already queued, and Post must no longer be called.
func (s *Shard) Closing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Stats reports the tasks run and the nanoseconds the loop spent running them.
func (s *Shard) Stats() (tasks uint64, busy time.Duration) {
	return s.tasks.Load(), time.Duration(s.busyNano.Load())
}

// QueueDepth is the number of closures waiting in the inbox.
func (s *Shard) QueueDepth() int { return len(s.inbox) }

// Close stops the loop after running what is already queued.
func (s *Shard) Close() {
	close(s.done)
	if s.rs != nil {
		s.rs.closing.Store(true)
		s.rs.sleeping.Store(true) // force the wake-up below
		s.rs.wake()
	}
	s.wg.Wait()
}
