package ioring

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The uring engine: per ring shard, one SO_REUSEPORT listener with a
// multishot accept, a multishot recv per connection from the shard's
// provided buffer ring, Kafka frames (4-byte big-endian size prefix) cut on
// the loop, and responses sent through the ring in order: byte parts with
// send/writev (send-zc for large referenced parts when UringOptions.SendZCMin
// asks for it), file parts with splice (file -> pipe -> socket), both run
// by the kernel so the loop never blocks. Everything below runs on the
// owning shard's loop.

// Errors reported to RingConnCallbacks.OnClose.
var (
	// ErrIdle closes a connection silent for longer than UringOptions.IdleTimeout.
	ErrIdle = errors.New("ioring: connection idle")
	// ErrFrameCut is wrapped by every error that ends a connection part way
	// through a request frame (ErrFrameTimeout, ErrFrameEOF, and a receive
	// error such as ECONNRESET after part of a frame).
	ErrFrameCut = errors.New("ioring: truncated request frame")
	// ErrFrameTimeout closes a connection that sent part of a frame and then
	// nothing for UringOptions.FrameTimeout.
	ErrFrameTimeout = fmt.Errorf("%w: no more bytes within the frame timeout", ErrFrameCut)
	// ErrFrameSize closes a connection that announced a frame outside
	// [UringOptions.MinFrame, MaxFrame].
	ErrFrameSize = errors.New("ioring: request frame size out of range")
	// ErrFrameEOF ends a connection whose peer closed it part way through
	// a frame (it wraps io.ErrUnexpectedEOF); an EOF between frames is an
	// orderly end (nil).
	ErrFrameEOF = fmt.Errorf("%w: %w", ErrFrameCut, io.ErrUnexpectedEOF)
)

// FrameAction is what OnFrame asks the engine to do next.
type FrameAction int

const (
	FrameContinue FrameAction = iota // deliver the next frame
	FramePause                       // stop reading until RingConn.Resume
	FrameClose                       // close after the queued responses are sent
)

// RingConnHandler opens the callbacks of a connection accepted by the uring
// engine, on the loop of the shard that accepted it. It returns nil to
// refuse the connection (closed at once).
type RingConnHandler interface {
	OpenRingConn(c *RingConn) RingConnCallbacks
}

// RingConnCallbacks receive a connection's frames and its end, on its loop.
type RingConnCallbacks interface {
	// OnFrame gets one request frame without its size prefix. frame aliases
	// the engine's receive buffers and is valid only during the call.
	OnFrame(frame []byte) FrameAction
	// OnClose is called once, after the socket is closed and no op uses it.
	// err is nil for an orderly end (EOF between frames, Close, engine
	// shutdown); an EOF part way through a frame is ErrFrameEOF.
	OnClose(err error)
}

// FrameSink is implemented by callbacks that take large frames straight
// into storage of their own: a frame larger than one receive buffer is
// then copied once, from the receive buffers into the slice FrameBuffer
// returned, instead of through the connection's accumulation buffer and
// again into the handler's storage (at 180 MB/s of produce that second
// copy, its page faults and the zeroing of fresh buffers were ~20% of the
// broker's CPU). The filled slice comes back through OnOwnedFrame; a
// connection that closes first just drops it.
type FrameSink interface {
	// FrameBuffer returns size bytes of storage for the next frame.
	FrameBuffer(size int) []byte
	// OnOwnedFrame is OnFrame for a frame assembled in FrameBuffer's
	// slice; the slice now belongs to the callee.
	OnOwnedFrame(frame []byte) FrameAction
}

// FrameErrorSink is implemented by callbacks that answer the frames before
// a bad one, as Kafka, which reads nothing past a request until it has
// answered it, does: when a connection announces a frame size outside
// [MinFrame, MaxFrame], OnFrameError gets the error (ErrFrameSize) and the
// connection reads no more, instead of being aborted with its queued and
// pending answers. The callee closes it (Close) once those are sent.
type FrameErrorSink interface {
	OnFrameError(err error)
}

// UringOptions configures the uring engine.
type UringOptions struct {
	Addr   string   // host:port; port 0 picks one for all shards; shorthand for Addrs with one entry
	Addrs  []string // host:port of each listener; when set, Addr is ignored
	Shards []*Shard // ring shards (NewRingShard), one listener each
	Logger *slog.Logger
	// MaxFrame and MinFrame bound the announced frame size
	// (socket.request.max.bytes; a request header needs 8 bytes).
	MaxFrame, MinFrame int32
	// IdleTimeout closes connections on which nothing was received and
	// nothing sent for that long, unless their callbacks report them busy
	// (BusyReporter; connections.max.idle.ms, which Kafka measures from
	// the last socket activity); 0 never.
	IdleTimeout time.Duration
	// FrameTimeout closes connections that stop in the middle of a frame
	// (default 30s, as the netpoll path).
	FrameTimeout time.Duration
	// RecvBuffers x RecvBufSize is each shard's provided buffer ring
	// (defaults 256 x 32 KiB).
	RecvBuffers, RecvBufSize int
	// FileCopyMax: file parts (RingConn.WriteFile) of at most this many
	// bytes are read into memory with IORING_OP_READ, which completes
	// inline for page-cached data, and sent in one send with the bytes
	// around them; larger ones are spliced (file -> pipe -> socket).
	// io_uring runs every splice on an io-wq worker thread: two thread
	// hand-offs per part, which cost more than the copy on the machines
	// measured. 0 means 1 MiB; negative splices every file part (the A/B
	// switch).
	FileCopyMax int
	// SendfileMin: file parts of at least this many bytes whose pages are
	// all in the page cache (cachestat(2), Linux 6.5) are sent with
	// sendfile(2) from the loop, the socket non-blocking for the call:
	// no copy on the broker's side, against two (into memory, into the
	// socket) for a part read, and no io-wq hand-off as a splice takes.
	// Parts not wholly cached are read or spliced, so the loop never waits
	// on the disk. A full socket is waited for with a POLL_ADD. 0 never
	// (the A/B switch).
	SendfileMin int
	// SendMax bounds the bytes one send or writev SQE carries; the rest
	// of the queue goes in the next SQE, after the completion. A send on
	// a loopback or fast link copies for as long as the peer keeps
	// reading, on the shard's thread, and every other connection of the
	// shard waits for it: in the catch-up bench (a consumer draining a
	// 200 MB backlog in 16 MiB fetch answers while a producer sends
	// 50 MB/s), broker-side produce latency during the drain was p90
	// 13.6-17.8 ms, mean 4.9-5.7 ms unbounded, and p90 6.1-6.9 ms, mean
	// 2.7-3.4 ms with 512 KiB (netpoll: p90 5.6-10.6, mean 2.2-3.9).
	// 0 means 512 KiB; negative: unbounded (the A/B switch).
	SendMax int
	// SendZCMin sends referenced parts (RingConn.WriteRef) of at least this
	// many bytes with IORING_OP_SEND_ZC; 0 never (the default: on loopback
	// and for small responses it costs more than it saves, see the doc). A
	// socket that refuses it (EOPNOTSUPP: on 6.18 those accepted through
	// the ring do) gets plain sends from then on.
	SendZCMin int
}

// RingConn is one connection of the uring engine. All methods must be
// called on its shard's loop (Shard().Post from elsewhere).
type RingConn struct {
	us       *uringShard
	fd       int
	listener int
	// maxFrame caps the announced frame size below UringOptions.MaxFrame
	// (0: no cap); SetMaxFrame writes it from any goroutine.
	maxFrame atomic.Int32
	remote   string
	cb       RingConnCallbacks

	// receive
	recvUD    uint64
	recvArmed bool
	paused    bool
	frameErr  bool   // a bad frame size was reported to a FrameErrorSink: read no more
	acc       []byte // bytes of frames not yet complete (or held while paused)
	big       []byte // a large frame assembled in FrameSink storage
	bigFill   int    // bytes of big received
	sink      FrameSink
	bigH      HandlerFunc
	direct    bool   // the armed recv is a plain one (into big or hdr), not the multishot recv
	hdr       []byte // header-mode receive buffer (hdrRecvSize bytes), made on first use
	hdrMode   bool   // the last frame was large: the next recv reads into hdr (armRecv)
	hdrH      HandlerFunc
	cancelled bool // a cancel of the armed multishot recv is on its way
	lastRecv  time.Time
	// lastSend is when tick last saw Stats.SentBytes move (tickSent):
	// send progress, noted without a clock read per send.
	lastSend time.Time
	tickSent uint64
	recvH    HandlerFunc

	// send
	wbuf      [2][]byte
	wcur      int
	wrefs     [2]int
	q         []outPart
	qh        int
	iov       []unix.Iovec
	sending   bool
	flightEnd int // q index past the parts of the send in flight
	zcRes     int32
	zcSent    bool // the send in flight is a send-zc
	noZC      bool // the socket refused send-zc (EOPNOTSUPP): plain sends only
	pipe      [2]int
	pipeCap   int
	pipeFill  int
	sendH     HandlerFunc
	spInH     HandlerFunc
	spOutH    HandlerFunc
	pollOutH  HandlerFunc // POLLOUT wait of a sendfile that found the socket full
	sockFlags int         // the socket's file status flags (F_GETFL), -1 until read

	// file parts read into memory (UringOptions.FileCopyMax)
	arena      []byte        // their bytes, from the shard's pool while any is queued
	loads      int           // reads in flight
	loadIdx    []int         // q index of each read of the batch
	loadFill   []int         // bytes each read of the batch has got
	loadHs     []HandlerFunc // one handler per read slot, made once
	loadErr    error
	loadedLive int // queued parts whose bytes are in arena

	// drainFn is called once, from kick, when the send queue next
	// empties (NotifyDrained); drainDue marks that it is to be called.
	drainFn  func()
	drainDue bool

	ops        int // ops in flight that use fd
	closeAfter bool
	closing    bool
	closeErr   error
	done       bool
	Stats      ConnStats
}

// ConnStats are a connection's counters (loop-owned).
type ConnStats struct {
	Frames, RecvBytes, SentBytes, Sends, Splices, FileReads uint64
	DirectRecvs                                             uint64 // recvs straight into a large frame's storage
	DirectSwitches                                          uint64 // multishot recvs ended for such recvs (goDirect)
	HeaderRecvs                                             uint64 // header-mode recvs that read bytes (armRecv)
	Sendfiles                                               uint64 // sendfile(2) calls that sent bytes (UringOptions.SendfileMin)
}

type outPart struct {
	buf    int8 // 0/1: wbuf[buf][lo:hi]; -1: ref; -2: file; -3: file bytes read into arena (ref); -4: being read into arena[lo:hi]
	lo, hi int
	ref    []byte
	rel    Releaser // ref part: released once the kernel is done with ref (WriteRefRelease)
	f      *os.File // file part: the segment (for its name)
	fd     int      // file part (-2, -4): our duplicate of f's descriptor, closed when the part goes
	off, n int64
	cached int8 // file part: 1 wholly in the page cache, -1 not, 0 not asked (sendfileOK)
}

type uringShard struct {
	e     *uring
	fdLog fdExhaustedLog // accept's EMFILE/ENFILE warnings
	// acceptBackoff is the pause before accept is armed again after it
	// failed for want of descriptors (acceptBackoffMin doubling to Max).
	acceptBackoff time.Duration
	arenas        [][]byte // free arenas of file parts read into memory (RingConn.loadFileParts)
	sh            *Shard
	ring          *Ring
	br            *BufRing
	lfds          []int // one listening socket per listener (UringOptions.Addrs)
	h             RingConnHandler
	conns         map[*RingConn]struct{}
	accepts       []HandlerFunc // per listener
	closing       bool
	started       bool

	noCachestat bool // cachestat(2) failed once: no part goes by sendfile

	rawConns map[*os.File]syscall.RawConn // dupFile
	dupFn    func(uintptr)
	dupFd    int
	dupErr   error
}

type uring struct {
	o       UringOptions
	lns     []*net.TCPListener
	files   []*os.File
	addrs   []net.Addr // per listener
	mu      sync.Mutex
	closed  bool
	stop    chan struct{}
	shards  []*uringShard
	serving bool
}

// NewUring binds one SO_REUSEPORT socket per listener address and shard in
// o.Shards, which must be ring shards. Serve arms the accepts on each shard's loop.
func NewUring(o UringOptions) (Engine, error) {
	if len(o.Shards) == 0 {
		return nil, fmt.Errorf("cannot start the uring engine without shards")
	}
	for _, s := range o.Shards {
		if !s.IsRing() {
			return nil, fmt.Errorf("cannot start the uring engine on shard %d: it has no ring", s.ID())
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = 100 << 20
	}
	if o.FrameTimeout <= 0 {
		o.FrameTimeout = 30 * time.Second
	}
	if o.RecvBuffers <= 0 {
		o.RecvBuffers = 256
	}
	if o.RecvBufSize <= 0 {
		o.RecvBufSize = 32 << 10
	}
	if o.FileCopyMax == 0 {
		o.FileCopyMax = 1 << 20
	}
	o.FileCopyMax = min(o.FileCopyMax, loadBatchMax)
	switch {
	case o.SendMax == 0:
		o.SendMax = 512 << 10
	case o.SendMax < 0:
		o.SendMax = math.MaxInt
	}
	e := &uring{o: o, stop: make(chan struct{})}
	for _, s := range o.Shards {
		us := &uringShard{e: e, sh: s, conns: map[*RingConn]struct{}{}}
		us.dupFn = us.onDup
		e.shards = append(e.shards, us)
	}
	for _, addr := range listenAddrs(o.Addr, o.Addrs) {
		for i, us := range e.shards {
			ln, err := reusePortListenConfig.Listen(context.Background(), "tcp", addr)
			if err != nil {
				e.closeListeners()
				return nil, fmt.Errorf("cannot listen on %q for shard %d: %w", addr, us.sh.ID(), err)
			}
			tl := ln.(*net.TCPListener)
			e.lns = append(e.lns, tl)
			if i == 0 {
				addr = ln.Addr().String()
				e.addrs = append(e.addrs, ln.Addr())
			}
			// A dup of the socket for the ring; the net.Listener stays open (and
			// never accepts) so Addr works and the port stays bound.
			f, err := tl.File()
			if err != nil {
				e.closeListeners()
				return nil, fmt.Errorf("cannot get the listener fd of shard %d: %w", us.sh.ID(), err)
			}
			e.files = append(e.files, f)
			us.lfds = append(us.lfds, int(f.Fd()))
		}
	}
	return e, nil
}

func (e *uring) closeListeners() {
	for _, l := range e.lns {
		l.Close()
	}
	for _, f := range e.files {
		f.Close()
	}
}

func (e *uring) Name() string      { return "uring" }
func (e *uring) Addr() net.Addr    { return e.addrs[0] }
func (e *uring) Addrs() []net.Addr { return e.addrs }

// Serve arms every shard's accept and waits for Close. h must implement
// RingConnHandler.
func (e *uring) Serve(h ConnHandler) error {
	rh, ok := h.(RingConnHandler)
	if !ok {
		return fmt.Errorf("cannot serve with the uring engine: %T does not implement ioring.RingConnHandler", h)
	}
	errs := make(chan error, len(e.shards))
	for _, us := range e.shards {
		us := us
		us.sh.Post(func() { errs <- us.start(rh) })
	}
	var first error
	for range e.shards {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		e.Close()
		return first
	}
	<-e.stop
	return nil
}

// Close stops accepting; open connections stay until their owner closes
// them (or their shard stops).
func (e *uring) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, us := range e.shards {
		us := us
		wg.Add(1)
		us.sh.Post(func() { defer wg.Done(); us.stopAccepting() })
	}
	wg.Wait()
	e.closeListeners()
	close(e.stop)
	return nil
}

// start runs on the shard's loop.
func (us *uringShard) start(h RingConnHandler) error {
	us.h = h
	us.ring = us.sh.Ring()
	br, err := us.ring.RegisterBufRing(1, uint32(nextPow2(us.e.o.RecvBuffers)), us.e.o.RecvBufSize)
	if err != nil {
		return fmt.Errorf("cannot set up receive buffers of shard %d: %w", us.sh.ID(), err)
	}
	us.br = br
	for l := range us.lfds {
		us.accepts = append(us.accepts, func(c CQE) { us.onAccept(l, c) })
		if err := us.armAccept(l); err != nil {
			return err
		}
	}
	us.started = true
	us.sh.OnTick(us.tick)
	us.sh.OnClose(us.shutdown)
	return nil
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return min(p, maxBufRingEntries)
}

func (us *uringShard) armAccept(l int) error {
	if _, err := us.ring.AcceptMultishot(us.lfds[l], unix.SOCK_CLOEXEC, us.accepts[l]); err != nil {
		return fmt.Errorf("cannot arm accept on shard %d: %w", us.sh.ID(), err)
	}
	return nil
}

func (us *uringShard) stopAccepting() {
	if us.closing {
		return
	}
	us.closing = true
	if us.started {
		for _, fd := range us.lfds {
			_, _ = us.ring.CancelFd(fd, CancelAll, nil)
		}
		// Now, not at the loop's next Poll: the kernel finds the
		// accepts by the listener's descriptor, which Close closes as
		// soon as this returns, and an accept it misses stays in flight
		// until the shard's 2 s shutdown deadline.
		_, _ = us.ring.Submit()
	}
}

// shutdown runs when the shard stops: every connection is aborted.
func (us *uringShard) shutdown() {
	us.stopAccepting()
	for c := range us.conns {
		c.Abort(nil)
	}
}

// onAccept handles the CQEs of listener l's multishot accept.
func (us *uringShard) onAccept(l int, c CQE) {
	if !c.More() && !us.closing {
		if c.Res < 0 && (c.Res == -int32(unix.EMFILE) || c.Res == -int32(unix.ENFILE)) {
			us.fdLog.warn(us.e.o.Logger, us.sh.ID(), c.Err(), time.Now())
			us.acceptBackoff = min(max(2*us.acceptBackoff, acceptBackoffMin), acceptBackoffMax)
			_, _ = us.ring.Timeout(us.acceptBackoff, 0, 0, HandlerFunc(func(CQE) {
				if !us.closing {
					_ = us.armAccept(l)
				}
			}))
		} else if err := us.armAccept(l); err != nil {
			us.e.o.Logger.Error("cannot re-arm accept", "shard", us.sh.ID(), "err", err)
		}
	}
	if c.Res < 0 {
		return
	}
	fd := int(c.Res)
	us.acceptBackoff = 0
	if us.closing {
		unix.Close(fd)
		return
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	rc := &RingConn{us: us, fd: fd, listener: l, pipe: [2]int{-1, -1}, lastRecv: time.Now(), remote: peerName(fd)}
	rc.lastSend = rc.lastRecv
	rc.recvH = rc.onRecv
	rc.bigH = rc.onBigRecv
	rc.hdrH = rc.onHdrRecv
	rc.sendH = rc.onSend
	rc.spInH = rc.onSpliceIn
	rc.spOutH = rc.onSpliceOut
	rc.pollOutH = rc.onPollOut
	rc.sockFlags = -1
	cb := us.h.OpenRingConn(rc)
	if cb == nil {
		unix.Close(fd)
		return
	}
	rc.cb = cb
	rc.sink, _ = cb.(FrameSink)
	us.conns[rc] = struct{}{}
	rc.armRecv()
}

func peerName(fd int) string {
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return "unknown"
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
	case *unix.SockaddrInet6:
		return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
	}
	return "unknown"
}

func (us *uringShard) tick(now time.Time) {
	o := &us.e.o
	for c := range us.conns {
		if c.closing {
			continue
		}
		if c.Stats.SentBytes != c.tickSent {
			c.tickSent, c.lastSend = c.Stats.SentBytes, now
		}
		quiet := now.Sub(c.lastRecv)
		switch {
		case (len(c.acc) > 0 || c.big != nil) && !c.paused && quiet > o.FrameTimeout:
			c.Abort(ErrFrameTimeout)
		case o.IdleTimeout > 0 && quiet > o.IdleTimeout && now.Sub(c.lastSend) > o.IdleTimeout && !c.busy():
			c.Abort(ErrIdle)
		}
	}
}

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
