package ioring

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A ring shard runs its loop on one io_uring ring: it runs posted closures,
// submits what they and the completion handlers prepared in one batch per
// iteration, and sleeps in io_uring_enter(2) until a completion arrives.
//
// Wake-ups: closures come from any goroutine (handlers' deferred work,
// other shards, the controller), most of which own no ring, so the inbox is
// a channel plus an eventfd whose read is always armed on the ring. A
// poster writes the eventfd only when the loop has announced that it
// sleeps (sleeping, swapped to false by the first poster), so a busy
// loop costs posters nothing but the channel send. The alternative,
// IORING_OP_MSG_RING, needs a ring on the sending side; BenchmarkWake
// measures both from ring to ring, and the figures are in the package doc.

// ringState is the ring side of a Shard. Fields below the atomics are
// owned by the loop goroutine.
type ringState struct {
	sleeping atomic.Bool
	closing  atomic.Bool
	efd      int
	one      [8]byte // the eventfd increment (1), written by posters

	ring    *Ring
	efdBuf  [8]byte
	wakeH   HandlerFunc
	tickers []func(now time.Time)
	closers []func()
	wakeups uint64 // eventfd reads completed
	sleeps  uint64 // waits in io_uring_enter(2) for a completion
	yields  uint64 // passes through the Go scheduler (schedYieldEvery, yieldBeforeSleep)
}

// wake writes the eventfd if the loop sleeps (or is about to).
func (rs *ringState) wake() {
	if rs.sleeping.Load() && rs.sleeping.CompareAndSwap(true, false) {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(rs.efd), uintptr(unsafe.Pointer(&rs.one[0])), 8)
	}
}

// NewRingShard starts shard id's loop on its own io_uring ring, created on
// the loop's locked (and, with o.Pin, pinned) thread after o.OnStart. It
// returns the ring's setup error, in which case no loop runs.
func NewRingShard(id int, o ShardOptions) (*Shard, error) {
	if o.InboxSize <= 0 {
		o.InboxSize = 4096
	}
	s := &Shard{id: id, inbox: make(chan func(), o.InboxSize), done: make(chan struct{})}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC) // blocking: the ring polls it
	if err != nil {
		return nil, fmt.Errorf("cannot create eventfd of shard %d: %w", id, err)
	}
	s.rs = &ringState{efd: efd}
	s.rs.one[0] = 1
	ready := make(chan error, 1)
	s.wg.Add(1)
	ringShards.Add(1)
	go func() {
		defer ringShards.Add(-1)
		s.ringLoop(o, ready)
	}()
	if err := <-ready; err != nil {
		s.wg.Wait()
		unix.Close(efd)
		return nil, err
	}
	return s, nil
}

// ringShards counts the ring shard loops running in the process.
var ringShards atomic.Int32

// schedYieldEvery is how often a ring loop passes through the Go scheduler
// (runtime.Gosched), which it otherwise never does: it runs forever on one
// scheduling tick. sysmon takes a goroutine that has run on one tick for
// 10 ms (forcePreemptNS) for a hog: it preempts it, and when the loop is
// asleep in io_uring_enter it takes the P away from the syscall and, having
// taken one, polls every 20 us for the next millisecond. Two shards at
// 10 MB/s made ~310 such retakes a second; sysmon alone then used ~23% of
// the broker's CPU (16k of 85k context switches in 6 s), and every
// preemption of the locked loop handed its P to another thread and back.
// A yield every 8 ms (up to 125 per shard a second) keeps the tick
// moving. Each costs two thread hand-offs: a locked goroutine that yields
// gives its P to another thread, which finds it runnable and hands the P
// back (stoplockedm, startlockedm).
const schedYieldEvery = 8 * time.Millisecond

// busySleepMax and idleAfter bound a ring loop's sleeps: while the loop
// did work in the last idleAfter, it sleeps no longer than until
// schedYieldEvery+busySleepMax after its last yield, so that it yields
// before sysmon sees its scheduling tick 10 ms old. A loop asleep in
// io_uring_enter past that point has its P taken (retake), and each retake
// sets sysmon polling every 20 us for the next millisecond: ~50 thread
// wake-ups. An idle loop sleeps up to a second and pays that once per sleep.
// In the catch-up bench (50 MB/s in, a 200 MB backlog drained) sleeps
// that crossed the 10 ms line made sysmon wake ~1000 times a second (6.1k
// of the broker's 19k context switches in 6 s, 20 of its 130 CPU ticks);
// with the bound, ~100 (its idle pace), and the broker's switches fell to
// 15k.
const (
	busySleepMax = time.Millisecond
	idleAfter    = 100 * time.Millisecond
)

// sleepFor is how long a ring loop may sleep at now.
func sleepFor(now, lastYield, lastWork time.Time) time.Duration {
	if now.Sub(lastWork) >= idleAfter {
		return time.Second
	}
	return max(lastYield.Add(schedYieldEvery+busySleepMax).Sub(now), 50*time.Microsecond)
}

// yieldBeforeSleep reports whether a ring loop should call runtime.Gosched
// before it sleeps in io_uring_enter. The sleeping loop keeps its P (a
// blocking syscall), so when the ring loops can hold every P, a goroutine
// the loop readied would wait for sysmon (~40 us measured) unless the loop
// yields first; yielding costs a thread wake-up per sleep (startm), ~8% of
// the broker's CPU at 10k requests/s. With more Ps than ring loops
// (io.uring.spare.procs) the readied goroutine gets a free P and the yield
// is skipped.
func yieldBeforeSleep() bool {
	return runtime.GOMAXPROCS(0) <= int(ringShards.Load())
}

// IsRing reports whether the shard runs on an io_uring ring.
func (s *Shard) IsRing() bool { return s.rs != nil }

// Ring is the shard's ring. Only closures running on the shard's loop may
// use it (the ring is single-issuer).
func (s *Shard) Ring() *Ring {
	if s.rs == nil {
		return nil
	}
	return s.rs.ring
}

// OnTick registers fn to run on the loop about once a second (idle
// connection sweeps). Call it from the loop.
func (s *Shard) OnTick(fn func(now time.Time)) { s.rs.tickers = append(s.rs.tickers, fn) }

// OnClose registers fn to run on the loop when the shard stops, before its
// ring is closed (engines shut their sockets down there). Call it from the loop.
func (s *Shard) OnClose(fn func()) { s.rs.closers = append(s.rs.closers, fn) }

// Wakeups is the number of eventfd wake-ups the loop has taken (loop only).
func (s *Shard) Wakeups() uint64 { return s.rs.wakeups }

// LoopStats counts what a ring shard's loop did since it started. Read it
// with RingStats, on the loop.
type LoopStats struct {
	Ring    Stats  // the ring's own counters (enters, SQEs, CQEs, overflows)
	Sleeps  uint64 // waits in io_uring_enter(2) for a completion
	Wakeups uint64 // eventfd wake-ups: closures posted to a sleeping loop
	Yields  uint64 // runtime.Gosched calls (schedYieldEvery, yieldBeforeSleep)
}

// RingStats reports the loop's counters; ok is false for a netpoll shard.
// Call it from the loop (Shard.Call from elsewhere).
func (s *Shard) RingStats() (st LoopStats, ok bool) {
	if s.rs == nil || s.rs.ring == nil {
		return LoopStats{}, false
	}
	return LoopStats{Ring: s.rs.ring.Stats(), Sleeps: s.rs.sleeps, Wakeups: s.rs.wakeups, Yields: s.rs.yields}, true
}

func (s *Shard) armWake() {
	if _, err := s.rs.ring.Read(s.rs.efd, s.rs.efdBuf[:], 0, false, s.rs.wakeH); err != nil && err != ErrClosed {
		panic(fmt.Sprintf("ioring: cannot arm the wake-up read of shard %d: %v", s.id, err))
	}
}

func (s *Shard) ringLoop(o ShardOptions, ready chan<- error) {
	defer s.wg.Done()
	rs := s.rs
	locked, perr := o.pin()
	if !locked {
		runtime.LockOSThread() // the ring is single-issuer: one thread for its life
		defer runtime.UnlockOSThread()
	}
	if perr != nil {
		ready <- fmt.Errorf("cannot place shard %d: %w", s.id, perr)
		return
	}
	if o.OnStart != nil {
		o.OnStart()
	}
	ro := o.Ring
	if ro.Entries == 0 {
		ro.Entries = 1024
	}
	if ro.CQEntries == 0 {
		ro.CQEntries = 8 * ro.Entries
	}
	r, err := New(ro)
	if err != nil {
		ready <- fmt.Errorf("cannot create the ring of shard %d: %w", s.id, err)
		return
	}
	rs.ring = r
	rs.wakeH = func(c CQE) {
		rs.wakeups++
		if !rs.closing.Load() || c.Res > 0 {
			s.armWake()
		}
	}
	s.armWake()
	ready <- nil

	// now is read twice per pass that sleeps and once per pass that does
	// not: a pass starts when the last one ended or its sleep did (the
	// clock reads were ~1% of a shard's CPU samples at 10 MB/s).
	now := time.Now()
	lastTick, lastYield, lastWork := now, now, now
	for {
		start := now
		if start.Sub(lastYield) >= schedYieldEvery {
			lastYield = start
			rs.yields++
			runtime.Gosched() // see schedYieldEvery
		}
		n := uint64(0)
	drain:
		for n < 1024 {
			select {
			case fn := <-s.inbox:
				fn()
				n++
			default:
				break drain
			}
		}
		got, _ := r.Poll() // submit what the closures prepared, dispatch what is ready
		if n > 0 {
			s.tasks.Add(n)
		}
		now = time.Now()
		if n > 0 || got > 0 {
			s.busyNano.Add(int64(now.Sub(start)))
			lastWork = start
		}
		if now.Sub(lastTick) >= time.Second {
			lastTick = now
			for _, fn := range rs.tickers {
				fn(now)
			}
			now = time.Now() // sleepFor must not count from before them
		}
		if n > 0 || got > 0 {
			continue
		}
		if rs.closing.Load() {
			break
		}
		// Announce the sleep, then look once more: a poster that saw
		// sleeping false has already queued and will be seen here.
		rs.sleeping.Store(true)
		if len(s.inbox) > 0 || rs.closing.Load() {
			rs.sleeping.Store(false)
			continue
		}
		if yieldBeforeSleep() {
			rs.yields++
			runtime.Gosched()
			now = time.Now()
			lastYield = now
		}
		rs.sleeps++
		_, _ = r.Wait(1, sleepFor(now, lastYield, lastWork))
		rs.sleeping.Store(false)
		now = time.Now()
	}
	// Stopping: let engines shut their sockets, run what is still queued,
	// then cancel whatever is in flight.
	for _, fn := range rs.closers {
		fn()
	}
	for {
		select {
		case fn := <-s.inbox:
			fn()
			continue
		default:
		}
		break
	}
	deadline := time.Now().Add(2 * time.Second)
	for r.InFlight() > 1 && time.Now().Before(deadline) { // the wake-up read stays armed
		_, _ = r.Wait(1, 50*time.Millisecond)
		for {
			select {
			case fn := <-s.inbox:
				fn()
				continue
			default:
			}
			break
		}
	}
	_ = r.Close()
	unix.Close(rs.efd)
}
