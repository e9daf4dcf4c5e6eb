package ioring

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// File parts of a RingConn's queue: small ones read into a per-connection
// arena (one submission of reads, then sent with the answer's header in one
// writev), large ones sent with sendfile(2) when every page is cached and
// the part is at least UringOptions.SendfileMin bytes, else spliced
// file -> pipe -> socket. Everything here runs on the owning shard's loop.

// loadBatchMax bounds the bytes of file parts read into memory at once
// (and FileCopyMax).
const loadBatchMax = 4 << 20

// maxFreeArenas is how many free arenas a shard keeps: the arenas in use
// are those of the connections with read file parts not yet sent.
const maxFreeArenas = 8

// takeArena returns an arena of at least n bytes: a free one of the shard
// when one is large enough, else a new one (a power of two from 64 KiB).
func (us *uringShard) takeArena(n int) []byte {
	for i, a := range us.arenas {
		if cap(a) >= n {
			last := len(us.arenas) - 1
			us.arenas[i] = us.arenas[last]
			us.arenas[last] = nil
			us.arenas = us.arenas[:last]
			return a[:cap(a)]
		}
	}
	size := 64 << 10
	for size < n {
		size <<= 1
	}
	return make([]byte, size)
}

// giveArena keeps a connection's arena for the next one, up to
// maxFreeArenas (the smallest goes first when full).
func (us *uringShard) giveArena(a []byte) {
	if a == nil {
		return
	}
	if len(us.arenas) < maxFreeArenas {
		us.arenas = append(us.arenas, a)
		return
	}
	small := 0
	for i, x := range us.arenas {
		if cap(x) < cap(us.arenas[small]) {
			small = i
		}
	}
	if cap(a) > cap(us.arenas[small]) {
		us.arenas[small] = a
	}
}

// maxLoads is the most file parts read in one batch (as many as one
// writev sends).
const maxLoads = 64

// loadFileParts reads the small file parts at the front of the queue into
// the arena, all in one submission, when no part still uses the arena. It
// reports whether reads are in flight (the send waits for them).
func (c *RingConn) loadFileParts() bool {
	limit := c.us.e.o.FileCopyMax
	if limit <= 0 || c.loadedLive > 0 {
		return false
	}
	total, n := 0, 0
	for i := c.qh; i < len(c.q) && i < c.qh+maxLoads; i++ {
		p := &c.q[i]
		if p.buf != -2 {
			continue
		}
		if p.n > int64(limit) || total+int(p.n) > loadBatchMax || c.sendfileOK(p) {
			break
		}
		total += int(p.n)
		n++
	}
	if n == 0 {
		return false
	}
	c.us.giveArena(c.arena) // left by a batch that failed
	c.arena = c.us.takeArena(total)
	if c.loadHs == nil {
		c.loadHs = make([]HandlerFunc, maxLoads)
		c.loadIdx = make([]int, maxLoads)
		c.loadFill = make([]int, maxLoads)
		for k := range c.loadHs {
			c.loadHs[k] = func(cqe CQE) { c.onLoad(k, cqe) }
		}
	}
	lo, k := 0, 0
	for i := c.qh; k < n; i++ {
		p := &c.q[i]
		if p.buf != -2 {
			continue
		}
		p.buf, p.lo, p.hi = -4, lo, lo+int(p.n)
		lo += int(p.n)
		c.loadIdx[k], c.loadFill[k] = i, 0
		if _, err := c.us.ring.Read(p.fd, c.arena[p.lo:p.hi], p.off, false, c.loadHs[k]); err != nil {
			c.Abort(err) // the reads in flight finish the close
			return true
		}
		c.loads++
		c.ops++
		c.Stats.FileReads++
		k++
	}
	c.sending = true
	return true
}

// onLoad completes read k of a batch; a short read reads the rest.
func (c *RingConn) onLoad(k int, cqe CQE) {
	c.ops--
	c.loads--
	p := &c.q[c.loadIdx[k]]
	switch {
	case c.closing:
	case cqe.Res < 0:
		c.loadErr = cqe.Err()
	case cqe.Res == 0:
		c.loadErr = fmt.Errorf("segment %s ended %d bytes early", p.f.Name(), p.n-int64(c.loadFill[k]))
	default:
		c.loadFill[k] += int(cqe.Res)
		if fill := c.loadFill[k]; fill < p.hi-p.lo {
			if _, err := c.us.ring.Read(p.fd, c.arena[p.lo+fill:p.hi], p.off+int64(fill), false, c.loadHs[k]); err != nil {
				c.loadErr = err
				break
			}
			c.loads++
			c.ops++
			return
		}
	}
	if c.loads > 0 {
		return
	}
	c.sending = false
	if c.closing {
		c.finishClose()
		return
	}
	if err := c.loadErr; err != nil {
		c.loadErr = nil
		c.Abort(err)
		return
	}
	// Every read of the batch is in: their parts become byte parts.
	for i := c.qh; i < len(c.q); i++ {
		if q := &c.q[i]; q.buf == -4 {
			dropFile(q)
			*q = outPart{buf: -3, ref: c.arena[q.lo:q.hi]}
			c.loadedLive++
		}
	}
	c.kick()
}

func (c *RingConn) spliceIn() {
	if c.pipe[0] < 0 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			c.Abort(fmt.Errorf("cannot create splice pipe: %w", err))
			return
		}
		c.pipe = p
		c.pipeCap = 64 << 10
		if n, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, 1<<20); err == nil {
			c.pipeCap = n
		}
	}
	p := &c.q[c.qh]
	n := min(p.n, int64(c.pipeCap))
	if _, err := c.us.ring.Splice(p.fd, p.off, c.pipe[1], -1, uint32(n), unix.SPLICE_F_MOVE, c.spInH); err != nil {
		c.Abort(err)
		return
	}
	c.sending, c.flightEnd = true, c.qh+1
	c.ops++
	c.Stats.Splices++
}

func (c *RingConn) onSpliceIn(cqe CQE) {
	c.ops--
	if cqe.Res <= 0 || c.closing {
		c.sending = false
		if !c.closing {
			err := cqe.Err()
			if cqe.Res == 0 {
				err = fmt.Errorf("segment %s ended %d bytes early", c.q[c.qh].f.Name(), c.q[c.qh].n)
			}
			c.Abort(err)
		}
		c.finishClose()
		return
	}
	p := &c.q[c.qh]
	p.off += int64(cqe.Res)
	p.n -= int64(cqe.Res)
	c.pipeFill = int(cqe.Res)
	c.spliceOut()
}

func (c *RingConn) spliceOut() {
	if _, err := c.us.ring.Splice(c.pipe[0], -1, c.fd, -1, uint32(c.pipeFill), unix.SPLICE_F_MOVE, c.spOutH); err != nil {
		c.sending = false
		c.Abort(err)
		return
	}
	c.ops++
}

func (c *RingConn) onSpliceOut(cqe CQE) {
	c.ops--
	if cqe.Res <= 0 || c.closing {
		c.sending = false
		if !c.closing {
			err := cqe.Err()
			if cqe.Res == 0 {
				err = syscall.EPIPE
			}
			c.Abort(err)
		}
		c.finishClose()
		return
	}
	c.Stats.SentBytes += uint64(cqe.Res)
	c.pipeFill -= int(cqe.Res)
	if c.pipeFill > 0 {
		c.spliceOut()
		return
	}
	if c.q[c.qh].n > 0 {
		c.spliceIn()
		return
	}
	c.release(&c.q[c.qh])
	c.sending = false
	c.kick()
}

// sendfileOK reports whether file part p goes by sendfile(2): at least
// UringOptions.SendfileMin bytes, every page in the page cache (asked once
// per part; a part sendfile began stays on it).
func (c *RingConn) sendfileOK(p *outPart) bool {
	if p.cached != 0 {
		return p.cached > 0
	}
	least := c.us.e.o.SendfileMin
	if least <= 0 || p.n < int64(least) || c.us.noCachestat {
		return false
	}
	p.cached = -1
	switch cached, err := pageCached(p.fd, p.off, p.n); {
	case err != nil:
		c.us.noCachestat = true // ENOSYS before Linux 6.5, or forbidden
		c.us.e.o.Logger.Info("cachestat(2) unavailable, fetches read or splice every file part", "err", err)
	case cached:
		p.cached = 1
	}
	return p.cached > 0
}

// pageCached reports whether every page of fd's bytes [off, off+n) is in
// the page cache (cachestat(2)).
func pageCached(fd int, off, n int64) (bool, error) {
	const page = 4096 // cachestat counts pages of the page cache's size; 4 KiB on the machines we run on, and a larger page only makes the count smaller (false: read instead)
	first, last := off/page, (off+n-1)/page
	r := unix.CachestatRange{Off: uint64(first * page), Len: uint64((last - first + 1) * page)}
	var cs unix.Cachestat_t
	if err := unix.Cachestat(uint(fd), &r, &cs, 0); err != nil {
		return false, err
	}
	return cs.Cache >= uint64(last-first+1), nil
}

// sendfileHead sends the file part at the head of the queue with
// sendfile(2), the socket made non-blocking for the call (the ring's own
// sends need it blocking: a non-blocking socket makes IORING_OP_WRITEV
// answer EAGAIN instead of waiting; no ring op touches the socket while
// the loop is in this call). It reports whether the part went whole; if
// the socket filled, a POLLOUT poll continues it.
func (c *RingConn) sendfileHead() bool {
	p := &c.q[c.qh]
	if c.sockFlags < 0 {
		fl, err := unix.FcntlInt(uintptr(c.fd), unix.F_GETFL, 0)
		if err != nil {
			c.Abort(fmt.Errorf("cannot read socket flags: %w", err))
			return false
		}
		c.sockFlags = fl
	}
	if _, err := unix.FcntlInt(uintptr(c.fd), unix.F_SETFL, c.sockFlags|unix.O_NONBLOCK); err != nil {
		c.Abort(fmt.Errorf("cannot make the socket non-blocking: %w", err))
		return false
	}
	var err error
	for p.n > 0 {
		var n int
		n, err = unix.Sendfile(c.fd, p.fd, &p.off, int(min(p.n, 1<<30)))
		if n > 0 {
			p.n -= int64(n)
			c.Stats.SentBytes += uint64(n)
			c.Stats.Sendfiles++
			continue
		}
		if err == unix.EINTR {
			continue
		}
		if err == nil {
			err = fmt.Errorf("segment %s ended %d bytes early", p.f.Name(), p.n)
		}
		break
	}
	if _, ferr := unix.FcntlInt(uintptr(c.fd), unix.F_SETFL, c.sockFlags); ferr != nil && err == nil {
		err = fmt.Errorf("cannot make the socket blocking again: %w", ferr)
	}
	switch {
	case p.n == 0 && err == nil:
		c.release(p)
		return true
	case err == unix.EAGAIN:
		if _, perr := c.us.ring.PollAdd(c.fd, unix.POLLOUT, c.pollOutH); perr != nil {
			c.Abort(perr)
			return false
		}
		c.sending = true
		c.ops++
		return false
	default:
		c.Abort(err)
		return false
	}
}

// onPollOut resumes a sendfile once the socket has room.
func (c *RingConn) onPollOut(cqe CQE) {
	c.sending = false
	c.ops--
	if cqe.Res < 0 && !c.closing {
		c.Abort(cqe.Err())
	}
	if !c.closing {
		c.kick()
	}
	c.finishClose()
}
