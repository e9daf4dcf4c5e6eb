package ioring

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The send side of a RingConn: the queue of outgoing parts (copied bytes,
// referenced bytes, file ranges), the submission of one send, writev or
// send-zc at a time in request order, the bookkeeping when its completion
// arrives, and closing the connection once nothing uses the socket.
// Everything here runs on the owning shard's loop.

// Write queues a copy of b.
func (c *RingConn) Write(b []byte) {
	if c.closing || len(b) == 0 {
		return
	}
	w := &c.wbuf[c.wcur]
	lo := len(*w)
	*w = append(*w, b...)
	if n := len(c.q); n > c.qh && (!c.sending || n-1 >= c.flightEnd) {
		if p := &c.q[n-1]; p.buf == int8(c.wcur) && p.hi == lo {
			p.hi = len(*w)
			return
		}
	}
	c.wrefs[c.wcur]++
	c.q = append(c.q, outPart{buf: int8(c.wcur), lo: lo, hi: len(*w)})
}

// WriteRef queues b without copying; b must not change until sent.
func (c *RingConn) WriteRef(b []byte) {
	if c.closing || len(b) == 0 {
		return
	}
	c.q = append(c.q, outPart{buf: -1, ref: b})
}

// Releaser is told when the kernel is done with the bytes of a part.
type Releaser interface{ Release() }

// WriteRefRelease queues b without copying, like WriteRef, and calls
// rel.Release on the loop once the kernel is done with b: when its last
// byte is sent (for send-zc, at the notification), or when the connection
// closes with b unsent and no send in flight. A part not queued (closing,
// empty) is released at once.
func (c *RingConn) WriteRefRelease(b []byte, rel Releaser) {
	if c.closing || len(b) == 0 {
		if rel != nil {
			rel.Release()
		}
		return
	}
	c.q = append(c.q, outPart{buf: -1, ref: b, rel: rel})
}

// WriteFile queues n bytes of f from offset off, sent by sendfile, read
// or splice. The part holds its own duplicate of f's descriptor, taken
// while f's owner cannot close it (os.File's RawConn.Control), so f may be
// closed (a segment deleted by retention) before the part is sent; a
// plain descriptor number could by then name another file. f closed
// already aborts the connection.
func (c *RingConn) WriteFile(f *os.File, off int64, n int64) {
	if c.closing || n <= 0 {
		return
	}
	fd, err := c.us.dupFile(f)
	if err != nil {
		c.Abort(fmt.Errorf("cannot hold segment %s: %w", f.Name(), err))
		return
	}
	c.q = append(c.q, outPart{buf: -2, f: f, fd: fd, off: off, n: n})
}

// dupFile duplicates f's descriptor under f's reference count. The RawConns
// are cached (SyscallConn allocates), dropped once their file is closed and
// all at once past maxRawConns.
func (us *uringShard) dupFile(f *os.File) (int, error) {
	rc, ok := us.rawConns[f]
	if !ok {
		var err error
		if rc, err = f.SyscallConn(); err != nil {
			return -1, err
		}
		if us.rawConns == nil || len(us.rawConns) >= maxRawConns {
			us.rawConns = make(map[*os.File]syscall.RawConn)
		}
		us.rawConns[f] = rc
	}
	us.dupFd, us.dupErr = -1, nil
	if err := rc.Control(us.dupFn); err != nil {
		delete(us.rawConns, f) // closed
		return -1, err
	}
	return us.dupFd, us.dupErr
}

// maxRawConns bounds uringShard.rawConns (one per segment file sent from).
const maxRawConns = 4096

func (us *uringShard) onDup(fd uintptr) {
	us.dupFd, us.dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
}

// dropFile closes a file part's descriptor.
func dropFile(p *outPart) {
	if p.buf == -2 || p.buf == -4 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// Flush starts sending what is queued (a no-op while a send is in flight:
// its completion continues).
func (c *RingConn) Flush() { c.kick() }

// Pending is the number of queued parts not yet sent.
func (c *RingConn) Pending() int { return len(c.q) - c.qh }

// NotifyDrained arms fn to be called once, on the loop, when every queued
// byte has been handed to the kernel (Pending is 0), and reports true; it
// arms nothing and reports false when the queue is empty already. fn is
// not called if the connection closes first, and a later call replaces an
// armed fn. fn runs inside the send path: it should only Post work.
func (c *RingConn) NotifyDrained(fn func()) bool {
	if c.qh == len(c.q) || c.closing {
		return false
	}
	c.drainFn = fn
	return true
}

// Close closes the connection once the queued responses are sent.
func (c *RingConn) Close() {
	if c.closing {
		return
	}
	c.closeAfter = true
	c.pause()
	c.kick()
}

// Abort closes the connection now; OnClose gets err.
func (c *RingConn) Abort(err error) {
	if c.closing {
		return
	}
	c.closing, c.closeErr = true, err
	if c.recvArmed {
		_, _ = c.us.ring.Cancel(c.recvUD, 0, nil)
	}
	// Unblock sends and splices in flight; their completions then fail.
	_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	c.finishClose()
}

// finishClose closes the socket once no op uses it, then reports.
func (c *RingConn) finishClose() {
	if !c.closing || c.done || c.ops > 0 {
		return
	}
	c.done = true
	unix.Close(c.fd)
	if c.pipe[0] >= 0 {
		unix.Close(c.pipe[0])
		unix.Close(c.pipe[1])
	}
	delete(c.us.conns, c)
	c.drainFn, c.drainDue = nil, false
	c.us.giveArena(c.arena) // no op is in flight: no read fills it, no send reads it
	for i := c.qh; i < len(c.q); i++ {
		dropFile(&c.q[i])
		if r := c.q[i].rel; r != nil {
			r.Release()
		}
	}
	c.q, c.acc, c.wbuf, c.big, c.arena = nil, nil, [2][]byte{}, nil, nil
	c.cb.OnClose(c.closeErr)
}

func (c *RingConn) kick() {
	for !c.kickOnce() {
	}
	if c.drainDue {
		fn := c.drainFn
		c.drainFn, c.drainDue = nil, false
		fn()
	}
}

// kickOnce starts the next send, or sends the file part at the head with
// sendfile(2) and reports false to be called again.
func (c *RingConn) kickOnce() bool {
	if c.sending || c.closing {
		return true
	}
	if c.qh == len(c.q) {
		c.q, c.qh = c.q[:0], 0
		c.drainDue = c.drainFn != nil && !c.closeAfter
		for i := range c.wbuf {
			if c.wrefs[i] == 0 {
				c.wbuf[i] = c.wbuf[i][:0]
			}
		}
		if c.closeAfter {
			c.Abort(nil)
		}
		return true
	}
	// New writes go to the other buffer when it is free, so this one can be
	// reset once sent.
	if c.wrefs[c.wcur^1] == 0 {
		c.wbuf[c.wcur^1] = c.wbuf[c.wcur^1][:0]
		c.wcur ^= 1
	}
	if c.loadFileParts() {
		return true // the reads' completion kicks again
	}
	p := &c.q[c.qh]
	if p.buf == -2 {
		if c.sendfileOK(p) {
			return !c.sendfileHead()
		}
		c.spliceIn()
		return true
	}
	c.zcSent = false
	limit := c.us.e.o.SendMax
	if p.buf == -1 && !c.noZC && c.us.e.o.SendZCMin > 0 && len(p.ref) >= c.us.e.o.SendZCMin {
		c.zcRes, c.zcSent = 0, true
		if _, err := c.us.ring.SendZC(c.fd, p.ref[:min(len(p.ref), limit)], unix.MSG_NOSIGNAL, 0, c.sendH); err != nil {
			c.Abort(err)
			return true
		}
		c.sending, c.flightEnd = true, c.qh+1
		c.ops++
		c.Stats.Sends++
		return true
	}
	// Up to 64 byte parts, SendMax bytes in all (the last part cut).
	c.iov = c.iov[:0]
	total := 0
	for i := c.qh; i < len(c.q) && len(c.iov) < 64 && total < limit; i++ {
		b := c.partBytes(&c.q[i])
		if b == nil {
			break
		}
		b = b[:min(len(b), limit-total)]
		total += len(b)
		c.iov = append(c.iov, unix.Iovec{Base: &b[0]})
		c.iov[len(c.iov)-1].SetLen(len(b))
	}
	var err error
	if len(c.iov) == 1 {
		_, err = c.us.ring.Send(c.fd, c.partBytes(&c.q[c.qh])[:total], unix.MSG_NOSIGNAL, c.sendH)
	} else {
		_, err = c.us.ring.Writev(c.fd, c.iov, 0, c.sendH)
	}
	if err != nil {
		c.Abort(err)
		return true
	}
	c.sending, c.flightEnd = true, c.qh+len(c.iov)
	c.ops++
	c.Stats.Sends++
	return true
}

// partBytes is the unsent bytes of a byte part, nil for a file part.
func (c *RingConn) partBytes(p *outPart) []byte {
	switch p.buf {
	case -1, -3:
		return p.ref
	case -2, -4:
		return nil
	}
	return c.wbuf[p.buf][p.lo:p.hi]
}

func (c *RingConn) onSend(cqe CQE) {
	if cqe.More() { // send-zc result; the notification follows
		c.zcRes = cqe.Res
		return
	}
	res := cqe.Res
	if cqe.Notif() {
		res = c.zcRes
	}
	c.sending = false
	c.ops--
	if res == -int32(unix.EOPNOTSUPP) && c.zcSent && !c.closing {
		// Sockets accepted through the ring may lack zero-copy support
		// (SOCK_SUPPORT_ZC); nothing was sent: send plainly from now on.
		c.noZC = true
		c.kick()
		c.finishClose()
		return
	}
	if res < 0 {
		if !c.closing {
			c.Abort(syscall.Errno(-res))
		}
		c.finishClose()
		return
	}
	c.Stats.SentBytes += uint64(res)
	c.advance(int(res))
	c.kick()
	c.finishClose()
}

// advance drops n sent bytes from the head of the queue.
func (c *RingConn) advance(n int) {
	for n > 0 && c.qh < len(c.q) {
		p := &c.q[c.qh]
		b := c.partBytes(p)
		if n < len(b) {
			if p.buf == -1 || p.buf == -3 {
				p.ref = p.ref[n:]
			} else {
				p.lo += n
			}
			return
		}
		n -= len(b)
		c.release(p)
	}
}

func (c *RingConn) release(p *outPart) {
	if p.buf >= 0 {
		c.wrefs[p.buf]--
	}
	if p.buf == -3 {
		c.loadedLive--
		if c.loadedLive == 0 {
			c.us.giveArena(c.arena)
			c.arena = nil
		}
	}
	dropFile(p)
	if p.rel != nil {
		p.rel.Release()
	}
	*p = outPart{}
	c.qh++
}
