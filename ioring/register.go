package ioring

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// register calls io_uring_register(2), retrying EINTR (some opcodes wait
// for the ring to go idle and can be interrupted).
func (r *Ring) register(op uintptr, arg unsafe.Pointer, nr uintptr) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), nr, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// RegisterFiles registers fds as the ring's fixed file table
// (IORING_REGISTER_FILES): an op with SQE.UseFixedFile (or fixedFile true)
// then names a file by its index in fds, and the kernel skips the fd table
// lookup and reference counting per op. -1 entries are empty slots. Only
// one table can be registered; UnregisterFiles first to replace it.
// Errors: EBUSY (already registered), EMFILE (more than RLIMIT_NOFILE),
// EBADF.
func (r *Ring) RegisterFiles(fds []int32) error {
	if len(fds) == 0 || len(fds) > maxRegisterArgs {
		return fmt.Errorf("cannot register %d files: want 1..%d", len(fds), maxRegisterArgs)
	}
	_, err := r.register(regFiles, unsafe.Pointer(&fds[0]), uintptr(len(fds)))
	runtime.KeepAlive(fds)
	if err != nil {
		return fmt.Errorf("cannot register %d files: %w", len(fds), err)
	}
	r.nFiles = len(fds)
	return nil
}

// UpdateFiles replaces registered file slots [off, off+len(fds)) with fds
// (IORING_REGISTER_FILES_UPDATE; -1 empties a slot). It returns how many
// slots were updated.
func (r *Ring) UpdateFiles(off uint32, fds []int32) (int, error) {
	if len(fds) == 0 {
		return 0, nil
	}
	u := filesUpdate{offset: off, fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	n, err := r.register(regFilesUpdate, unsafe.Pointer(&u), uintptr(len(fds)))
	runtime.KeepAlive(fds)
	if err != nil {
		return n, fmt.Errorf("cannot update %d registered files at %d: %w", len(fds), off, err)
	}
	return n, nil
}

// UnregisterFiles drops the fixed file table (IORING_UNREGISTER_FILES).
func (r *Ring) UnregisterFiles() error {
	if _, err := r.register(unregFiles, nil, 0); err != nil {
		return fmt.Errorf("cannot unregister files: %w", err)
	}
	r.nFiles = 0
	return nil
}

// RegisterBuffers registers bufs as fixed buffers (IORING_REGISTER_BUFFERS):
// the kernel pins their pages once, and ReadFixed/WriteFixed/SendZCFixed
// name them by index. The ring keeps bufs reachable until
// UnregisterBuffers or Close; their memory must not be reused for anything
// else meanwhile. Memory from mmap (anonymous, page-aligned) is best;
// Go-heap slices work too, since the kernel pins the pages and Go's heap
// does not move. Counts against RLIMIT_MEMLOCK on kernels before 5.12.
// Errors: EBUSY (already registered), ENOMEM, EFAULT, EOVERFLOW (> 1 GiB).
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	if len(bufs) == 0 || len(bufs) > maxRegisterArgs {
		return fmt.Errorf("cannot register %d buffers: want 1..%d", len(bufs), maxRegisterArgs)
	}
	iov := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 {
			return fmt.Errorf("cannot register buffer %d: it is empty", i)
		}
		iov[i].Base = &b[0]
		iov[i].SetLen(len(b))
	}
	_, err := r.register(regBuffers, unsafe.Pointer(&iov[0]), uintptr(len(iov)))
	runtime.KeepAlive(iov)
	if err != nil {
		return fmt.Errorf("cannot register %d buffers: %w", len(bufs), err)
	}
	r.fixedBufs = append([][]byte(nil), bufs...)
	return nil
}

// UnregisterBuffers drops the fixed buffers (IORING_UNREGISTER_BUFFERS).
// No op using them may be in flight.
func (r *Ring) UnregisterBuffers() error {
	if _, err := r.register(unregBuffers, nil, 0); err != nil {
		return fmt.Errorf("cannot unregister buffers: %w", err)
	}
	r.fixedBufs = nil
	return nil
}

// RegisterBufferTable registers an empty table of n fixed buffers
// (IORING_REGISTER_BUFFERS2 with IORING_RSRC_REGISTER_SPARSE, Linux 5.19),
// to be filled slot by slot with UpdateBuffers as buffers are made, so
// that nothing is pinned before it is used. An op naming an empty slot
// fails with EFAULT. n is 1..16384 (IORING_MAX_REG_BUFFERS). Errors:
// EBUSY (a table is registered), EINVAL (an older kernel).
func (r *Ring) RegisterBufferTable(n int) error {
	if n <= 0 || n > maxFixedBufs {
		return fmt.Errorf("cannot register a table of %d buffers: want 1..%d", n, maxFixedBufs)
	}
	a := rsrcRegister{nr: uint32(n), flags: rsrcRegisterSparse}
	if _, err := r.register(regBuffers2, unsafe.Pointer(&a), unsafe.Sizeof(a)); err != nil {
		return fmt.Errorf("cannot register a table of %d buffers: %w", n, err)
	}
	r.fixedBufs = make([][]byte, n)
	return nil
}

// UpdateBuffers puts bufs into registered buffer slots [off, off+len(bufs))
// (IORING_REGISTER_BUFFERS_UPDATE): the kernel pins their pages now, and
// ReadFixed/WriteFixed then name them by slot. A slot must not be replaced
// while an op uses it. Each buffer is at most 1 GiB; the ring keeps it
// reachable while registered. Non-root callers without CAP_IPC_LOCK pin
// against RLIMIT_MEMLOCK (ENOMEM past it). Errors: ENXIO (no table),
// EINVAL (a slot out of range), ENOMEM, EFAULT.
func (r *Ring) UpdateBuffers(off int, bufs [][]byte) error {
	if len(bufs) == 0 {
		return nil
	}
	if off < 0 || off+len(bufs) > len(r.fixedBufs) {
		return fmt.Errorf("cannot update buffer slots [%d, %d): the table has %d", off, off+len(bufs), len(r.fixedBufs))
	}
	iov := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 || len(b) > maxFixedBufLen {
			return fmt.Errorf("cannot register buffer %d of %d bytes: want 1..%d", i, len(b), maxFixedBufLen)
		}
		iov[i].Base = &b[0]
		iov[i].SetLen(len(b))
	}
	u := rsrcUpdate2{offset: uint32(off), data: uint64(uintptr(unsafe.Pointer(&iov[0]))), nr: uint32(len(iov))}
	n, err := r.register(regBufUpdate, unsafe.Pointer(&u), unsafe.Sizeof(u))
	runtime.KeepAlive(iov)
	if err == nil && n != len(bufs) {
		err = fmt.Errorf("%d of %d updated", n, len(bufs))
	}
	if err != nil {
		return fmt.Errorf("cannot update buffer slots [%d, %d): %w", off, off+len(bufs), err)
	}
	copy(r.fixedBufs[off:], bufs)
	return nil
}
