package appliance

import (
	"errors"
	"io"
	"sync/atomic"
	"syscall"

	"github.com/ringbroker/ringbroker/ioring"
)

// uringConn is the uring engine's side of a conn: the frame source and the
// response sink of the shared request pipeline (conn.go). Frames arrive on
// the loop of the shard that accepted the connection (OnFrame) and go
// through conn.dispatch as on the netpoll path; slots queue here in request
// order instead of in a channel; answers are written by pump, on the loop,
// as soon as the slot at the head is done: at once for handlers that
// answer synchronously, after a Post from the goroutine of a deferred one.
// Fields are owned by the loop, except pumpQueued.
type uringConn struct {
	c       *conn
	rc      *ioring.RingConn
	sh      *ioring.Shard
	pending []*slot
	ph      int
	enc     []byte
	closing bool

	pumpQueued atomic.Bool
	pumpFn     func()
	closeFn    func()
}

// OpenRingConn implements ioring.RingConnHandler (on the accepting loop).
func (b *Broker) OpenRingConn(rc *ioring.RingConn) ioring.RingConnCallbacks {
	c := &conn{b: b, shard: rc.Shard().ID(), remote: rc.RemoteAddr(), closed: make(chan struct{})}
	u := &uringConn{c: c, rc: rc, sh: rc.Shard()}
	u.pumpFn = func() { u.pumpQueued.Store(false); u.pump() }
	u.closeFn = func() { u.rc.Close() }
	c.ring = u
	b.connsMu.Lock()
	select {
	case <-b.closing:
		b.connsMu.Unlock()
		return nil
	default:
	}
	b.conns[c] = struct{}{}
	b.connWG.Add(1)
	b.connsMu.Unlock()
	return u
}

// OnFrame copies the frame (kmsg decoding aliases its input, and handlers
// keep slices of it) and runs it through the pipeline.
func (u *uringConn) OnFrame(frame []byte) ioring.FrameAction {
	buf := make([]byte, len(frame))
	copy(buf, frame)
	ok := u.c.dispatch(buf)
	u.pump()
	if !ok || u.inFlight() >= maxInFlight {
		return ioring.FramePause // a closing slot is queued, or backpressure
	}
	return ioring.FrameContinue
}

// OnClose runs once the socket is closed.
func (u *uringConn) OnClose(err error) {
	u.closing = true
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		u.c.b.log.Warn("closing connection", "remote", u.c.remote, "shard", u.c.shard, "reason", err.Error())
	}
	u.c.closeOnce.Do(func() { close(u.c.closed) })
	b := u.c.b
	b.connsMu.Lock()
	delete(b.conns, u.c)
	b.connsMu.Unlock()
	b.connWG.Done()
}

func (u *uringConn) inFlight() int { return len(u.pending) - u.ph }

// enqueue gives s its place in the response order (loop only).
func (u *uringConn) enqueue(s *slot) bool {
	if u.closing {
		return false
	}
	u.pending = append(u.pending, s)
	return true
}

// notify asks the loop to pump; any goroutine.
func (u *uringConn) notify() {
	if u.pumpQueued.CompareAndSwap(false, true) {
		u.sh.Post(u.pumpFn)
	}
}

// closeTransport closes after the queued answers are sent; any goroutine.
func (u *uringConn) closeTransport() { u.sh.Post(u.closeFn) }

// pump writes the answers of the done slots at the head of the order and
// flushes them through the ring (loop only).
func (u *uringConn) pump() {
	c := u.c
	for u.ph < len(u.pending) && !u.closing {
		s := u.pending[u.ph]
		select {
		case <-s.done:
		default:
			goto flush
		}
		u.pending[u.ph] = nil
		u.ph++
		c.b.metrics.requestDone(s.key, s.start, s.resp)
		if s.closeNow {
			u.closeAfterFlush()
			break
		}
		if cc, ok := s.resp.(closeConn); ok {
			c.b.log.Warn("closing connection", "remote", c.remote, "api_key", s.key, "reason", cc.reason)
			u.closeAfterFlush()
			break
		}
		hdr, parts, ok, err := appendResponse(u.enc[:0], s)
		u.enc = hdr
		if err != nil {
			c.b.log.Warn("cannot write response, closing connection", "remote", c.remote, "err", err)
			u.closeAfterFlush()
			break
		}
		if !ok {
			continue // acks=0
		}
		u.rc.Write(hdr)
		for _, p := range parts {
			switch {
			case p.chunk.File != nil:
				u.rc.WriteFile(p.chunk.File, p.chunk.Pos, int64(p.chunk.Len))
			case p.chunk.Mem != nil:
				u.write(p.chunk.Mem)
			default:
				u.write(p.b)
			}
		}
	}
flush:
	if u.ph == len(u.pending) {
		clear(u.pending)
		u.pending, u.ph = u.pending[:0], 0
	}
	u.rc.Flush()
	if u.rc.Paused() && !u.closing && u.inFlight() < maxInFlight/2 {
		u.rc.Resume()
	}
}

// write queues b: copied when small (it then rides with the header in one
// send), referenced when large.
func (u *uringConn) write(b []byte) {
	if len(b) > memChunkDirect {
		u.rc.WriteRef(b)
	} else {
		u.rc.Write(b)
	}
}

func (u *uringConn) closeAfterFlush() {
	u.closing = true
	u.c.closeOnce.Do(func() { close(u.c.closed) })
	u.rc.Close()
}
