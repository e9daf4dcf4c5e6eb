package quorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A TCP frame is a raftpb.Message's protobuf bytes behind their length:
//
//	+----------+-------------------------+
//	| length   | raftpb.Message (proto)  |
//	| u32 BE   | length bytes            |
//	+----------+-------------------------+
//
// Frames flow one way on a connection: each node dials each peer and
// only writes on that connection; it only reads on the ones it accepts.
//
// The listener also takes Kafka requests (TCPConfig.Requests): a Kafka
// request frame has the same length prefix, then its API key, an int16
// below 256, so its first byte is 0, where a raftpb.Message's first
// byte is a protobuf field tag, never 0. An accepted connection whose
// first frame starts with 0 is handed over whole.

// DefaultMaxFrame is the largest frame TCPTransport reads by default:
// room for a snapshot of the metadata image.
const DefaultMaxFrame = 256 << 20

// ErrFrameTooLarge is a frame whose length is over the maximum.
var ErrFrameTooLarge = errors.New("quorum frame too large")

// appendFrame appends m's frame to dst.
func appendFrame(dst []byte, m *raftpb.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return dst[:start], fmt.Errorf("cannot encode a %v message to %d: %w", m.GetType(), m.GetTo(), err)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst, nil
}

// readFrame reads one frame from r into buf (grown as needed) and
// returns its message bytes (in buf, valid until the next call).
func readFrame(r io.Reader, buf []byte, maxFrame int) ([]byte, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, buf, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > maxFrame {
		return nil, buf, fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, n, maxFrame)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, buf, err
	}
	return buf, buf, nil
}

// decodeMessage decodes a frame's message bytes.
func decodeMessage(b []byte) (*raftpb.Message, error) {
	m := &raftpb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("cannot decode a quorum message of %d bytes: %w", len(b), err)
	}
	return m, nil
}

// TCPConfig configures a TCPTransport.
type TCPConfig struct {
	// ID is this node's id (node.id).
	ID uint64
	// Listen is the address to accept peers on (the controller
	// listener's host:port; port 0 picks one: Addr tells).
	Listen string
	// Peers are the other nodes' addresses by id (from
	// controller.quorum.voters, as the broker parsed it); this node's own entry is
	// ignored. AddPeer adds more.
	Peers []Voter
	// QueueSize is how many messages may wait for one peer's connection;
	// more are dropped (default 1024).
	QueueSize int
	// DialTimeout bounds one connection attempt (default 1 s).
	DialTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts to
	// reconnect to a peer, doubled after each failure (defaults 50 ms
	// and 2 s).
	MinBackoff, MaxBackoff time.Duration
	// MaxFrame is the largest frame accepted (default DefaultMaxFrame).
	MaxFrame int
	// Requests, when set, is handed the accepted connections whose first
	// frame is a Kafka request (see the frame comment), with a reader
	// that still holds that frame; it owns the connection and runs on
	// the connection's goroutine. Close closes the connection under it.
	// Nil: such a connection is closed as a bad frame.
	Requests func(conn net.Conn, r *bufio.Reader)
}

// TCPStats counts a TCPTransport's work.
type TCPStats struct {
	Sent, Received, Dropped, Dials, DialFailures uint64
}

// TCPTransport is the Transport between processes: one outgoing TCP
// connection per peer, written by that peer's goroutine from a bounded
// queue (full: the message is dropped and the peer reported
// unreachable), redialled with exponential backoff when it breaks;
// incoming connections are read by a goroutine each, which hands the
// frames' messages to the Handler.
type TCPTransport struct {
	cfg    TCPConfig
	logger *slog.Logger
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards peers, inbound and handler.
	mu      sync.Mutex
	peers   map[uint64]*tcpPeer
	inbound map[net.Conn]struct{}
	handler Handler
	started bool

	sent, received, dropped, dials, dialFailures atomic.Uint64
}

type tcpPeer struct {
	id     uint64
	addr   string
	queue  chan *raftpb.Message
	cancel context.CancelFunc
}

// NewTCPTransport listens on cfg.Listen; peers are dialled once Start
// is called. logger nil: slog.Default().
func NewTCPTransport(cfg TCPConfig, logger *slog.Logger) (*TCPTransport, error) {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1024
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 50 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(2*time.Second, cfg.MinBackoff)
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for the quorum on %q: %w", cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &TCPTransport{
		cfg: cfg, logger: logger.With("node", cfg.ID), ln: ln, ctx: ctx, cancel: cancel,
		peers: map[uint64]*tcpPeer{}, inbound: map[net.Conn]struct{}{},
	}
	for _, p := range cfg.Peers {
		if p.ID != cfg.ID {
			t.peers[p.ID] = &tcpPeer{id: p.ID, addr: p.Addr}
		}
	}
	return t, nil
}

// Addr returns the address the transport listens on.
func (t *TCPTransport) Addr() net.Addr { return t.ln.Addr() }

// Stats returns the counts so far.
func (t *TCPTransport) Stats() TCPStats {
	return TCPStats{Sent: t.sent.Load(), Received: t.received.Load(), Dropped: t.dropped.Load(), Dials: t.dials.Load(), DialFailures: t.dialFailures.Load()}
}

// AddPeer adds peer id at addr, or moves it there (its queue is
// dropped).
func (t *TCPTransport) AddPeer(id uint64, addr string) {
	if id == t.cfg.ID {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.peers[id]; old != nil {
		if old.addr == addr {
			return
		}
		if old.cancel != nil {
			old.cancel()
		}
	}
	p := &tcpPeer{id: id, addr: addr}
	t.peers[id] = p
	if t.started {
		t.runPeer(p)
	}
}

// RemovePeer stops sending to peer id.
func (t *TCPTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.peers[id]; p != nil {
		if p.cancel != nil {
			p.cancel()
		}
		delete(t.peers, id)
	}
}

// Start implements Transport: it accepts peers and dials them.
func (t *TCPTransport) Start(h Handler) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return errors.New("cannot start the quorum transport twice")
	}
	t.started, t.handler = true, h
	for _, p := range t.peers {
		t.runPeer(p)
	}
	t.wg.Go(t.accept)
	return nil
}

// runPeer starts p's writer; t.mu is held.
func (t *TCPTransport) runPeer(p *tcpPeer) {
	ctx, cancel := context.WithCancel(t.ctx)
	p.cancel = cancel
	p.queue = make(chan *raftpb.Message, t.cfg.QueueSize)
	t.wg.Go(func() { t.write(ctx, p) })
}

// Send implements Transport; it never blocks.
func (t *TCPTransport) Send(msgs []*raftpb.Message) {
	var full []uint64
	t.mu.Lock()
	h := t.handler
	for _, m := range msgs {
		p := t.peers[m.GetTo()]
		if p == nil || p.queue == nil {
			t.dropped.Add(1)
			continue
		}
		select {
		case p.queue <- m:
		default:
			t.dropped.Add(1)
			full = append(full, p.id)
		}
	}
	t.mu.Unlock()
	if h != nil {
		for _, id := range full {
			h.ReportUnreachable(id)
		}
	}
}

// write keeps a connection to p and writes p's queue to it.
func (t *TCPTransport) write(ctx context.Context, p *tcpPeer) {
	backoff := t.cfg.MinBackoff
	var buf []byte
	for ctx.Err() == nil {
		t.dials.Add(1)
		d := net.Dialer{Timeout: t.cfg.DialTimeout}
		conn, err := d.DialContext(ctx, "tcp", p.addr)
		if err != nil {
			t.dialFailures.Add(1)
			t.report(p.id)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, t.cfg.MaxBackoff)
			continue
		}
		backoff = t.cfg.MinBackoff
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		w := bufio.NewWriterSize(conn, 64<<10)
		err = func() error {
			for {
				var m *raftpb.Message
				select {
				case <-ctx.Done():
					return ctx.Err()
				case m = <-p.queue:
				}
				for m != nil {
					if buf, err = appendFrame(buf[:0], m); err != nil {
						t.logger.Warn("cannot encode a quorum message", "err", err)
					} else if _, err := w.Write(buf); err != nil {
						return err
					}
					t.sent.Add(1)
					select {
					case m = <-p.queue:
					default:
						m = nil
					}
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
		}()
		stop()
		conn.Close()
		if ctx.Err() == nil {
			t.logger.Debug("quorum connection lost", "peer", p.id, "addr", p.addr, "err", err)
			t.report(p.id)
		}
	}
}

func (t *TCPTransport) report(id uint64) {
	t.mu.Lock()
	h := t.handler
	t.mu.Unlock()
	if h != nil {
		h.ReportUnreachable(id)
	}
}

func (t *TCPTransport) accept() {
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() == nil {
				t.logger.Warn("quorum listener stopped", "err", err)
			}
			return
		}
		t.mu.Lock()
		if t.ctx.Err() != nil {
			t.mu.Unlock()
			conn.Close()
			return
		}
		t.inbound[conn] = struct{}{}
		h := t.handler
		t.mu.Unlock()
		t.wg.Go(func() { t.read(conn, h) })
	}
}

func (t *TCPTransport) read(conn net.Conn, h Handler) {
	defer func() {
		t.mu.Lock()
		delete(t.inbound, conn)
		t.mu.Unlock()
		conn.Close()
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	if t.cfg.Requests != nil {
		if hdr, err := r.Peek(5); err == nil && hdr[4] == 0 {
			t.cfg.Requests(conn, r)
			return
		}
	}
	var buf []byte
	for {
		b, nb, err := readFrame(r, buf, t.cfg.MaxFrame)
		buf = nb
		if err != nil {
			if t.ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.logger.Debug("quorum connection closed", "remote", conn.RemoteAddr().String(), "err", err)
			}
			return
		}
		m, err := decodeMessage(b)
		if err != nil {
			t.logger.Warn("quorum peer sent a bad frame: connection closed", "remote", conn.RemoteAddr().String(), "err", err)
			return
		}
		t.received.Add(1)
		h.Step(m)
	}
}

// Close implements Transport: it stops the listener, the writers and
// the readers and waits for them.
func (t *TCPTransport) Close() error {
	t.cancel()
	err := t.ln.Close()
	t.mu.Lock()
	for c := range t.inbound {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("cannot close the quorum listener: %w", err)
	}
	return nil
}
