package ioring

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Control ops: nop, timeout, timeout remove, async cancel, msg-ring
// (io_uring_enter(2) opcodes IORING_OP_NOP, _TIMEOUT, _TIMEOUT_REMOVE,
// _ASYNC_CANCEL, _MSG_RING).

// PrepTimeout prepares IORING_OP_TIMEOUT: it completes with -ETIME when ts
// passes (relative unless flags has TimeoutAbs), with res 0 once count other
// completions were posted (count 0: time only), or -ECANCELED when removed.
// The kernel reads *ts when it consumes the SQE (later with SQPOLL), so ts
// must stay alive until then. unix.Timespec has the layout of
// struct __kernel_timespec on 64-bit Linux.
func (s *SQE) PrepTimeout(ts *unix.Timespec, count uint32, flags uint32) {
	s.prepRW(OpTimeout, -1, uintptr(unsafe.Pointer(ts)), 1, uint64(count))
	s.OpFlags = flags
}

// PrepTimeoutRemove prepares IORING_OP_TIMEOUT_REMOVE of the timeout whose
// user_data is target. CQE res: 0, -ENOENT (already fired or unknown), or
// -EALREADY.
func (s *SQE) PrepTimeoutRemove(target uint64, flags uint32) {
	s.prepRW(OpTimeoutRemove, -1, uintptr(target), 0, 0)
	s.OpFlags = flags
}

func (s *SQE) prepCancel(target uint64, fd int, flags uint32) {
	s.prepRW(OpAsyncCancel, fd, uintptr(target), 0, 0)
	s.OpFlags = flags
}

// PrepCancel prepares IORING_OP_ASYNC_CANCEL of the op(s) with user_data
// target; flags may add CancelAll (every match) or CancelAny (every op,
// target ignored). The cancelled ops complete with -ECANCELED (or -EINTR
// for some in io-wq); the cancel's own CQE res is 0 or, with
// CancelAll/CancelAny, the number cancelled; -ENOENT if none matched,
// -EALREADY if the op was running and could not be stopped.
func (s *SQE) PrepCancel(target uint64, flags uint32) { s.prepCancel(target, -1, flags) }

// PrepCancelFd prepares IORING_OP_ASYNC_CANCEL of the ops on fd
// (IORING_ASYNC_CANCEL_FD, Linux 5.19); flags may add CancelAll.
func (s *SQE) PrepCancelFd(fd int, flags uint32) { s.prepCancel(0, fd, flags|CancelFd) }

// PrepMsgRing prepares IORING_OP_MSG_RING with IORING_MSG_DATA: post a CQE
// with res and userData to the ring whose fd is ringFd (Linux 5.18), for
// cross-shard wake-ups. flags are msg_ring_flags. The sender's own CQE has
// res 0, or -EOVERFLOW if the target CQ is full, -EBADFD if ringFd is not
// a ring.
func (s *SQE) PrepMsgRing(ringFd int, res int32, userData uint64, flags uint32) {
	s.prepRW(OpMsgRing, ringFd, uintptr(msgRingData), uint32(res), userData)
	s.OpFlags = flags
}

// Nop starts an IORING_OP_NOP; it completes with res 0.
func (r *Ring) Nop(h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepNop()
	s.UserData = ud
	return ud, nil
}

// Timeout starts a relative timeout of d (see PrepTimeout): -ETIME when it
// fires, 0 after count completions, -ECANCELED when removed or cancelled.
// The timespec lives in the op's table slot, so this does not allocate.
func (r *Ring) Timeout(d time.Duration, count uint32, flags uint32, h Handler) (uint64, error) {
	s, sl, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		d = 0
	}
	sl.ts = unix.NsecToTimespec(int64(d))
	s.PrepTimeout(&sl.ts, count, flags)
	s.UserData = ud
	return ud, nil
}

// TimeoutRemove starts the removal of the timeout with user_data target.
func (r *Ring) TimeoutRemove(target uint64, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepTimeoutRemove(target, 0)
	s.UserData = ud
	return ud, nil
}

// Cancel starts an async cancel of target (see PrepCancel). CancelAny with
// target 0 cancels everything in flight.
func (r *Ring) Cancel(target uint64, flags uint32, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepCancel(target, flags)
	s.UserData = ud
	return ud, nil
}

// CancelFd starts an async cancel of the ops on fd (see PrepCancelFd).
func (r *Ring) CancelFd(fd int, flags uint32, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepCancelFd(fd, flags)
	s.UserData = ud
	return ud, nil
}

// MsgRing posts a CQE {UserData: userData, Res: res} to the ring with fd
// ringFd (see PrepMsgRing). userData must be in [1, 1<<32) so that the
// target ring routes it to its Options.OnMessage rather than to its
// in-flight table. h gets the sender-side CQE.
func (r *Ring) MsgRing(ringFd int, res int32, userData uint64, h Handler) (uint64, error) {
	if userData == 0 || userData>>32 != 0 {
		return 0, fmt.Errorf("cannot send message with user_data %#x to ring %d: want [1, 1<<32)", userData, ringFd)
	}
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepMsgRing(ringFd, res, userData, 0)
	s.UserData = ud
	return ud, nil
}
