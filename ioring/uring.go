package ioring

import (
	"context"
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
	// Netpoll marks, per entry of Addrs, the listeners whose connections
	// are accepted and served as the netpoll engine serves them: a
	// goroutine per connection through ConnHandler.ServeConn, with the
	// shard index of the socket that accepted it (TLS listeners, whose
	// bytes crypto/tls must see). Their sockets never enter a ring.
	Netpoll []bool
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
	lfds          []int // one listening socket per listener (UringOptions.Addrs); -1 for a Netpoll one
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

// goListener is a socket of a UringOptions.Netpoll listener.
type goListener struct {
	ln       net.Listener
	shard    int
	listener int
}

type uring struct {
	o       UringOptions
	goLns   []goListener // accepted by goroutines (UringOptions.Netpoll)
	goWG    sync.WaitGroup
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
	for l, addr := range listenAddrs(o.Addr, o.Addrs) {
		goroutines := l < len(o.Netpoll) && o.Netpoll[l]
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
			if goroutines {
				e.goLns = append(e.goLns, goListener{ln: tl, shard: us.sh.ID(), listener: l})
				us.lfds = append(us.lfds, -1)
				continue
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
	goErrs := make(chan error, len(e.goLns))
	for _, g := range e.goLns {
		e.goWG.Add(1)
		go func(g goListener) {
			defer e.goWG.Done()
			if err := acceptLoop(g.ln, g.shard, g.listener, h, e.o.Logger, e.isClosed); err != nil {
				goErrs <- err
				e.Close()
			}
		}(g)
	}
	<-e.stop
	e.goWG.Wait()
	select {
	case err := <-goErrs:
		return err
	default:
		return nil
	}
}

func (e *uring) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
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
		if us.lfds[l] < 0 {
			continue // a Netpoll listener
		}
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
			if fd < 0 {
				continue
			}
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
