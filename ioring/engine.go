package ioring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ConnHandler serves one accepted connection for its home shard. listener
// is the index of the address that accepted it (NetpollOptions.Addrs,
// UringOptions.Addrs; 0 for a single Addr). ServeConn owns c and must close
// it before returning.
type ConnHandler interface {
	ServeConn(shard, listener int, c net.Conn)
}

// Engine accepts connections for every shard and hands each to the handler
// together with the index of the shard that owns it.
type Engine interface {
	// Name is the io.engine value: "netpoll" or "uring".
	Name() string
	// Addr is the bound address of the first listener (useful when the
	// port was 0).
	Addr() net.Addr
	// Addrs are the bound addresses of every listener, in option order.
	Addrs() []net.Addr
	// Serve runs until Close; it returns nil after Close.
	Serve(h ConnHandler) error
	// Close stops accepting and closes the listeners; connections are closed by the handler.
	Close() error
}

// NetpollOptions configures the netpoll engine.
type NetpollOptions struct {
	Addr   string   // host:port; shorthand for Addrs with one entry
	Addrs  []string // host:port of each listener; when set, Addr is ignored
	Shards int      // one SO_REUSEPORT socket per listener and shard
	Logger *slog.Logger
}

// listenAddrs returns addrs, or addr alone when addrs is empty.
func listenAddrs(addr string, addrs []string) []string {
	if len(addrs) > 0 {
		return addrs
	}
	return []string{addr}
}

// reusePortListenConfig sets SO_REUSEPORT, so that one socket per shard
// can bind the same address and the kernel spreads connections over them.
var reusePortListenConfig = net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}}

// listenShards binds n SO_REUSEPORT sockets on addr; with port 0 the first
// picks the port and the others reuse it.
func listenShards(addr string, n int) ([]net.Listener, error) {
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := reusePortListenConfig.Listen(context.Background(), "tcp", addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("cannot listen on %q for shard %d: %w", addr, i, err)
		}
		if i == 0 {
			addr = ln.Addr().String()
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// netpoll is the Go-runtime-poller engine: one SO_REUSEPORT listener per
// shard, so the kernel spreads connections across shards; each connection is
// served by its own goroutine.
type netpoll struct {
	lns    []net.Listener // listener l, shard i at l*shards+i
	shards int
	addrs  []net.Addr
	log    *slog.Logger
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// NewNetpoll binds the listeners: one socket per address and shard. With
// port 0 the first shard's socket picks the port and the others reuse it.
func NewNetpoll(o NetpollOptions) (Engine, error) {
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	e := &netpoll{log: o.Logger, shards: o.Shards}
	for _, addr := range listenAddrs(o.Addr, o.Addrs) {
		lns, err := listenShards(addr, o.Shards)
		if err != nil {
			for _, l := range e.lns {
				l.Close()
			}
			return nil, err
		}
		e.lns = append(e.lns, lns...)
		e.addrs = append(e.addrs, lns[0].Addr())
	}
	return e, nil
}

func (e *netpoll) Name() string      { return "netpoll" }
func (e *netpoll) Addr() net.Addr    { return e.addrs[0] }
func (e *netpoll) Addrs() []net.Addr { return e.addrs }

func (e *netpoll) Serve(h ConnHandler) error {
	errs := make(chan error, len(e.lns))
	for i, ln := range e.lns {
		e.wg.Add(1)
		go func(shard, listener int, ln net.Listener) {
			defer e.wg.Done()
			errs <- acceptLoop(ln, shard, listener, h, e.log, e.isClosed)
		}(i%e.shards, i/e.shards, ln)
	}
	var first error
	for range e.lns {
		if err := <-errs; err != nil && first == nil {
			first = err
			e.Close()
		}
	}
	e.wg.Wait()
	return first
}

func (e *netpoll) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// acceptLoop accepts on ln, the socket of listener for shard, and serves
// each connection on its own goroutine (h.ServeConn) until ln is closed
// (nil) or accept fails for good; descriptor exhaustion backs off and
// logs. closed reports whether the engine is closing.
func acceptLoop(ln net.Listener, shard, listener int, h ConnHandler, log *slog.Logger, closed func() bool) error {
	var fdLog fdExhaustedLog
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if closed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				fdLog.warn(log, shard, err, time.Now())
				backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("cannot accept on shard %d: %w", shard, err)
		}
		backoff = 0
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		go h.ServeConn(shard, listener, c)
	}
}

func (e *netpoll) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	for _, l := range e.lns {
		l.Close()
	}
	return nil
}
