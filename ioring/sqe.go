package ioring

import (
	"syscall"
	"unsafe"
)

// SQE is one submission queue entry, laid out exactly as struct io_uring_sqe
// (64 bytes, include/uapi/linux/io_uring.h). The kernel overlays several
// unions on these fields; the Prep methods name the meaning each op gives
// them. An *SQE returned by Ring.NextSQE points into the mapped SQE array:
// fill it before the next Submit and never keep it afterwards.
//
// Prep methods never allocate. Those that take a []byte store the address of
// its first element (never the slice header) in Addr; the caller must keep the
// memory alive and unmoved until the op's last CQE, which the Ring's op
// methods (Ring.Recv, Ring.SendZC, ...) do for it through the in-flight table.
type SQE struct {
	Opcode      Op     // IORING_OP_*
	Flags       uint8  // IOSQE_* (SQEFixedFile, SQEBufferSelect, ...)
	IoPrio      uint16 // ioprio; send/recv/accept flags (IORING_RECV_MULTISHOT, ...)
	Fd          int32  // file descriptor, or registered-file index with SQEFixedFile
	Off         uint64 // offset; addr2; user_data of a message for MSG_RING
	Addr        uint64 // buffer or iovec address; splice_off_in
	Len         uint32 // buffer length or iovec count
	OpFlags     uint32 // rw_flags, fsync_flags, msg_flags, timeout_flags, cancel_flags, ...
	UserData    uint64 // returned in the CQE
	BufIndex    uint16 // registered buffer index, or buffer group with SQEBufferSelect
	Personality uint16
	SpliceFdIn  int32  // splice_fd_in, file_index (+1) for direct descriptors
	Addr3       uint64 // addr3
	_           uint64
}

// CQE is one completion queue entry, laid out as struct io_uring_cqe
// (16 bytes; CQE32 rings are not used).
type CQE struct {
	UserData uint64 // the SQE's UserData
	Res      int32  // result: a count, an fd, or -errno
	Flags    uint32 // IORING_CQE_F_* flags; the upper 16 bits hold a buffer id with CQEFBuffer
}

// Err returns nil for a non-negative Res, else the errno (syscall.Errno, so
// errors.Is(err, syscall.ECANCELED) works).
func (c CQE) Err() error {
	if c.Res >= 0 {
		return nil
	}
	return syscall.Errno(-c.Res)
}

// More reports IORING_CQE_F_MORE: the same SQE will post more CQEs (multishot
// ops, and the send-zc result that a notification will follow).
func (c CQE) More() bool { return c.Flags&CQEFMore != 0 }

// Notif reports IORING_CQE_F_NOTIF: a send-zc notification, after which the
// kernel no longer reads the sent buffer.
func (c CQE) Notif() bool { return c.Flags&CQEFNotif != 0 }

// BufferID returns the provided-buffer id the kernel picked
// (flags >> IORING_CQE_BUFFER_SHIFT) and whether one was picked (CQEFBuffer).
func (c CQE) BufferID() (uint16, bool) {
	return uint16(c.Flags >> CQEBufferShift), c.Flags&CQEFBuffer != 0
}

// prepRW fills the fields every op uses and clears the rest (the SQE array is
// reused, so stale fields from an earlier op must not leak in).
func (s *SQE) prepRW(op Op, fd int, addr uintptr, n uint32, off uint64) {
	*s = SQE{Opcode: op, Fd: int32(fd), Off: off, Addr: uint64(addr), Len: n}
}

// SetFlags ors IOSQE_* flags into the SQE (SQEIOLink, SQEAsync, ...).
func (s *SQE) SetFlags(f uint8) { s.Flags |= f }

// UseFixedFile marks Fd as an index into the registered file table
// (IOSQE_FIXED_FILE; see Ring.RegisterFiles).
func (s *SQE) UseFixedFile() { s.Flags |= SQEFixedFile }

// bufAddr is the address of b's first element, or 0 for an empty slice: the
// data pointer of the slice, never the address of the slice header.
func bufAddr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&b[0]))
}

// bufPtr is bufAddr as a pointer, for the in-flight table.
func bufPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// PrepNop prepares IORING_OP_NOP: it completes with res 0.
func (s *SQE) PrepNop() { s.prepRW(OpNop, -1, 0, 0, 0) }
