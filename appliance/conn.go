package appliance

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// maxInFlight bounds the requests read from one connection whose responses
// are not yet written; the reader stops reading past it (backpressure).
const maxInFlight = 64

// One fetch at a time per connection. Kafka reads no request from a
// connection while it has one in progress, so a connection holds at most
// one response's bytes. Here requests pipeline (a producer's acks=1
// batches overlap), except Fetch and ShareFetch: a frame of either is not
// run until every earlier request of its connection is answered and the
// answers handed to the kernel, and nothing behind it is read meanwhile.
// A client that pipelines fetches and reads slowly thus pins one answer,
// not up to maxInFlight of them plus, on the uring engine, every answer
// already queued on its ring (direct-mode cache blocks; a segment
// descriptor per file part). Real clients send a connection's next fetch
// after reading the previous answer, so they never wait here.

// recordFetch reports whether a frame (without its size) is a Fetch or a
// ShareFetch request.
func recordFetch(f []byte) bool {
	if len(f) < 2 {
		return false
	}
	k := binary.BigEndian.Uint16(f)
	return k == 1 || k == 78
}

// conn is one client connection on its home shard. The reader goroutine
// cuts frames, decodes them and dispatches them in arrival order; work that
// waits (acks=all, long polls, metadata changes) continues on its own
// goroutine; the writer goroutine writes responses strictly in request order.
type conn struct {
	b      *Broker
	shard  int
	nc     net.Conn
	remote string

	slots     chan *slot
	closed    chan struct{}
	closeOnce sync.Once

	// lps are the fetch long polls waiting for this connection's answers;
	// markClosed ends them (fetchLongPoll).
	lpMu sync.Mutex
	lps  map[*fetchLongPoll]uint64 // with the poll's generation

	// ring is set when the uring engine serves the connection (nc is nil):
	// frames arrive from its loop and responses go out through its ring
	// (uringConn); the pipeline below is the same.
	ring *uringConn

	// wake is poked when a slot becomes ready (netpoll writer).
	wake chan struct{}
	// unsent counts the netpoll slots queued for the writer and not yet
	// written (or dropped); idleCh is poked when it falls to 0 while
	// idleWait is set (the reader waits to run a fetch, conn.waitWritten).
	unsent   atomic.Int32
	idleWait atomic.Bool
	idleCh   chan struct{}
	// clientID is the last client id read, reused while it stays the same.
	clientID string
	// sf is the writer's sendfile state (sendChunk).
	sf *sendfileState

	// lis is the listener that accepted the connection (nil only for
	// connections that tests build by hand).
	lis *Listener
	// authPending is set on a SASL listener until SaslAuthenticate
	// succeeds: only ApiVersions, SaslHandshake and SaslAuthenticate pass
	// (appliance/security's handlers, through security.SASLConn). sasl is
	// the exchange in progress; user is the authenticated principal
	// ("User:<name>"), "" for User:ANONYMOUS. All are written by the
	// dispatching goroutine or loop and read by handlers dispatched after.
	authPending bool
	sasl        security.Exchange
	user        string
}

// slot is one request's place in the response order. ready turns true once
// resp is set (conn.complete); the writer then owns it until it releases it.
type slot struct {
	ready    atomic.Bool
	rs       *reqState // the storage the slot lives in
	corrID   int32
	key      int16
	version  int16
	resp     any // kmsg.Response, *rawResponse, or nil for no response
	closeNow bool
	// closeAfter closes the connection once resp is written, logging
	// closeWhy (a failed SASL authentication).
	closeAfter bool
	closeWhy   string
	start      time.Time // when dispatched (request latency metrics)
	// orphan is set by a writer that will not send the slot (its
	// connection closed); claimed makes the writer's release happen once,
	// by the writer if the slot was ready, else by its completion.
	orphan, claimed atomic.Bool
}

func (s *slot) reset() {
	s.ready.Store(false)
	s.orphan.Store(false)
	s.claimed.Store(false)
	s.corrID, s.key, s.version, s.resp, s.closeNow, s.start = 0, 0, 0, nil, false, time.Time{}
	s.closeAfter, s.closeWhy = false, ""
}

// Handlers receive a *wire.Request whose Owner is the request's reqState
// and whose Conn is the *conn it came on; connOf and stateOf get them back
// (a type assertion to a concrete type: no allocation).

// connOf is the connection r came on; nil for requests tests build
// without one.
func connOf(r *wire.Request) *conn {
	c, _ := r.Conn.(*conn)
	return c
}

// stateOf is r's storage (reqState); nil for requests tests build by
// hand.
func stateOf(r *wire.Request) *reqState {
	rs, _ := r.Owner.(*reqState)
	return rs
}

// rawResponse is a response body made of byte slices and file chunks, sent
// without copying record bytes (fetch).
type rawResponse struct {
	flexible bool // response header v1 (tagged fields)
	parts    []respPart
}

type respPart struct {
	b     []byte
	chunk nvme.Chunk
}

func (r *rawResponse) size() int {
	n := 0
	for _, p := range r.parts {
		if p.chunk.File != nil || p.chunk.Mem != nil {
			n += int(p.chunk.Len)
		} else {
			n += len(p.b)
		}
	}
	return n
}

func newConn(b *Broker, shard int, lis *Listener, nc net.Conn) *conn {
	c := &conn{b: b, shard: shard, nc: nc, remote: nc.RemoteAddr().String(), slots: make(chan *slot, maxInFlight), closed: make(chan struct{}),
		wake: make(chan struct{}, 1), idleCh: make(chan struct{}, 1)}
	c.setListener(lis)
	return c
}

// setListener records the accepting listener; a SASL listener's
// connections start unauthenticated.
func (c *conn) setListener(lis *Listener) {
	c.lis = lis
	c.authPending = lis != nil && lis.SASL()
}

// SASLListener is the connection's listener as the SASL handlers see it
// (security.SASLConn); ok is false without a SASL listener.
func (c *conn) SASLListener() (security.SASLListener, bool) {
	if c.lis == nil || !c.lis.SASL() {
		return security.SASLListener{}, false
	}
	return security.SASLListener{Name: c.lis.Name, Mechanisms: c.lis.Mechanisms, PlainUsers: c.lis.PlainUsers}, true
}

// SASLPending reports whether the connection has yet to authenticate.
func (c *conn) SASLPending() bool { return c.authPending }

// SASLExchange is the connection's SASL exchange in progress.
func (c *conn) SASLExchange() *security.Exchange { return &c.sasl }

// Authenticated ends a successful SASL exchange: user is the principal
// from now on.
func (c *conn) Authenticated(user string) {
	c.user = "User:" + user
	c.authPending = false
	c.sasl = security.Exchange{}
	if c.ring != nil {
		c.ring.rc.SetMaxFrame(0) // socket.request.max.bytes from now on
	}
}

// allowedBeforeAuth: ApiVersions, SaslHandshake, SaslAuthenticate.
func allowedBeforeAuth(key int16) bool { return key == 18 || key == 17 || key == 36 }

// markClosed closes c.closed and ends the long polls parked for c (once;
// the caller holds c.closeOnce).
func (c *conn) markClosed() {
	close(c.closed)
	c.lpMu.Lock()
	lps := c.lps
	c.lps = nil
	c.lpMu.Unlock()
	for lp, gen := range lps {
		lp.end(gen)
	}
}

// addLongPoll registers lp to be ended with the connection; false when
// the connection has closed already. (A nil conn, in tests that run
// handlers without one, registers nothing.)
func (c *conn) addLongPoll(lp *fetchLongPoll, gen uint64) bool {
	if c == nil {
		return true
	}
	c.lpMu.Lock()
	defer c.lpMu.Unlock()
	select {
	case <-c.closed:
		return false
	default:
	}
	if c.lps == nil {
		c.lps = make(map[*fetchLongPoll]uint64)
	}
	c.lps[lp] = gen
	return true
}

func (c *conn) removeLongPoll(lp *fetchLongPoll) {
	if c == nil {
		return
	}
	c.lpMu.Lock()
	delete(c.lps, lp)
	c.lpMu.Unlock()
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.markClosed()
		if c.nc != nil {
			c.nc.Close()
		} else {
			c.ring.closeTransport()
		}
	})
}

// errTruncatedFrame wraps what ends a connection part way through a request
// frame (EOF, a reset, the frame's read deadline); such an end is logged
// even where a reset between frames is not.
var errTruncatedFrame = errors.New("truncated request frame")

// serve runs the reader; it returns when the connection is closed.
func (c *conn) serve() {
	var err error
	if c.user, err = security.HandshakeTLS(c.lis, c.nc); err != nil {
		c.b.warnConn("closing connection", "remote", c.remote, "shard", c.shard, "reason", err.Error())
		c.close()
		return
	}
	wdone := make(chan struct{})
	go func() { defer close(wdone); c.writer() }()
	err = c.reader()
	if err != nil && (errors.Is(err, errTruncatedFrame) || !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET)) {
		c.b.warnConn("closing connection", "remote", c.remote, "shard", c.shard, "reason", err.Error())
	}
	if err != nil {
		// The peer is gone (or broke the protocol): close now, as Kafka
		// drops a disconnected channel's in-flight responses, so that
		// long polls (Fetch, ShareFetch) waiting on c.closed end at once
		// instead of holding the socket until their max_wait_ms. A nil
		// error means a closing answer is queued: it is sent first.
		c.close()
	}
	close(c.slots)
	<-wdone
	c.close()
}

func (c *conn) reader() error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	idle := time.Duration(c.b.cfg.ConnectionsMaxIdleMs) * time.Millisecond
	for {
		if idle > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		}
		if n, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if n == 0 && c.unsent.Load() > 0 {
					// Not idle: a request is in progress (a long
					// poll) or its answer is being written, which
					// the write deadline watches.
					continue
				}
				return fmt.Errorf("idle for longer than connections.max.idle.ms=%d", c.b.cfg.ConnectionsMaxIdleMs)
			}
			if n > 0 {
				return fmt.Errorf("%w: %w", errTruncatedFrame, err)
			}
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if c.authPending && size > c.b.cfg.SaslServerMaxReceiveSize {
			return c.closeAfterAnswers(fmt.Errorf("request frame size %d before SASL authentication exceeds sasl.server.max.receive.size=%d", size, c.b.cfg.SaslServerMaxReceiveSize))
		}
		if size < 8 || size > c.b.cfg.SocketRequestMaxBytes { // 8: the shortest request header
			return c.closeAfterAnswers(fmt.Errorf("request frame size %d outside [8, socket.request.max.bytes=%d]", size, c.b.cfg.SocketRequestMaxBytes))
		}
		// A frame's read gets a deadline so a peer cannot hold half a frame forever.
		_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		rs := getReqState(int(size))
		if _, err := io.ReadFull(br, rs.frame); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // no byte of the body came
			}
			return fmt.Errorf("%w: %w", errTruncatedFrame, err)
		}
		if recordFetch(rs.frame) && !c.waitWritten() {
			return net.ErrClosed
		}
		if !c.dispatch(rs) {
			return nil
		}
	}
}

// closeAfterAnswers queues closingSlot(why) and returns nil: the reader
// stops with a closing slot queued.
func (c *conn) closeAfterAnswers(why error) error {
	c.enqueue(c.closingSlot(why))
	return nil
}

// closingSlot logs why the connection closes and returns a done slot that
// closes it once the answers queued before it are written (a frame size no
// request can have: Kafka, which reads nothing past a request until it has
// answered it, answers those first). Both engines' writers close on it.
func (c *conn) closingSlot(why error) *slot {
	c.b.warnConn("closing connection", "remote", c.remote, "shard", c.shard, "reason", why.Error())
	s := &slot{key: -1, closeNow: true}
	s.ready.Store(true)
	return s
}

// waitWritten waits until the writer has written every queued answer
// (one Fetch or ShareFetch at a time per connection, recordFetch); false
// if the connection closed first.
func (c *conn) waitWritten() bool {
	defer c.idleWait.Store(false)
	for c.unsent.Load() > 0 {
		c.idleWait.Store(true)
		if c.unsent.Load() == 0 {
			break
		}
		select {
		case <-c.idleCh:
		case <-c.closed:
			return false
		}
	}
	return true
}

// written is the writer's note that it is done with one slot.
func (c *conn) written() {
	if c.unsent.Add(-1) == 0 && c.idleWait.Load() {
		select {
		case c.idleCh <- struct{}{}:
		default:
		}
	}
}

// dispatch decodes one frame (rs.frame) and queues its slot. It returns
// false when the connection must close.
func (c *conn) dispatch(rs *reqState) bool {
	if c.ring != nil && c.ring.closing.Load() {
		return false
	}
	pr, err := parseFrameInto(c.b.front.apis, rs.frame, rs)
	s := &rs.slot
	s.corrID, s.key, s.version, s.start = pr.corrID, pr.key, pr.version, time.Now()
	if err != nil {
		s.closeNow = true
		c.b.warnConn("closing connection on bad request", "remote", c.remote, "api_key", pr.key, "api_version", pr.version,
			"correlation_id", pr.corrID, "reason", err.Error())
		s.ready.Store(true)
		c.enqueue(s)
		return false
	}
	if c.authPending && !allowedBeforeAuth(pr.key) {
		s.closeNow = true
		c.b.warnConn("closing connection: request before SASL authentication (ILLEGAL_SASL_STATE)", "remote", c.remote,
			"listener", c.lis.Name, "api_key", pr.key, "api_version", pr.version)
		s.ready.Store(true)
		c.enqueue(s)
		return false
	}
	// Produce and fetch storage is reused once answered; other handlers
	// may keep slices of the frame, so theirs never is.
	rs.pooled = pr.reused
	if pr.reused {
		internStrings(c.b, pr.req)
	}
	r := &rs.req
	*r = wire.Request{Key: pr.key, Version: pr.version, CorrID: pr.corrID, ClientID: c.internClientID(pr.clientIDBytes), Req: pr.req, Conn: c, Owner: rs}
	if c.b.authz != nil {
		r.Authz = c.b.authz
	}
	if !c.enqueue(s) {
		return false
	}
	if pr.unsupported {
		// ApiVersions answers in v0; Produce v0-v2 answers per partition.
		s.resp = pr.api.Unsupported(r)
		c.answered(s)
		return true
	}
	out := c.runHandler(pr.api, r)
	switch out := out.(type) {
	case wire.AnswerLater:
		return true
	case wire.Deferred:
		go func() {
			s.resp = c.finish(s, c.runDeferred(r, out))
			c.complete(s)
		}()
		return true
	}
	s.resp = c.finish(s, out)
	c.answered(s)
	return true
}

// answered marks s ready from the dispatching goroutine or loop (the uring
// loop pumps after dispatching, so only the netpoll writer is woken).
func (c *conn) answered(s *slot) {
	s.ready.Store(true)
	if s.orphan.Load() {
		s.releaseOnce()
		return
	}
	if c.ring == nil {
		c.poke()
	}
}

// complete marks s ready from any goroutine and wakes its writer.
func (c *conn) complete(s *slot) {
	s.ready.Store(true)
	if s.orphan.Load() {
		s.releaseOnce() // the writer has gone: nobody else will
		return
	}
	if c.ring != nil {
		c.ring.notify() // the answer is sent from the loop
		return
	}
	c.poke()
}

func (c *conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// internClientID returns the client id as a string, reusing the previous
// one while the client sends the same id (every request carries it).
func (c *conn) internClientID(b []byte) string {
	if string(b) != c.clientID {
		c.clientID = string(b)
	}
	return c.clientID
}

// parsedFrame is a decoded request frame.
type parsedFrame struct {
	key, version int16
	corrID       int32
	clientID     string
	req          kmsg.Request
	api          wire.API
	unsupported  bool // version outside the API's range, answered by api.Unsupported

	clientIDBytes []byte // the client id in the frame
	reused        bool   // req was decoded into the reqState's storage
}

// parseFrame decodes a request frame (without its size prefix): header v1
// or v2 and the body with kmsg. Any malformed input is an error, never a
// panic. Unknown API keys and versions we do not answer are errors too:
// Kafka closes the connection on them.
func parseFrame(t *wire.Table, frame []byte) (pr parsedFrame, err error) {
	return parseFrameInto(t, frame, nil)
}

// parseFrameInto is parseFrame that decodes Produce and Fetch bodies in
// their supported versions into rs's reused structs (decodeProduce, decodeFetch) when rs
// is not nil, and leaves pr.clientID empty (the caller interns
// pr.clientIDBytes).
func parseFrameInto(t *wire.Table, frame []byte, rs *reqState) (pr parsedFrame, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot decode request: %v", p)
		}
	}()
	if len(frame) < 8 {
		return pr, fmt.Errorf("request frame of %d bytes is shorter than a request header", len(frame))
	}
	pr.key = int16(binary.BigEndian.Uint16(frame[0:]))
	pr.version = int16(binary.BigEndian.Uint16(frame[2:]))
	pr.corrID = int32(binary.BigEndian.Uint32(frame[4:]))
	api, ok := t.Lookup(pr.key)
	if !ok {
		return pr, fmt.Errorf("unknown API key %d", pr.key)
	}
	pr.api = api
	// The client id is a nullable int16 string in header v1 and v2.
	rest := frame[8:]
	if len(rest) < 2 {
		return pr, fmt.Errorf("request header truncated")
	}
	cidLen := int(int16(binary.BigEndian.Uint16(rest)))
	rest = rest[2:]
	if cidLen > 0 {
		if cidLen > len(rest) {
			return pr, fmt.Errorf("client id length %d beyond the frame", cidLen)
		}
		pr.clientIDBytes = rest[:cidLen]
		if rs == nil {
			pr.clientID = string(pr.clientIDBytes)
		}
		rest = rest[cidLen:]
	}
	if rs != nil && pr.version >= api.Min && pr.version <= api.Max && hotKey(pr.key) {
		// Request header v2 (flexible versions: Produce v9+, Fetch v12+)
		// ends with tagged fields.
		if pr.key == 0 && pr.version >= 9 || pr.key == 1 && pr.version >= 12 {
			if rest = skipTags(rest); rest == nil {
				return pr, fmt.Errorf("cannot read request header tagged fields")
			}
		}
		var derr error
		if pr.key == 0 {
			pr.req, derr = &rs.produceReq, decodeProduce(&rs.produceReq, pr.version, rest)
		} else {
			pr.req, derr = &rs.fetchReq, decodeFetch(&rs.fetchReq, pr.version, rest)
		}
		if derr != nil {
			return pr, bodyDecodeError(pr.key, pr.version, derr)
		}
		pr.reused = true
		return pr, nil
	}
	req := kmsg.RequestForKey(pr.key)
	if req == nil {
		return pr, fmt.Errorf("no codec for API key %d", pr.key)
	}
	pr.req = req
	if pr.version < 0 {
		return pr, fmt.Errorf("negative API version %d", pr.version)
	}
	if pr.version < api.Min || pr.version > api.Max {
		if api.Unsupported == nil {
			return pr, fmt.Errorf("unsupported version %d (supported %d-%d)", pr.version, api.Min, api.Max)
		}
		pr.unsupported = true
		if pr.version >= 0 && pr.version <= req.MaxVersion() {
			req.SetVersion(pr.version)
			if body := skipHeaderTags(req, rest); body != nil {
				_ = req.ReadFrom(body) // best effort: the answer is an error anyway
			}
		} else {
			req.SetVersion(0)
		}
		return pr, nil
	}
	req.SetVersion(pr.version)
	body := skipHeaderTags(req, rest)
	if body == nil {
		return pr, fmt.Errorf("cannot read request header tagged fields")
	}
	if err := req.ReadFrom(body); err != nil {
		return pr, bodyDecodeError(pr.key, pr.version, err)
	}
	return pr, nil
}

// bodyDecodeError names the request whose body could not be decoded. kmsg
// reports a short body in words written for responses ("response did not
// contain enough data"), which misled readers of the log.
func bodyDecodeError(key, version int16, err error) error {
	if strings.Contains(err.Error(), "did not contain enough data") {
		return fmt.Errorf("cannot decode %s v%d request body: truncated, or a length field points past its end", kmsg.NameForKey(key), version)
	}
	return fmt.Errorf("cannot decode %s v%d request body: %w", kmsg.NameForKey(key), version, err)
}

// runHandler calls the handler, turning a panic into a closed connection
// rather than a dead broker.
func (c *conn) runHandler(api wire.API, r *wire.Request) (out any) {
	defer func() {
		if p := recover(); p != nil {
			c.b.log.Error("handler panic, closing connection", "api_key", r.Key, "api_version", r.Version, "panic", fmt.Sprint(p))
			out = wire.Close{Reason: "internal error"}
		}
	}()
	return api.Handle(r)
}

// runDeferred runs a handler's waiting part, turning a panic into a closed
// connection.
func (c *conn) runDeferred(r *wire.Request, d wire.Deferred) (out any) {
	defer func() {
		if p := recover(); p != nil {
			c.b.log.Error("handler panic, closing connection", "api_key", r.Key, "api_version", r.Version, "panic", fmt.Sprint(p))
			out = wire.Close{Reason: "internal error"}
		}
	}()
	return d()
}

// finish turns a handler's result into the slot's response.
func (c *conn) finish(s *slot, out any) any {
	if resp, ok := out.(kmsg.Response); ok && resp != nil {
		return resp
	}
	if rc, ok := out.(wire.RespondAndClose); ok {
		s.closeAfter, s.closeWhy = true, rc.Reason
		return rc.Resp
	}
	return out
}

// skipHeaderTags returns the body after the request header's tagged fields
// (request header v2, used by flexible versions), or nil if malformed.
func skipHeaderTags(req kmsg.Request, rest []byte) []byte {
	if !req.IsFlexible() {
		return rest
	}
	return skipTags(rest)
}

// skipTags returns what follows a tagged-field section, or nil if malformed.
func skipTags(rest []byte) []byte {
	n, sz := binary.Uvarint(rest)
	if sz <= 0 {
		return nil
	}
	rest = rest[sz:]
	for i := uint64(0); i < n; i++ {
		_, sz = binary.Uvarint(rest)
		if sz <= 0 {
			return nil
		}
		rest = rest[sz:]
		l, sz := binary.Uvarint(rest)
		if sz <= 0 || l > uint64(len(rest)-sz) {
			return nil
		}
		rest = rest[sz+int(l):]
	}
	return rest
}

// enqueue hands s to the writer in order; false if the conn is closed.
func (c *conn) enqueue(s *slot) bool {
	if c.ring != nil {
		return c.ring.enqueue(s)
	}
	c.unsent.Add(1)
	select {
	case c.slots <- s:
		return true
	case <-c.closed:
		c.written()
		return false
	}
}

func (c *conn) writer() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var hdr []byte
	broken := false
	for s := range c.slots {
		broken = c.writeSlot(bw, &hdr, s, broken)
		c.written()
	}
	if !broken {
		bw.Flush()
	}
}

// writeSlot writes s's answer (or drops it once the connection is
// broken) and reports whether the connection is broken.
func (c *conn) writeSlot(bw *bufio.Writer, hdrp *[]byte, s *slot, broken bool) bool {
	for !broken && !s.ready.Load() {
		select {
		case <-c.wake:
		case <-c.closed:
			broken = true
		}
	}
	if broken {
		s.abandon()
		return true
	}
	c.b.metrics.RequestDone(s.key, s.start, s.resp)
	if s.closeNow {
		bw.Flush()
		c.close()
		return true
	}
	if cc, ok := s.resp.(wire.Close); ok {
		bw.Flush()
		c.b.warnConn("closing connection", "remote", c.remote, "api_key", s.key, "reason", cc.Reason)
		c.close()
		return true
	}
	hdr, parts, ok, err := appendResponse((*hdrp)[:0], s)
	*hdrp = hdr
	if !ok && err == nil {
		releaseSlot(s)
		return false // acks=0
	}
	if err == nil {
		c.armWrite()
		if _, err = bw.Write(hdr); err == nil {
			err = c.writeParts(bw, parts)
		}
	}
	closeAfter, why, key := s.closeAfter, s.closeWhy, s.key
	releaseSlot(s) // bw holds copies; the rest went out (or failed) synchronously
	if err == nil && closeAfter {
		bw.Flush()
		c.b.warnConn("closing connection", "remote", c.remote, "api_key", key, "reason", why)
		c.close()
		return true
	}
	if err == nil && len(c.slots) == 0 {
		err = bw.Flush()
	}
	if err != nil {
		if !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
			c.b.warnConn("cannot write response, closing connection", "remote", c.remote, "err", err)
		}
		c.close()
		return true
	}
	return false
}

// appendResponse appends s's response frame to dst: the whole frame of a
// kmsg response, or the header of a raw one whose parts follow. ok is false
// for no response (acks=0). Both engines' writers use it.
func appendResponse(dst []byte, s *slot) (out []byte, parts []respPart, ok bool, err error) {
	switch resp := s.resp.(type) {
	case nil:
		return dst, nil, false, nil
	case *wire.FixedVersion:
		return encodeResponse(dst, s.corrID, s.key, resp.Resp, resp.Version), nil, true, nil
	case kmsg.Response:
		return encodeResponse(dst, s.corrID, s.key, resp, s.version), nil, true, nil
	case *rawResponse:
		n := 4 + resp.size()
		if resp.flexible {
			n++
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = binary.BigEndian.AppendUint32(dst, uint32(s.corrID))
		if resp.flexible {
			dst = append(dst, 0)
		}
		return dst, resp.parts, true, nil
	default:
		return dst, nil, false, fmt.Errorf("handler returned %T", s.resp)
	}
}

// armWrite sets the socket's write deadline connections.max.idle.ms
// ahead. The writer arms it per answer; a large part that hits it having
// sent bytes since is re-armed and continued (progressed), so a peer that
// reads nothing for that long is closed and one that reads slowly is not:
// Kafka's idle time counts from the last socket activity. (The reader's
// deadline does not see a peer that sends nothing because its answers are
// unread.)
func (c *conn) armWrite() {
	if idle := c.b.cfg.ConnectionsMaxIdleMs; idle > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Duration(idle) * time.Millisecond))
	}
}

// progressed reports whether a write that failed with err after sending
// sent bytes is only a deadline hit while the peer kept reading; it re-arms
// the deadline then.
func (c *conn) progressed(err error, sent bool) bool {
	var ne net.Error
	if !sent || !errors.As(err, &ne) || !ne.Timeout() {
		return false
	}
	c.armWrite()
	return true
}

// writeParts writes bytes through bw and file chunks with sendfile(2)
// straight from the segment file to the socket, at explicit offsets.
func (c *conn) writeParts(bw *bufio.Writer, parts []respPart) error {
	for _, p := range parts {
		if p.chunk.File == nil {
			if m := p.chunk.Mem; len(m) > memChunkDirect {
				// Direct mode: block-cache bytes go to the socket as
				// they are; small ones ride in bw to save a syscall.
				if err := bw.Flush(); err != nil {
					return err
				}
				for len(m) > 0 {
					n, err := c.nc.Write(m)
					m = m[n:]
					if err != nil && !c.progressed(err, n > 0) {
						p.chunk.Ref.Release() // the write is over either way
						return err
					}
				}
				p.chunk.Ref.Release()
				continue
			} else if m != nil {
				p.b = m
			}
			_, err := bw.Write(p.b)
			p.chunk.Ref.Release() // copied into bw (or failed)
			if err != nil {
				return err
			}
			continue
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		for ch := p.chunk; ; {
			left, err := c.sendChunk(ch)
			if err == nil {
				break
			}
			if !c.progressed(err, left < int(ch.Len)) {
				return err
			}
			ch.Pos += int64(int(ch.Len) - left)
			ch.Len = int32(left)
		}
	}
	return nil
}

// memChunkDirect: memory chunks larger than this skip bw (no copy).
const memChunkDirect = 16 << 10

// sendfileState is a connection's sendfile machinery, kept so that a
// chunk's send allocates nothing: the socket's and the last segment file's
// RawConn, and the callbacks RawConn.Control and Write take.
type sendfileState struct {
	sock    syscall.RawConn
	file    *os.File
	fileRC  syscall.RawConn
	off     int64
	remain  int
	serr    error
	control func(uintptr)
	write   func(uintptr) bool
	ffd     uintptr
}

// sendChunk sends ch with sendfile(2), at explicit offsets. It returns
// the bytes of ch not sent (all of them or none, but on an error).
func (c *conn) sendChunk(ch nvme.Chunk) (int, error) {
	sf := c.sf
	if sf == nil {
		sf = &sendfileState{}
		sf.control, sf.write = sf.onControl, sf.onWritable
		if sc, ok := c.nc.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				sf.sock = rc
			}
		}
		c.sf = sf
	}
	if sf.sock == nil {
		if err := copyChunk(c.nc, ch); err != nil {
			return int(ch.Len), err
		}
		return 0, nil
	}
	if sf.file != ch.File {
		rc, err := ch.File.SyscallConn()
		if err != nil {
			if err := copyChunk(c.nc, ch); err != nil {
				return int(ch.Len), err
			}
			return 0, nil
		}
		sf.file, sf.fileRC = ch.File, rc
	}
	sf.off, sf.remain, sf.serr = ch.Pos, int(ch.Len), nil
	ferr := sf.fileRC.Control(sf.control)
	if sf.serr != nil {
		return sf.remain, sf.serr
	}
	return sf.remain, ferr
}

func (sf *sendfileState) onControl(ffd uintptr) {
	sf.ffd = ffd
	werr := sf.sock.Write(sf.write)
	if sf.serr == nil {
		sf.serr = werr
	}
}

func (sf *sendfileState) onWritable(sfd uintptr) bool {
	for sf.remain > 0 {
		n, err := unix.Sendfile(int(sfd), int(sf.ffd), &sf.off, sf.remain)
		if n > 0 {
			sf.remain -= n
		}
		if err == unix.EAGAIN {
			return false // wait until writable
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			sf.serr = err
			return true
		}
		if n == 0 {
			sf.serr = fmt.Errorf("segment %s ended %d bytes early", sf.file.Name(), sf.remain)
			return true
		}
	}
	return true
}

// copyChunk is the fallback when the socket has no fd (tests with net.Pipe).
func copyChunk(w io.Writer, ch nvme.Chunk) error {
	_, err := io.Copy(w, io.NewSectionReader(ch.File, ch.Pos, int64(ch.Len)))
	return err
}

// encodeResponse appends a whole response frame: size, correlation id,
// header tags when flexible (never for ApiVersions), body.
func encodeResponse(dst []byte, corrID int32, key int16, resp kmsg.Response, version int16) []byte {
	resp.SetVersion(version)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corrID))
	if resp.IsFlexible() && key != 18 {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
