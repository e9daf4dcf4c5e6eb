package nvme

import (
	"cmp"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Zero fill (Log.growAllocation says why): a direct-mode segment's chunks
// past its first are written with zeros as they are fallocated (half a
// chunk before the data reaches the allocated end), by a goroutine of
// their own, one fill at a time per file. The file's owner never writes
// data into a range while a fill may still write it: WriteAt waits for the
// fill when its blocks reach the fill's start (at most half a chunk of
// appends after it began; a 16 MiB fill takes ~2 ms on this project's VM),
// and Truncate and Close wait for it, so that zeros never land behind data
// or past a trimmed end.

// Test hooks: while zeroFillGate is set, every fill started waits for it
// to be closed before it writes; zeroFillWaitHook runs when an owner is
// about to wait for a fill still running (a test closes the gate there, so
// that a fill is still pending whenever an append reaches it).
var (
	zeroFillGate     chan struct{}
	zeroFillWaitHook func()
)

// zeroFillMax is how many bytes one pwritev(2) of a fill writes.
const zeroFillMax = 16 << 20

// zeroBlock is the shared source of the fills' writes: aligned zero
// bytes, never written after it is made. It is one transparent huge page
// where the kernel gives one (a 2 MiB-aligned anonymous mapping with
// MADV_HUGEPAGE, touched so that it is backed): a 16 MiB O_DIRECT fill
// from it took 1.7 ms and 0.10-0.18 ms of CPU against 10.5 ms and ~0.3 ms
// from a 1 MiB heap buffer named 16 times (BenchmarkZeroFill, this
// project's VM). Else a 1 MiB heap buffer.
var zeroBlock = sync.OnceValue(func() []byte {
	const huge = 2 << 20
	if m, err := unix.Mmap(-1, 0, 2*huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
		off := (huge - int(uintptr(unsafe.Pointer(&m[0]))%huge)) % huge
		b := m[off : off+huge]
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // a hint: 4 KiB pages work too
		for i := 0; i < len(b); i += 4096 {
			b[i] = 0 // a write fault: backed by pages of its own, not the shared zero page
		}
		return b
	}
	return alignedBuf(1<<20, 4096)
})

// zeroFill starts writing zeros over [from, to) of d, fallocated and
// beyond its data (owner shard only). A fill still running is waited for
// first.
func (d *directFile) zeroFill(from, to int64) {
	d.waitZero()
	if to <= from {
		return
	}
	done := make(chan struct{})
	d.zeroFrom, d.zeroDone = from, done
	d.cache.wb.stats.ZeroFills++
	d.cache.wb.stats.ZeroFillBytes += uint64(to - from)
	f := d.raw.OSFile()
	gate := zeroFillGate
	go func() {
		defer close(done) // publishes zeroErr to waitZero
		if gate != nil {
			<-gate
		}
		var werr error
		rc, err := f.SyscallConn()
		if err == nil {
			err = rc.Write(func(fd uintptr) bool {
				werr = writeZeros(int(fd), from, to)
				return true
			})
		}
		d.zeroErr = cmp.Or(err, werr)
	}()
}

// writeZeros writes zeros over [from, to) of fd with pwritev(2)s of up to
// zeroFillMax bytes, retrying short writes and EINTR.
func writeZeros(fd int, from, to int64) error {
	z := zeroBlock()
	var iov [zeroFillMax >> 20][]byte // zeroBlock is at least 1 MiB
	for from < to {
		n := min(to-from, zeroFillMax)
		k := 0
		for left := n; left > 0; k++ {
			iov[k] = z[:min(left, int64(len(z)))]
			left -= int64(len(iov[k]))
		}
		m, err := unix.Pwritev(fd, iov[:k], from)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot write zeros at %d: %w", from, err)
		}
		if m <= 0 {
			return fmt.Errorf("cannot write zeros at %d: wrote %d of %d bytes", from, m, n)
		}
		from += int64(m)
	}
	return nil
}

// zeroAhead waits for a running fill whose range an append ending at end
// reaches (owner shard only).
func (d *directFile) zeroAhead(end int64) {
	if d.zeroDone != nil && roundUp(end, d.align) > d.zeroFrom {
		d.waitZero()
	}
}

// waitZero waits for the running fill, if any (owner shard only). A fill
// that failed leaves its range unwritten, as without the fill: the data
// writes convert it; the error is logged once per file.
func (d *directFile) waitZero() {
	if d.zeroDone == nil {
		return
	}
	select {
	case <-d.zeroDone:
	default:
		d.cache.wb.stats.ZeroFillWaits++
		if zeroFillWaitHook != nil {
			zeroFillWaitHook()
		}
		<-d.zeroDone
	}
	d.zeroDone = nil
	if d.zeroErr != nil && !d.zeroWarned && d.owner != nil {
		d.zeroWarned = true
		d.owner.logger.Warn("cannot zero-fill preallocated segment blocks; writes convert them instead", "segment", d.name, "err", d.zeroErr)
	}
	d.zeroErr = nil
}
