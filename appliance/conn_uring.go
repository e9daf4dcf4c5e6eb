package appliance

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/nvme"
)

// uringConn is the uring engine's side of a conn: the frame source and the
// response sink of the shared request pipeline (conn). Frames arrive on
// the loop of the shard that accepted the connection (OnFrame) and go
// through conn.dispatch as on the netpoll path; slots queue here in request
// order instead of in a channel; answers are written by pump, on the loop,
// as soon as the slot at the head is done: at once for handlers that
// answer synchronously, after a Post from the goroutine of a deferred one.
//
// Handlers' synchronous parts are meant not to block, but some do (they
// wait for other shards, or take the controller lock), so only the hot,
// known non-blocking requests (Fetch, ApiVersions, Metadata and
// non-transactional Produce) are dispatched on the loop; the others, and
// everything behind them while they are queued, go to the connection's
// dispatcher goroutine (started on first use), which keeps their order.
// Fields are owned by the loop, except: pending/ph under mu (the
// dispatcher enqueues), the atomics, and work (the dispatcher's queue).
type uringConn struct {
	c   *conn
	rc  *ioring.RingConn
	sh  *ioring.Shard
	enc []byte

	mu      sync.Mutex
	pending []*slot
	ph      int

	closing    atomic.Bool
	stopRead   atomic.Bool  // a frame asked to close: read no more
	queued     atomic.Int32 // frames handed to the dispatcher, not yet dispatched
	work       chan *reqState
	pumpQueued atomic.Bool
	pumpFn     func()
	closeFn    func()
	big        *reqState // the request a large frame is being received into (FrameBuffer)
	// held is a Fetch or ShareFetch frame read while the connection was
	// not idle; it runs once it is (recordFetch, uringConn.idle). heldFn posts
	// runHeldFn, the drain callback of the ring.
	held      *reqState
	heldFn    func()
	runHeldFn func()
	badFrame  error // the error of OnFrameError, for the dispatcher
}

// OpenRingConn implements ioring.RingConnHandler (on the accepting loop).
func (b *Broker) OpenRingConn(rc *ioring.RingConn) ioring.RingConnCallbacks {
	c := &conn{b: b, shard: rc.Shard().ID(), remote: rc.RemoteAddr(), closed: make(chan struct{})}
	c.setListener(&b.cfg.Listeners[rc.Listener()])
	if c.authPending {
		rc.SetMaxFrame(b.cfg.SaslServerMaxReceiveSize)
	}
	u := &uringConn{c: c, rc: rc, sh: rc.Shard()}
	u.pumpFn = func() { u.pumpQueued.Store(false); u.pump() }
	u.closeFn = func() { u.rc.Close() }
	u.runHeldFn = u.runHeld
	u.heldFn = func() { u.sh.Post(u.runHeldFn) }
	c.ring = u
	b.front.mu.Lock()
	select {
	case <-b.life.closing:
		b.front.mu.Unlock()
		return nil
	default:
	}
	if reason := b.admitLocked(remoteIP(c.remote)); reason != "" {
		b.front.mu.Unlock()
		b.warnConn("rejected connection", "remote", c.remote, "reason", reason)
		return nil // the engine closes it
	}
	b.front.conns[c] = struct{}{}
	b.front.wg.Add(1)
	b.front.mu.Unlock()
	return u
}

// OnFrame copies the frame into a request's storage (decoding aliases its
// input, and handlers keep slices of it) and runs it through the pipeline.
func (u *uringConn) OnFrame(frame []byte) ioring.FrameAction {
	rs := getReqState(len(frame))
	copy(rs.frame, frame)
	return u.onRequest(rs)
}

// FrameBuffer implements ioring.FrameSink: a large frame is received
// straight into its request's storage.
func (u *uringConn) FrameBuffer(size int) []byte {
	u.big = getReqState(size)
	return u.big.frame
}

// OnOwnedFrame implements ioring.FrameSink: the frame FrameBuffer asked
// for is complete.
func (u *uringConn) OnOwnedFrame([]byte) ioring.FrameAction {
	rs := u.big
	u.big = nil
	return u.onRequest(rs)
}

// onRequest runs a received request through the pipeline.
func (u *uringConn) onRequest(rs *reqState) ioring.FrameAction {
	if recordFetch(rs.frame) && !u.idle() {
		// One Fetch or ShareFetch at a time per connection; reading
		// pauses behind it. The pump of the last answer runs it, or,
		// when every answer is pumped already but not yet sent, the send
		// queue's draining does.
		u.held = rs
		u.rc.NotifyDrained(u.heldFn)
		return ioring.FramePause
	}
	if u.queued.Load() == 0 && onLoopAPI(rs.frame) {
		if !u.c.dispatch(rs) {
			u.stopRead.Store(true) // a closing slot is queued
		}
		u.pump()
	} else {
		if u.work == nil {
			u.work = make(chan *reqState, maxInFlight+1)
			go u.dispatcher()
		}
		u.queued.Add(1)
		u.work <- rs // never blocks: reading pauses at maxInFlight
	}
	if u.stopRead.Load() || u.inFlight() >= maxInFlight {
		return ioring.FramePause
	}
	return ioring.FrameContinue
}

// idle reports whether every request read has been answered and every
// answer handed to the kernel (loop only).
func (u *uringConn) idle() bool { return u.inFlight() == 0 && u.rc.Pending() == 0 }

// runHeld runs the held fetch once the connection is idle: when the last
// answer has been pumped (pump calls it) and its bytes have left the
// ring's send queue (the drain callback posts it). Loop only.
func (u *uringConn) runHeld() {
	if u.held == nil || u.closing.Load() || u.inFlight() > 0 {
		return
	}
	if u.rc.NotifyDrained(u.heldFn) {
		return
	}
	rs := u.held
	u.held = nil
	if u.onRequest(rs) == ioring.FrameContinue {
		u.resume()
	}
}

// OnFrameError implements ioring.FrameErrorSink: a frame size no request
// can have closes the connection after the answers before it
// (conn.closeAfterAnswers; the ring reads no more). While frames wait in
// the dispatcher the closing goes through it, as a nil entry, to stay
// behind them.
func (u *uringConn) OnFrameError(err error) {
	if u.queued.Load() > 0 {
		u.badFrame = err // the channel send publishes it
		u.queued.Add(1)
		u.work <- nil
		return
	}
	u.closeAfterAnswers(err)
}

// closeAfterAnswers queues the closing slot of OnFrameError (loop only).
func (u *uringConn) closeAfterAnswers(err error) {
	if u.enqueue(u.c.closingSlot(err)) {
		u.pump()
	}
}

// dispatcher runs the frames that may block, in order.
func (u *uringConn) dispatcher() {
	for rs := range u.work {
		if rs == nil {
			err := u.badFrame
			u.sh.Post(func() { u.closeAfterAnswers(err) })
			u.queued.Add(-1)
			continue
		}
		if !u.stopRead.Load() && !u.c.dispatch(rs) {
			u.stopRead.Store(true) // the closing slot is queued; drop the rest
		}
		u.queued.Add(-1)
		u.notify()
	}
}

// onLoopAPI reports whether a frame's handler is known not to block in its
// synchronous part, so it may run on the loop: Fetch, ApiVersions,
// Metadata, and Produce without a transactional id (header v1/v2 and the
// first body field, transactional_id, are read here; anything malformed
// goes to the dispatcher, whose parse reports it).
func onLoopAPI(f []byte) bool {
	if len(f) < 10 {
		return false
	}
	key, version := int16(binary.BigEndian.Uint16(f)), int16(binary.BigEndian.Uint16(f[2:]))
	switch key {
	case 1, 3, 18:
		return true
	case 0:
	default:
		return false
	}
	rest := f[8:]
	cid := int(int16(binary.BigEndian.Uint16(rest)))
	rest = rest[2:]
	if cid > 0 {
		if cid > len(rest) {
			return false
		}
		rest = rest[cid:]
	}
	if version >= 9 { // flexible: header tags, then a compact nullable string
		if len(rest) < 2 || rest[0] != 0 {
			return false
		}
		return rest[1] == 0 // null transactional id
	}
	return len(rest) >= 2 && int16(binary.BigEndian.Uint16(rest)) == -1
}

// OnClose runs once the socket is closed.
func (u *uringConn) OnClose(err error) {
	u.closing.Store(true)
	if u.work != nil {
		close(u.work)
	}
	if err != nil && (errors.Is(err, ioring.ErrFrameCut) || !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE)) {
		u.c.b.warnConn("closing connection", "remote", u.c.remote, "shard", u.c.shard, "reason", err.Error())
	}
	u.c.closeOnce.Do(u.c.markClosed)
	u.dropPending()
	u.held = nil // never dispatched: nothing refers to it
	b := u.c.b
	b.front.mu.Lock()
	delete(b.front.conns, u.c)
	b.releaseLocked(remoteIP(u.c.remote))
	b.front.mu.Unlock()
	b.front.wg.Done()
}

// dropPending abandons the answers that will not be sent (slot.abandon).
func (u *uringConn) dropPending() {
	u.mu.Lock()
	pending := u.pending[u.ph:]
	u.pending, u.ph = nil, 0
	u.mu.Unlock()
	for i, s := range pending {
		s.abandon()
		pending[i] = nil
	}
}

// Busy implements ioring.BusyReporter: a request is being worked on (a
// long poll, a produce waiting for acks=all), so the connection is not
// idle whatever its socket does. Answers sent and not read are not work:
// a client that stops reading is closed as idle.
func (u *uringConn) Busy() bool { return u.inFlight() > 0 }

func (u *uringConn) inFlight() int {
	u.mu.Lock()
	n := len(u.pending) - u.ph
	u.mu.Unlock()
	return n + int(u.queued.Load())
}

// enqueue gives s its place in the response order (the loop or the dispatcher).
func (u *uringConn) enqueue(s *slot) bool {
	if u.closing.Load() {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closing.Load() { // OnClose may have dropped the queue since
		return false
	}
	u.pending = append(u.pending, s)
	return true
}

// next pops the slot at the head if it is done.
func (u *uringConn) next() *slot {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ph == len(u.pending) {
		return nil
	}
	s := u.pending[u.ph]
	if !s.ready.Load() {
		return nil
	}
	u.pending[u.ph] = nil
	u.ph++
	if u.ph == len(u.pending) {
		u.pending, u.ph = u.pending[:0], 0
	}
	return s
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
	for !u.closing.Load() {
		s := u.next()
		if s == nil {
			break
		}
		c.b.metrics.RequestDone(s.key, s.start, s.resp)
		if s.closeNow {
			u.closeAfterFlush()
			break
		}
		if cc, ok := s.resp.(wire.Close); ok {
			c.b.warnConn("closing connection", "remote", c.remote, "api_key", s.key, "reason", cc.Reason)
			u.closeAfterFlush()
			break
		}
		hdr, parts, ok, err := appendResponse(u.enc[:0], s)
		u.enc = hdr
		if err != nil {
			c.b.warnConn("cannot write response, closing connection", "remote", c.remote, "err", err)
			u.closeAfterFlush()
			break
		}
		if !ok {
			releaseSlot(s)
			continue // acks=0
		}
		u.rc.Write(hdr)
		for _, p := range parts {
			switch {
			case p.chunk.File != nil:
				u.rc.WriteFile(p.chunk.File, p.chunk.Pos, int64(p.chunk.Len))
			case p.chunk.Mem != nil:
				u.writeChunk(p.chunk)
			default:
				if u.write(p.b) && s.rs != nil {
					s.rs.fetch.enc.detachBuf() // the ring sends it in place
				}
			}
		}
		closeAfter, why, key := s.closeAfter, s.closeWhy, s.key
		releaseSlot(s) // small parts were copied; file chunks and large ones are not ours
		if closeAfter {
			c.b.warnConn("closing connection", "remote", c.remote, "api_key", key, "reason", why)
			u.closeAfterFlush() // after the answer just queued
			break
		}
	}
	u.rc.Flush()
	if u.held != nil {
		u.runHeld()
	}
	u.resume()
}

// resume reads again when reading paused for backpressure and the
// connection has room (loop only).
func (u *uringConn) resume() {
	if u.rc.Paused() && u.held == nil && !u.closing.Load() && !u.stopRead.Load() && u.inFlight() < maxInFlight/2 {
		u.rc.Resume()
	}
}

// writeChunk queues a block-cache chunk: a large one is sent in place and
// its buffer released once sent, a small one is copied and released now
// (Release is nil-safe).
func (u *uringConn) writeChunk(ch nvme.Chunk) {
	if len(ch.Mem) > memChunkDirect {
		u.rc.WriteRefRelease(ch.Mem, ch.Ref)
		return
	}
	u.rc.Write(ch.Mem)
	ch.Ref.Release()
}

// write queues b: copied when small (it then rides with the header in one
// send), referenced when large (it reports true then).
func (u *uringConn) write(b []byte) bool {
	if len(b) > memChunkDirect {
		u.rc.WriteRef(b)
		return true
	}
	u.rc.Write(b)
	return false
}

func (u *uringConn) closeAfterFlush() {
	u.closing.Store(true)
	u.c.closeOnce.Do(u.c.markClosed)
	u.rc.Close()
}
