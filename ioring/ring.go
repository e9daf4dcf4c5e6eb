package ioring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Errors returned by the ring.
var (
	// ErrClosed is returned by operations on a closed (or closing) Ring.
	ErrClosed = errors.New("ioring: ring closed")
	// ErrSQFull is returned when no SQE is free even after submitting the
	// pending ones (the kernel has not consumed them yet, e.g. with SQPOLL).
	ErrSQFull = errors.New("ioring: submission queue full")
	// ErrShutdownTimeout is returned by Close when in-flight ops did not
	// complete within Options.ShutdownTimeout after being cancelled.
	ErrShutdownTimeout = errors.New("ioring: in-flight operations outlived shutdown")
	// ErrCQEsDropped means the kernel dropped completions (EBADR from
	// io_uring_enter, or a growing cq.overflow counter): some ops will never
	// complete. It is a broken invariant for the caller.
	ErrCQEsDropped = errors.New("ioring: kernel dropped completions")
	// ErrNotSupported is returned for a feature this kernel lacks.
	ErrNotSupported = errors.New("ioring: not supported by this kernel")
)

// Options configures a Ring. The zero value is usable: 256 SQEs, the
// kernel's default CQ size (twice the SQ), the best flags the kernel accepts.
type Options struct {
	// Entries is the SQ size; the kernel rounds it up to a power of two.
	// Default 256, at most 32768.
	Entries uint32
	// CQEntries is the CQ size (IORING_SETUP_CQSIZE); 0 leaves the kernel's
	// default of 2*Entries. It must be at least Entries.
	CQEntries uint32
	// SQPoll asks for a kernel thread that polls the SQ (IORING_SETUP_SQPOLL),
	// so submitting needs no syscall while the thread is awake. It rules
	// out DEFER_TASKRUN. Off by default: it burns a core per ring.
	SQPoll bool
	// SQPollIdle is how long the SQPOLL thread spins before sleeping
	// (default: the kernel's, 1s). Rounded to milliseconds.
	SQPollIdle time.Duration
	// SQPollCPU is the CPU the SQPOLL thread is pinned to
	// (IORING_SETUP_SQ_AFF) when SQPollCPUSet is true.
	SQPollCPU int
	// SQPollCPUSet makes SQPollCPU effective (CPU 0 is a valid choice).
	SQPollCPUSet bool
	// NoSQArray asks for IORING_SETUP_NO_SQARRAY (Linux 6.6+), falling back
	// silently without it.
	NoSQArray bool
	// DisableFlags removes setup flags from every candidate set (tests use
	// it to exercise the fallback path; operators to rule out a flag).
	DisableFlags uint32
	// ShutdownTimeout bounds how long Close waits for cancelled ops to post
	// their CQEs. Default 1s.
	ShutdownTimeout time.Duration
	// OnMessage receives CQEs whose user_data is in [1, 1<<32): messages
	// posted to this ring by another ring's MsgRing. Nil drops them (counted
	// in Stats.Untracked).
	OnMessage Handler
	// PlugPad pads a submission of exactly two file reads or writes with a
	// NOP whose CQE is skipped (IOSQE_CQE_SKIP_SUCCESS, Linux 5.17), so
	// the kernel plugs the block layer for them: io_uring starts a plug
	// only for submissions of three or more SQEs (io_submit_state_start),
	// and without one each O_DIRECT request is dispatched, and its device
	// notified, on its own. Adjacent ranges of a plugged batch merge into
	// one request. On a virtio disk each notification is a write to the
	// device's doorbell, an exit to the hypervisor. Ignored without
	// FeatCQESkip and with SQPoll. Counted in Stats.PlugPads.
	PlugPad bool
}

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	if o.Entries == 0 {
		o.Entries = 256
	}
	if o.Entries > 32768 {
		return fmt.Errorf("cannot use %d SQ entries: at most 32768", o.Entries)
	}
	if o.CQEntries != 0 && o.CQEntries < o.Entries {
		return fmt.Errorf("cannot use %d CQ entries with %d SQ entries: want CQEntries >= Entries", o.CQEntries, o.Entries)
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = time.Second
	}
	if o.SQPollIdle < 0 {
		return fmt.Errorf("cannot use SQPollIdle %v: want >= 0", o.SQPollIdle)
	}
	return nil
}

// Stats are counters owned by the ring's goroutine; read them from it.
type Stats struct {
	Enters      uint64 // io_uring_enter calls
	Submitted   uint64 // SQEs the kernel consumed
	Completions uint64 // CQEs reaped
	Overflows   uint64 // times IORING_SQ_CQ_OVERFLOW was seen and flushed
	Dropped     uint32 // the kernel's cq.overflow counter: CQEs lost for good
	Untracked   uint64 // CQEs with an unknown or stale user_data
	Held        uint64 // CQEs WaitFor held for a later Reap
	PlugPads    uint64 // NOPs added so that two reads or writes are plugged (Options.PlugPad)
}

// Ring is one io_uring instance: an SQ and a CQ shared with the kernel, an
// in-flight table mapping user_data to handlers, and the registered
// resources (files, buffers, provided buffer rings).
//
// A Ring is single-issuer: it must be created, used and closed by one
// goroutine locked to its OS thread (runtime.LockOSThread), because the
// kernel binds an IORING_SETUP_SINGLE_ISSUER ring to the creating thread:
// submissions from any other thread fail with EEXIST, and on a
// DEFER_TASKRUN ring so do waits. (Subtests run on their own goroutines, so
// a test must not share a ring with its t.Run children.) None of its
// methods are safe for concurrent use. Other goroutines reach it only through MsgRing from their
// own ring, or through the shard's inbox.
type Ring struct {
	fd       int
	flags    uint32 // setup flags the kernel accepted
	features uint32
	padPlug  bool // Options.PlugPad, with FeatCQESkip and without SQPOLL
	opts     Options

	// Submission queue. Pointers into ringMem; khead is written by the
	// kernel, ktail by us.
	sqKHead, sqKTail, sqKFlags, sqKDropped *uint32
	sqMask, sqEntries                      uint32
	sqeTail                                uint32 // next SQE to hand out (local tail)
	sqes                                   []SQE

	// Completion queue. ktail is written by the kernel, khead by us.
	cqKHead, cqKTail, cqKOverflow *uint32
	cqMask, cqEntries             uint32
	cqes                          []CQE

	ringMem, cqMem, sqeMem []byte

	tab   table
	batch []CQE // reaped CQEs copied out so the CQ head advances once per batch

	// Ring.WaitFor: the CQEs it holds for the next Reap, the
	// buffer they swap with while dispatched, and its own copy-out batch;
	// the part of Reap's batch not yet dispatched (batch[batchNext:batchLen]).
	held, heldSpare, urgentBatch []CQE
	batchNext, batchLen          uint32
	urgentDepth                  int

	// Arguments of io_uring_enter, kept on the heap so their addresses are
	// stable while the kernel reads them.
	arg getEventsArg
	ts  kernelTimespec

	probe     probeBuf
	probed    bool
	fixedBufs [][]byte // registered buffers, kept reachable while registered
	nFiles    int
	bufRings  []*BufRing

	stats   Stats
	reaping bool
	closing bool
	closed  bool
}

// setupCandidates lists the flag sets New tries, best first.
func setupCandidates(o *Options) []uint32 {
	var c []uint32
	if o.SQPoll {
		c = []uint32{SetupSQPoll | SetupSingleIssuer, SetupSQPoll}
	} else {
		c = []uint32{
			SetupSingleIssuer | SetupCoopTaskrun | SetupTaskrunFlag | SetupDeferTaskrun,
			SetupSingleIssuer | SetupCoopTaskrun | SetupTaskrunFlag,
			SetupCoopTaskrun | SetupTaskrunFlag,
			0,
		}
	}
	var out []uint32
	seen := map[uint32]bool{}
	add := func(f uint32) {
		f &^= o.DisableFlags
		if f&SetupDeferTaskrun != 0 && f&SetupSingleIssuer == 0 {
			f &^= SetupDeferTaskrun // the kernel requires SINGLE_ISSUER with it
		}
		if f&SetupTaskrunFlag != 0 && f&(SetupCoopTaskrun|SetupDeferTaskrun) == 0 {
			f &^= SetupTaskrunFlag
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, f := range c {
		if o.NoSQArray {
			add(f | SetupNoSQArray)
		}
		add(f)
	}
	return out
}

// New creates a ring: io_uring_setup(2) with the best flag set the kernel
// accepts (SINGLE_ISSUER|COOP_TASKRUN|TASKRUN_FLAG|DEFER_TASKRUN, then
// without DEFER_TASKRUN, then without SINGLE_ISSUER, then none; only EINVAL
// moves to the next set), then mmap(2) of the SQ ring, CQ ring (one mapping
// with IORING_FEAT_SINGLE_MMAP) and SQE array, then an op probe. Call it on
// the locked OS thread that will use the ring. Errors: EPERM/ENOSYS when
// io_uring is forbidden or absent (see Available), ENOMEM when
// RLIMIT_MEMLOCK is too low on old kernels.
func New(o Options) (*Ring, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var p params
	var fd int
	var lastErr error
	for _, f := range setupCandidates(&o) {
		p = params{sqEntries: o.Entries, flags: f}
		if o.CQEntries != 0 {
			p.flags |= SetupCQSize
			p.cqEntries = o.CQEntries
		}
		if f&SetupSQPoll != 0 {
			p.sqThreadIdle = uint32(o.SQPollIdle / time.Millisecond)
			if o.SQPollCPUSet && o.SQPollCPU >= 0 {
				p.flags |= SetupSQAff
				p.sqThreadCPU = uint32(o.SQPollCPU)
			}
		}
		r1, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(o.Entries), uintptr(unsafe.Pointer(&p)), 0)
		if errno == 0 {
			fd, lastErr = int(r1), nil
			break
		}
		lastErr = fmt.Errorf("cannot set up io_uring (entries %d, flags %#x): %w", o.Entries, p.flags, errno)
		if errno != unix.EINVAL {
			return nil, lastErr
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	r := &Ring{fd: fd, flags: p.flags, features: p.features, opts: o}
	r.padPlug = o.PlugPad && p.features&FeatCQESkip != 0 && p.flags&SetupSQPoll == 0
	if err := r.mapRings(&p); err != nil {
		r.unmap()
		unix.Close(fd)
		return nil, err
	}
	r.batch = make([]CQE, r.cqEntries)
	r.tab.init(int(r.cqEntries))
	if err := r.loadProbe(); err != nil {
		r.unmap()
		unix.Close(fd)
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	sqSize := uintptr(p.sqOff.array) + uintptr(p.sqEntries)*4
	if p.flags&SetupNoSQArray != 0 {
		sqSize = 0
	}
	cqSize := uintptr(p.cqOff.cqes) + uintptr(p.cqEntries)*sizeofCQE
	single := p.features&FeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	} else if sqSize == 0 {
		return fmt.Errorf("cannot map rings: NO_SQARRAY without IORING_FEAT_SINGLE_MMAP")
	}
	const prot = unix.PROT_READ | unix.PROT_WRITE
	const flags = unix.MAP_SHARED | unix.MAP_POPULATE
	var err error
	r.ringMem, err = unix.Mmap(r.fd, ringOffSQRing, int(sqSize), prot, flags)
	if err != nil {
		return fmt.Errorf("cannot mmap SQ ring (%d bytes): %w", sqSize, err)
	}
	cq := r.ringMem
	if !single {
		r.cqMem, err = unix.Mmap(r.fd, ringOffCQRing, int(cqSize), prot, flags)
		if err != nil {
			return fmt.Errorf("cannot mmap CQ ring (%d bytes): %w", cqSize, err)
		}
		cq = r.cqMem
	}
	r.sqeMem, err = unix.Mmap(r.fd, ringOffSQEs, int(p.sqEntries)*sizeofSQE, prot, flags)
	if err != nil {
		return fmt.Errorf("cannot mmap %d SQEs: %w", p.sqEntries, err)
	}
	u32 := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	r.sqKHead = u32(r.ringMem, p.sqOff.head)
	r.sqKTail = u32(r.ringMem, p.sqOff.tail)
	r.sqKFlags = u32(r.ringMem, p.sqOff.flags)
	r.sqKDropped = u32(r.ringMem, p.sqOff.dropped)
	r.sqMask = *u32(r.ringMem, p.sqOff.ringMask)
	r.sqEntries = *u32(r.ringMem, p.sqOff.ringEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), r.sqEntries)
	if p.flags&SetupNoSQArray == 0 {
		// Map SQ slot i to SQE i once; the tail then indexes SQEs directly,
		// the same as NO_SQARRAY does.
		arr := unsafe.Slice((*uint32)(unsafe.Pointer(&r.ringMem[p.sqOff.array])), r.sqEntries)
		for i := range arr {
			arr[i] = uint32(i)
		}
	}
	r.sqeTail = atomic.LoadUint32(r.sqKTail)
	r.cqKHead = u32(cq, p.cqOff.head)
	r.cqKTail = u32(cq, p.cqOff.tail)
	r.cqKOverflow = u32(cq, p.cqOff.overflow)
	r.cqMask = *u32(cq, p.cqOff.ringMask)
	r.cqEntries = *u32(cq, p.cqOff.ringEntries)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&cq[p.cqOff.cqes])), r.cqEntries)
	return nil
}

func (r *Ring) unmap() {
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.ringMem} {
		if m != nil {
			_ = unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.ringMem = nil, nil, nil
	r.sqes, r.cqes = nil, nil
}

// Fd is the ring's file descriptor (the target of another ring's MsgRing).
func (r *Ring) Fd() int { return r.fd }

// SetupFlags are the IORING_SETUP_* flags the kernel accepted.
func (r *Ring) SetupFlags() uint32 { return r.flags }

// Features are the IORING_FEAT_* bits the kernel reported.
func (r *Ring) Features() uint32 { return r.features }

// SQEntries and CQEntries are the ring sizes the kernel chose.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// CQEntries is the CQ size the kernel chose.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }

// Stats returns the counters; Dropped is read from the mapped CQ ring.
func (r *Ring) Stats() Stats {
	s := r.stats
	if r.cqKOverflow != nil {
		s.Dropped = atomic.LoadUint32(r.cqKOverflow)
	}
	return s
}

// InFlight is the number of ops whose last CQE has not been reaped.
func (r *Ring) InFlight() int { return r.tab.inflight }

// NextSQE returns the next free SQE, or nil when the SQ is full (submit,
// then retry). Its previous contents remain: every Prep method overwrites
// all fields. The SQE is published to the kernel by the next
// Submit or Wait. The head is loaded with acquire semantics: the kernel
// (or its SQPOLL thread) has finished reading every SQE before it.
func (r *Ring) NextSQE() *SQE {
	head := atomic.LoadUint32(r.sqKHead)
	if r.sqeTail-head >= r.sqEntries {
		return nil
	}
	s := &r.sqes[r.sqeTail&r.sqMask]
	r.sqeTail++
	return s
}

// sqe returns an SQE, submitting pending ones once when the SQ is full.
func (r *Ring) sqe() (*SQE, error) {
	if s := r.NextSQE(); s != nil {
		return s, nil
	}
	if _, err := r.Submit(); err != nil {
		return nil, err
	}
	if s := r.NextSQE(); s != nil {
		return s, nil
	}
	return nil, ErrSQFull
}

// flushSQ publishes the locally filled SQEs with a store-release of the SQ
// tail (the kernel must see the SQE contents before the new tail) and
// returns how many the kernel has not consumed yet.
func (r *Ring) flushSQ() uint32 {
	if r.padPlug && r.sqeTail-atomic.LoadUint32(r.sqKHead) == 2 {
		r.padForPlug()
	}
	if atomic.LoadUint32(r.sqKTail) != r.sqeTail {
		atomic.StoreUint32(r.sqKTail, r.sqeTail)
	}
	return r.sqeTail - atomic.LoadUint32(r.sqKHead)
}

// padForPlug adds a NOP, its CQE skipped, behind the two unsubmitted SQEs
// when both are file reads or writes (Options.PlugPad).
func (r *Ring) padForPlug() {
	head := atomic.LoadUint32(r.sqKHead)
	for i := head; i != r.sqeTail; i++ {
		switch r.sqes[i&r.sqMask].Opcode {
		case OpRead, OpWrite, OpReadFixed, OpWriteFixed, OpReadv, OpWritev:
		default:
			return
		}
	}
	s := r.NextSQE()
	if s == nil {
		return
	}
	s.PrepNop()
	s.Flags = SQECQESkipSuccess
	s.UserData = 0
	r.stats.PlugPads++
}

// enter calls io_uring_enter(2). Calls that cannot block use RawSyscall6 to
// skip the scheduler hand-off.
func (r *Ring) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSz uintptr) (int, error) {
	r.stats.Enters++
	var n uintptr
	var errno syscall.Errno
	if minComplete == 0 {
		n, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 0, uintptr(flags), uintptr(arg), argSz)
	} else {
		n, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSz)
	}
	if errno != 0 {
		return 0, errno
	}
	r.stats.Submitted += uint64(n)
	return int(n), nil
}

// Submit hands the prepared SQEs to the kernel without waiting and returns
// how many it consumed (0 with SQPOLL, where the poller consumes them
// asynchronously). It enters the kernel only when there is something
// to submit, task work is pending (IORING_SQ_TASKRUN, which DEFER_TASKRUN
// rings need to post their completions), or the CQ overflowed; with SQPOLL
// only when the poller sleeps (IORING_SQ_NEED_WAKEUP). Errors: ErrClosed,
// ErrCQEsDropped, or the errno of io_uring_enter(2).
func (r *Ring) Submit() (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	n := r.flushSQ()
	// Go's atomics are sequentially consistent, so this load of the SQ
	// flags is ordered after the tail store above, as SQPOLL needs.
	sqFlags := atomic.LoadUint32(r.sqKFlags)
	var flags uint32
	if r.flags&SetupSQPoll != 0 {
		if n > 0 && sqFlags&sqNeedWakeup != 0 {
			flags |= enterSQWakeup
		}
		n = 0 // the poller submits; to_submit is ignored
	}
	if sqFlags&(sqTaskrun|sqCQOverflow) != 0 {
		flags |= enterGetEvents
	}
	if n == 0 && flags == 0 {
		return 0, nil
	}
	for {
		got, err := r.enter(n, 0, flags, nil, 0)
		switch err {
		case nil:
			return got, nil
		case unix.EINTR:
			continue
		case unix.EBADR:
			return got, ErrCQEsDropped
		default:
			return got, fmt.Errorf("cannot submit %d SQEs: %w", n, err)
		}
	}
}

// Wait submits the pending SQEs, waits until at least minComplete CQEs have
// been dispatched by this call or timeout has passed (timeout <= 0: no
// bound), and dispatches everything available. It returns the number of
// CQEs dispatched; running out of time is not an error. The bounded wait is
// io_uring_enter(2) with IORING_ENTER_EXT_ARG (Linux 5.11+, ErrNotSupported
// before). EINTR is retried; EBUSY/EAGAIN (the kernel is short of room for
// completions) reap and retry.
func (r *Ring) Wait(minComplete uint32, timeout time.Duration) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	var deadline time.Time
	if timeout > 0 {
		if r.features&FeatExtArg == 0 {
			return 0, fmt.Errorf("cannot wait with a timeout: %w", ErrNotSupported)
		}
		deadline = time.Now().Add(timeout)
	}
	got, first := 0, true
	if len(r.held) > 0 {
		// CQEs a WaitFor held: they are due now, not after another wait.
		if got = r.Reap(); uint32(got) >= minComplete {
			return got, nil
		}
	}
	for {
		need := uint32(0)
		if uint32(got) < minComplete {
			need = minComplete - uint32(got)
		}
		var n, flags uint32
		var arg unsafe.Pointer
		var argSz uintptr
		switch {
		case need == 0 || deadline.IsZero():
			n, flags, arg, argSz = r.waitArgsLeft(r.flushSQ(), -1)
		case first:
			// The whole timeout: no clock read for the first wait (a ring
			// shard's loop waits thousands of times a second).
			n, flags, arg, argSz = r.waitArgsLeft(r.flushSQ(), timeout)
		default:
			n, flags, arg, argSz = r.waitArgs(r.flushSQ(), deadline)
		}
		first = false
		if need > 0 && r.cqReady() >= need && n == 0 && r.flags&SetupDeferTaskrun == 0 {
			need = 0 // already there: just reap
		}
		_, err := r.enter(n, need, flags, arg, argSz)
		timedOut := false
		switch err {
		case nil:
		case unix.ETIME:
			timedOut = true
		case unix.EINTR, unix.EBUSY, unix.EAGAIN:
		case unix.EBADR:
			got += r.Reap()
			return got, ErrCQEsDropped
		default:
			got += r.Reap()
			return got, fmt.Errorf("cannot wait for %d completions: %w", need, err)
		}
		got += r.Reap()
		if uint32(got) >= minComplete || timedOut {
			return got, nil
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return got, nil
		}
	}
}

// waitArgs returns io_uring_enter(2)'s to_submit, flags and extended
// argument for a wait right after flushSQ reported n SQEs not yet
// consumed: with SQPOLL the poller submits them (woken if it sleeps); a
// deadline (not zero) becomes the wait's timeout (IORING_ENTER_EXT_ARG),
// 0 when it has passed.
func (r *Ring) waitArgs(n uint32, deadline time.Time) (uint32, uint32, unsafe.Pointer, uintptr) {
	if deadline.IsZero() {
		return r.waitArgsLeft(n, -1)
	}
	return r.waitArgsLeft(n, max(time.Until(deadline), 0))
}

// waitArgsLeft is waitArgs with the time left instead of a deadline
// (negative: no timeout).
func (r *Ring) waitArgsLeft(n uint32, left time.Duration) (uint32, uint32, unsafe.Pointer, uintptr) {
	flags := enterGetEvents
	if r.flags&SetupSQPoll != 0 {
		if n > 0 && atomic.LoadUint32(r.sqKFlags)&sqNeedWakeup != 0 {
			flags |= enterSQWakeup
		}
		n = 0
	}
	if left < 0 {
		return n, flags, nil, 0
	}
	r.ts = kernelTimespec{sec: int64(left / time.Second), nsec: int64(left % time.Second)}
	r.arg = getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
	return n, flags | enterExtArg, unsafe.Pointer(&r.arg), sizeofGetEventsArg
}

// Poll submits pending SQEs and dispatches the completions that are ready,
// without blocking. It returns the number dispatched.
func (r *Ring) Poll() (int, error) {
	if _, err := r.Submit(); err != nil {
		return 0, err
	}
	return r.Reap(), nil
}

// cqReady is the number of CQEs in the CQ ring (load-acquire of the tail).
func (r *Ring) cqReady() uint32 {
	return atomic.LoadUint32(r.cqKTail) - *r.cqKHead
}

// Close cancels every in-flight op (IORING_OP_ASYNC_CANCEL with
// IORING_ASYNC_CANCEL_ANY|ALL), dispatches their CQEs (mostly ECANCELED)
// for up to Options.ShutdownTimeout, then unregisters nothing explicitly
// (closing the ring fd releases registered files, buffers and buffer rings),
// unmaps the rings and closes the fd. New ops fail with ErrClosed once Close
// has started. It returns ErrShutdownTimeout (wrapped, with the count) when
// ops were still in flight; their buffers are then released to the GC even
// though a kernel worker might still touch them, so callers that see this
// error should keep their own buffers alive.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	r.closing = true
	var err error
	if r.tab.inflight > 0 {
		if s, serr := r.sqe(); serr == nil {
			s.prepCancel(0, 0, CancelAny|CancelAll)
			s.UserData = 0
		}
		deadline := time.Now().Add(r.opts.ShutdownTimeout)
		for r.tab.inflight > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			if _, werr := r.Wait(1, left); werr != nil {
				break
			}
		}
		if r.tab.inflight > 0 {
			err = fmt.Errorf("cannot close ring with %d ops in flight after %v: %w", r.tab.inflight, r.opts.ShutdownTimeout, ErrShutdownTimeout)
		}
	}
	r.closed = true
	cerr := unix.Close(r.fd)
	r.unmap()
	for _, b := range r.bufRings {
		b.free()
	}
	r.bufRings = nil
	r.fixedBufs = nil
	r.tab.releaseAll()
	if err == nil && cerr != nil {
		err = fmt.Errorf("cannot close ring fd %d: %w", r.fd, cerr)
	}
	r.fd = -1
	return err
}
