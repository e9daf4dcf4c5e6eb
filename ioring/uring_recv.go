package ioring

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The receive side of a RingConn: the recv armed on the ring (multishot from
// the shard's buffer ring, or a plain recv into a large frame's storage),
// the accumulation buffer, cutting Kafka frames (4-byte big-endian size
// prefix) and handing them to the callbacks, pausing and resuming reads,
// and the errors a connection cut part way through a frame closes with.
// Everything here runs on the owning shard's loop.

// BusyReporter is implemented by callbacks that can say a connection is
// working on a request (a long poll): it is then not closed as idle.
type BusyReporter interface {
	Busy() bool
}

func (c *RingConn) busy() bool {
	b, ok := c.cb.(BusyReporter)
	return ok && b.Busy()
}

// Shard is the index of the connection's shard.
func (c *RingConn) Shard() *Shard { return c.us.sh }

// Listener is the index of the listener that accepted the connection
// (UringOptions.Addrs; 0 for a single Addr).
func (c *RingConn) Listener() int { return c.listener }

// RemoteAddr is the peer's host:port.
func (c *RingConn) RemoteAddr() string { return c.remote }

// Fd is the socket (for tests and diagnostics; do not do I/O on it).
func (c *RingConn) Fd() int { return c.fd }

// Closed reports whether the connection is closing or closed.
func (c *RingConn) Closed() bool { return c.closing }

// armRecv arms the connection's next recv: while a large frame is being
// assembled, a plain recv straight into its storage, so its bytes are
// copied once, by the kernel (not MSG_WAITALL: each completion shows
// progress to the frame timeout); after a large frame (header mode), a
// plain recv of up to hdrRecvSize bytes into hdr, which holds the next
// frame's size, so that a large one is received into its storage from its
// first bytes on; else the multishot recv from the buffer ring.
//
// Header mode exists for the produce connection: the multishot recv takes
// everything the socket holds into the buffer ring before the first of its
// completions is seen, so a large frame that arrived whole was received
// into 32 KiB buffers and copied again into its storage (at 100 MB/s of
// produce that copy was 2.4% of the broker's CPU samples, with ~6
// completions per frame). A frame of at most bigFrameMin bytes ends header
// mode.
func (c *RingConn) armRecv() {
	if c.recvArmed || c.closing || c.paused {
		return
	}
	var ud uint64
	var err error
	switch {
	case c.big != nil:
		ud, err = c.us.ring.Recv(c.fd, c.big[c.bigFill:], 0, c.bigH)
	case c.hdrMode:
		if c.hdr == nil {
			c.hdr = make([]byte, hdrRecvSize)
		}
		ud, err = c.us.ring.Recv(c.fd, c.hdr, 0, c.hdrH)
	default:
		ud, err = c.us.ring.RecvMultishot(c.fd, c.us.br, 0, c.recvH)
	}
	if err != nil {
		c.Abort(fmt.Errorf("cannot arm recv: %w", err))
		return
	}
	c.recvUD, c.recvArmed, c.direct, c.cancelled = ud, true, c.big != nil || c.hdrMode, false
	c.ops++
}

// hdrRecvSize is the size of a header-mode recv: a frame's size and the
// start of its body, copied from hdr like the multishot recv's buffers.
const hdrRecvSize = 4096

// onHdrRecv completes a header-mode recv.
func (c *RingConn) onHdrRecv(cqe CQE) {
	c.recvArmed = false
	c.ops--
	switch {
	case cqe.Res > 0:
		c.Stats.HeaderRecvs++
		c.lastRecv = time.Now()
		c.Stats.RecvBytes += uint64(cqe.Res)
		c.feed(c.hdr[:cqe.Res])
		c.armRecv()
	case cqe.Res == 0:
		c.Abort(c.eofErr())
	case cqe.Res == -int32(unix.ECANCELED):
		c.armRecv() // closing or paused: a no-op
	default:
		c.Abort(c.recvErr(cqe.Err()))
	}
	c.finishClose()
}

// onBigRecv completes a recv into a large frame's storage.
func (c *RingConn) onBigRecv(cqe CQE) {
	c.recvArmed = false
	c.ops--
	switch {
	case cqe.Res > 0 && c.big != nil:
		c.Stats.DirectRecvs++
		c.lastRecv = time.Now()
		c.Stats.RecvBytes += uint64(cqe.Res)
		c.bigFill += int(cqe.Res)
		if c.bigFill == len(c.big) {
			c.deliverBig()
		}
		c.armRecv()
	case cqe.Res == 0:
		c.Abort(c.eofErr())
	case cqe.Res == -int32(unix.ECANCELED), cqe.Res > 0:
		c.armRecv() // closing or paused: a no-op
	default:
		c.Abort(c.recvErr(cqe.Err()))
	}
	c.finishClose()
}

// goDirect ends the multishot recv so that the rest of the large frame
// being assembled is received straight into its storage, or, after a large
// frame, the next frame through hdr: its last completion arms that recv
// (armRecv). It is called only once the socket is drained (no
// IORING_CQE_F_SOCK_NONEMPTY): the multishot recv takes what the socket
// holds into the buffer ring before the first of its completions is seen,
// so a frame that arrived whole is in the buffers already, and cancelling
// then (as before) cost a cancel, an ECANCELED completion and a new
// multishot recv per frame for nothing.
func (c *RingConn) goDirect() {
	if c.recvArmed && !c.direct && !c.cancelled && !c.closing {
		c.cancelled = true
		c.Stats.DirectSwitches++
		_, _ = c.us.ring.Cancel(c.recvUD, 0, nil)
	}
}

// deliverBig hands the completed large frame to the sink.
func (c *RingConn) deliverBig() {
	frame := c.big
	c.big, c.bigFill = nil, 0
	c.hdrMode = true
	c.Stats.Frames++
	switch c.sink.OnOwnedFrame(frame) {
	case FramePause:
		c.pause()
	case FrameClose:
		c.Close()
	}
}

func (c *RingConn) onRecv(cqe CQE) {
	if !cqe.More() {
		c.recvArmed = false
		c.ops--
	}
	switch {
	case cqe.Res > 0:
		id, _ := cqe.BufferID()
		data := c.us.br.Buf(id, int(cqe.Res))
		c.lastRecv = time.Now()
		c.Stats.RecvBytes += uint64(cqe.Res)
		c.feed(data)
		c.us.br.Recycle(id)
		if !cqe.More() {
			c.armRecv()
		} else if (c.big != nil || c.hdrMode) && cqe.Flags&CQEFSockNonempty == 0 {
			c.goDirect()
		}
	case cqe.Res == 0:
		c.Abort(c.eofErr())
	case cqe.Res == -int32(unix.ENOBUFS):
		c.armRecv() // the buffers were recycled meanwhile
	case cqe.Res == -int32(unix.ECANCELED):
		c.armRecv() // a pause ended before the cancel landed, or closing (no-op)
	default:
		c.Abort(c.recvErr(cqe.Err()))
	}
	c.finishClose()
}

// feed cuts frames from data (one received chunk): in place while nothing
// is buffered, through acc otherwise.
func (c *RingConn) feed(data []byte) {
	if c.closing || c.frameErr {
		return
	}
	if c.big != nil {
		n := copy(c.big[c.bigFill:], data)
		c.bigFill += n
		data = data[n:]
		if c.bigFill < len(c.big) {
			return
		}
		c.deliverBig()
		if len(data) == 0 || c.closing || c.closeAfter {
			return
		}
	}
	if len(c.acc) == 0 && !c.paused {
		rest := c.cut(data)
		if len(rest) > 0 {
			c.acc = append(c.acc, rest...)
		}
		return
	}
	c.acc = append(c.acc, data...)
	if !c.paused {
		c.compact(c.cut(c.acc))
	}
}

// SetMaxFrame caps the frame size the connection may announce at n bytes,
// below UringOptions.MaxFrame (0 removes the cap); a larger frame aborts the
// connection with ErrFrameSize. Safe from any goroutine; frames cut after
// it see it.
func (c *RingConn) SetMaxFrame(n int32) { c.maxFrame.Store(n) }

func (c *RingConn) compact(rest []byte) {
	if len(rest) == len(c.acc) {
		return // nothing was cut (rest is acc): copying it onto itself per chunk made a trickled frame quadratic
	}
	n := copy(c.acc, rest)
	c.acc = c.acc[:n]
	if n == 0 && cap(c.acc) > 4<<20 {
		c.acc = nil // a huge frame passed; do not keep its buffer
	}
}

// cut delivers every whole frame at the start of b and returns the rest.
func (c *RingConn) cut(b []byte) []byte {
	o := &c.us.e.o
	for len(b) >= 4 && !c.paused && !c.closing && !c.closeAfter {
		size := int32(binary.BigEndian.Uint32(b))
		maxFrame := o.MaxFrame
		if m := c.maxFrame.Load(); m > 0 && m < maxFrame {
			maxFrame = m
		}
		if size < o.MinFrame || size > maxFrame {
			err := fmt.Errorf("%w: %d outside [%d, %d]", ErrFrameSize, size, o.MinFrame, maxFrame)
			if fs, ok := c.cb.(FrameErrorSink); ok {
				c.frameErr = true
				c.pause()
				fs.OnFrameError(err)
				return nil
			}
			c.Abort(err)
			return nil
		}
		if len(b)-4 < int(size) {
			if c.sink != nil && int(size) > bigFrameMin && !c.closeAfter {
				// Assemble it in the handler's storage (FrameSink).
				c.big = c.sink.FrameBuffer(int(size))
				c.bigFill = copy(c.big, b[4:])
				// The rest goes straight into it once the socket is
				// drained (onRecv, goDirect).
				return nil
			}
			break
		}
		frame := b[4 : 4+size]
		b = b[4+size:]
		c.hdrMode = c.sink != nil && int(size) > bigFrameMin // a large frame that fit in one receive buffer counts too
		c.Stats.Frames++
		switch c.cb.OnFrame(frame) {
		case FramePause:
			c.pause()
		case FrameClose:
			c.Close()
		}
	}
	return b
}

// bigFrameMin is the frame size above which a FrameSink assembles frames
// in its own storage: frames that span receive buffers anyway.
const bigFrameMin = 16 << 10

func (c *RingConn) pause() {
	if c.paused {
		return
	}
	c.paused = true
	if c.recvArmed {
		_, _ = c.us.ring.Cancel(c.recvUD, 0, nil)
	}
}

// Resume delivers the frames held while paused and reads again.
func (c *RingConn) Resume() {
	if !c.paused || c.closing || c.frameErr {
		return
	}
	c.paused = false
	c.compact(c.cut(c.acc))
	if !c.paused {
		c.armRecv()
	}
}

// Paused reports whether reading is paused.
func (c *RingConn) Paused() bool { return c.paused }

// eofErr is what the peer's EOF closes the connection with: nil between
// frames, ErrFrameEOF when part of a frame (a size prefix, or a frame not
// yet whole) was received. Whole frames a paused connection has not cut
// yet are not a truncation.
func (c *RingConn) eofErr() error {
	if c.partial() {
		return ErrFrameEOF
	}
	return nil
}

// recvErr is what a failed receive closes the connection with: err, wrapped
// in ErrFrameCut when part of a frame was received.
func (c *RingConn) recvErr(err error) error {
	if c.partial() {
		return fmt.Errorf("%w: %w", ErrFrameCut, err)
	}
	return err
}

// partial reports whether part of a frame (a size prefix, or a frame not
// yet whole) has been received.
func (c *RingConn) partial() bool {
	if c.big != nil {
		return true
	}
	b := c.acc
	for len(b) >= 4 {
		size := int(int32(binary.BigEndian.Uint32(b)))
		if size < 0 || len(b)-4 < size {
			return true
		}
		b = b[4+size:]
	}
	return len(b) > 0
}
