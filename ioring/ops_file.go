package ioring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// File ops: read/write (plain and fixed-buffer), writev, fsync/fdatasync,
// fallocate, splice, close (io_uring_enter(2) opcodes IORING_OP_READ,
// _WRITE, _READ_FIXED, _WRITE_FIXED, _WRITEV, _FSYNC, _FALLOCATE, _SPLICE,
// _CLOSE). Offsets are bytes; -1 means the file position where the kernel
// allows it (IORING_FEAT_RW_CUR_POS) and "no offset" for pipes in splice.
// Any of them can use a registered file: call SQE.UseFixedFile and pass the
// registered index as fd.

// PrepRead prepares IORING_OP_READ of up to len(b) bytes at offset off.
// CQE res: bytes read (short at EOF, 0 past it), or -errno (EAGAIN on an
// O_NONBLOCK fd with nothing to read).
func (s *SQE) PrepRead(fd int, b []byte, off int64) {
	s.prepRW(OpRead, fd, bufAddr(b), uint32(len(b)), uint64(off))
}

// PrepWrite prepares IORING_OP_WRITE of b at offset off. CQE res: bytes
// written (possibly short, e.g. to a nearly full O_NONBLOCK pipe), or
// -errno (EAGAIN when a non-blocking pipe is full).
func (s *SQE) PrepWrite(fd int, b []byte, off int64) {
	s.prepRW(OpWrite, fd, bufAddr(b), uint32(len(b)), uint64(off))
}

// PrepReadFixed prepares IORING_OP_READ_FIXED into b, which must lie inside
// registered buffer bufIndex (Ring.RegisterBuffers): the kernel skips
// pinning the pages per op.
func (s *SQE) PrepReadFixed(fd int, b []byte, off int64, bufIndex uint16) {
	s.prepRW(OpReadFixed, fd, bufAddr(b), uint32(len(b)), uint64(off))
	s.BufIndex = bufIndex
}

// PrepWriteFixed prepares IORING_OP_WRITE_FIXED from b inside registered
// buffer bufIndex.
func (s *SQE) PrepWriteFixed(fd int, b []byte, off int64, bufIndex uint16) {
	s.prepRW(OpWriteFixed, fd, bufAddr(b), uint32(len(b)), uint64(off))
	s.BufIndex = bufIndex
}

// PrepWritev prepares IORING_OP_WRITEV of the iovecs at offset off. The
// iovec array and the memory it points to must stay alive until the CQE.
func (s *SQE) PrepWritev(fd int, iov []unix.Iovec, off int64) {
	var p uintptr
	if len(iov) > 0 {
		p = uintptr(unsafe.Pointer(&iov[0]))
	}
	s.prepRW(OpWritev, fd, p, uint32(len(iov)), uint64(off))
}

// PrepFsync prepares IORING_OP_FSYNC: fsync(2), or fdatasync(2) with
// flags FsyncDataSync. It runs in an io-wq worker.
func (s *SQE) PrepFsync(fd int, flags uint32) {
	s.prepRW(OpFsync, fd, 0, 0, 0)
	s.OpFlags = flags
}

// PrepFallocate prepares IORING_OP_FALLOCATE: fallocate(2) of length bytes
// at offset off with mode (0, unix.FALLOC_FL_KEEP_SIZE, ...). The kernel
// takes the length from sqe.addr and the mode from sqe.len.
func (s *SQE) PrepFallocate(fd int, mode uint32, off, length int64) {
	s.prepRW(OpFallocate, fd, uintptr(length), mode, uint64(off))
}

// PrepSplice prepares IORING_OP_SPLICE: splice(2) of up to n bytes from
// fdIn at offIn to fdOut at offOut (-1 for a pipe end or the file
// position); flags are SPLICE_F_* flags. One side must be a pipe. CQE res:
// bytes moved (0 at EOF of fdIn), or -errno.
func (s *SQE) PrepSplice(fdIn int, offIn int64, fdOut int, offOut int64, n uint32, flags uint32) {
	s.prepRW(OpSplice, fdOut, uintptr(offIn), n, uint64(offOut))
	s.OpFlags = flags
	s.SpliceFdIn = int32(fdIn)
}

// PrepClose prepares IORING_OP_CLOSE of fd.
func (s *SQE) PrepClose(fd int) { s.prepRW(OpClose, fd, 0, 0, 0) }

// PrepCloseFixed prepares IORING_OP_CLOSE of registered-file slot index
// (the kernel takes file_index = index+1).
func (s *SQE) PrepCloseFixed(index uint32) {
	s.prepRW(OpClose, 0, 0, 0, 0)
	s.SpliceFdIn = int32(index + 1)
}

// simple starts an op that references at most one buffer.
func (r *Ring) simple(h Handler, keep unsafe.Pointer) (*SQE, uint64, error) {
	s, _, ud, err := r.start(h, keep, nil)
	return s, ud, err
}

// Read starts a read into b at off (see PrepRead); b is kept alive until
// the CQE. fixedFile marks fd as a registered-file index.
func (r *Ring) Read(fd int, b []byte, off int64, fixedFile bool, h Handler) (uint64, error) {
	s, ud, err := r.simple(h, bufPtr(b))
	if err != nil {
		return 0, err
	}
	s.PrepRead(fd, b, off)
	if fixedFile {
		s.UseFixedFile()
	}
	s.UserData = ud
	return ud, nil
}

// Write starts a write of b at off (see PrepWrite).
func (r *Ring) Write(fd int, b []byte, off int64, fixedFile bool, h Handler) (uint64, error) {
	s, ud, err := r.simple(h, bufPtr(b))
	if err != nil {
		return 0, err
	}
	s.PrepWrite(fd, b, off)
	if fixedFile {
		s.UseFixedFile()
	}
	s.UserData = ud
	return ud, nil
}

// ReadFixed starts a read into b, a slice of registered buffer bufIndex
// (see PrepReadFixed).
func (r *Ring) ReadFixed(fd int, b []byte, off int64, bufIndex uint16, fixedFile bool, h Handler) (uint64, error) {
	s, ud, err := r.startRegistered(h, bufPtr(b))
	if err != nil {
		return 0, err
	}
	s.PrepReadFixed(fd, b, off, bufIndex)
	if fixedFile {
		s.UseFixedFile()
	}
	s.UserData = ud
	return ud, nil
}

// WriteFixed starts a write from b, a slice of registered buffer bufIndex
// (see PrepWriteFixed).
func (r *Ring) WriteFixed(fd int, b []byte, off int64, bufIndex uint16, fixedFile bool, h Handler) (uint64, error) {
	s, ud, err := r.startRegistered(h, bufPtr(b))
	if err != nil {
		return 0, err
	}
	s.PrepWriteFixed(fd, b, off, bufIndex)
	if fixedFile {
		s.UseFixedFile()
	}
	s.UserData = ud
	return ud, nil
}

// Writev starts a writev of iov at off (see PrepWritev). The iovec array is
// kept alive and pinned until the CQE; the buffers it points to stay
// reachable through it (unix.Iovec.Base is a Go pointer).
func (r *Ring) Writev(fd int, iov []unix.Iovec, off int64, h Handler) (uint64, error) {
	var p unsafe.Pointer
	if len(iov) > 0 {
		p = unsafe.Pointer(&iov[0])
	}
	s, ud, err := r.simple(h, p)
	if err != nil {
		return 0, err
	}
	s.PrepWritev(fd, iov, off)
	s.UserData = ud
	return ud, nil
}

// Fsync starts an fsync, or an fdatasync with flags FsyncDataSync.
func (r *Ring) Fsync(fd int, flags uint32, h Handler) (uint64, error) {
	s, ud, err := r.simple(h, nil)
	if err != nil {
		return 0, err
	}
	s.PrepFsync(fd, flags)
	s.UserData = ud
	return ud, nil
}

// Fallocate starts a fallocate (see PrepFallocate).
func (r *Ring) Fallocate(fd int, mode uint32, off, length int64, h Handler) (uint64, error) {
	s, ud, err := r.simple(h, nil)
	if err != nil {
		return 0, err
	}
	s.PrepFallocate(fd, mode, off, length)
	s.UserData = ud
	return ud, nil
}

// Splice starts a splice (see PrepSplice).
func (r *Ring) Splice(fdIn int, offIn int64, fdOut int, offOut int64, n uint32, flags uint32, h Handler) (uint64, error) {
	s, ud, err := r.simple(h, nil)
	if err != nil {
		return 0, err
	}
	s.PrepSplice(fdIn, offIn, fdOut, offOut, n, flags)
	s.UserData = ud
	return ud, nil
}

// CloseFd starts a close of fd through the ring (see PrepClose).
func (r *Ring) CloseFd(fd int, h Handler) (uint64, error) {
	s, ud, err := r.simple(h, nil)
	if err != nil {
		return 0, err
	}
	s.PrepClose(fd)
	s.UserData = ud
	return ud, nil
}
