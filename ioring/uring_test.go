package ioring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// echoServer is a RingConnHandler that answers each frame with the same
// frame; a frame "file" is answered with the bytes of file (spliced), a
// frame "close" closes the connection after the queued answers.
type echoServer struct {
	file   *os.File
	size   int64
	opened atomic.Int64
	closed atomic.Int64
	mu     sync.Mutex
	errs   []error
	pause  bool
	// last is the connection opened last, for the servers that store it
	// (before opened counts it).
	last atomic.Pointer[RingConn]
}

type echoConn struct {
	s    *echoServer
	c    *RingConn
	hdr  [4]byte
	held int
}

func (s *echoServer) ServeConn(int, int, net.Conn) {}

func (s *echoServer) OpenRingConn(c *RingConn) RingConnCallbacks {
	s.opened.Add(1)
	return &echoConn{s: s, c: c}
}

func (e *echoConn) OnFrame(f []byte) FrameAction {
	switch string(f) {
	case "file":
		binary.BigEndian.PutUint32(e.hdr[:], uint32(e.s.size))
		e.c.Write(e.hdr[:])
		e.c.WriteFile(e.s.file, 0, e.s.size)
		e.c.Flush()
		return FrameContinue
	case "close":
		return FrameClose
	}
	binary.BigEndian.PutUint32(e.hdr[:], uint32(len(f)))
	e.c.Write(e.hdr[:])
	e.c.Write(f)
	e.c.Flush()
	if e.s.pause {
		e.held++
		if e.held%3 == 0 {
			c := e.c
			c.Shard().Post(c.Resume) // resumes on a later loop turn
			return FramePause
		}
	}
	return FrameContinue
}

func (e *echoConn) OnClose(err error) {
	if err != nil {
		e.s.mu.Lock()
		e.s.errs = append(e.s.errs, err)
		e.s.mu.Unlock()
	}
	e.s.closed.Add(1) // after errs: tests read errs once closed counts them
}

func startUring(t testing.TB, shards int, h ConnHandler, o UringOptions) Engine {
	t.Helper()
	if ok, why := Available(); !ok {
		t.Skip(why)
	}
	var ss []*Shard
	for i := 0; i < shards; i++ {
		s, err := NewRingShard(i, ShardOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	o.Addr, o.Shards, o.MinFrame = "127.0.0.1:0", ss, 1
	e, err := NewUring(o)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(h) }()
	t.Cleanup(func() {
		e.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		for _, s := range ss {
			s.Close()
		}
	})
	return e
}

func frame(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

func readFrame(t testing.TB, c net.Conn) []byte {
	t.Helper()
	var h [4]byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatalf("read size: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(h[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

// echoPipelined writes frames to addr in one pipelined stream, cut in
// pieces of 1+rest%piece bytes, and checks that each comes back whole and
// in order.
func echoPipelined(t *testing.T, addr string, frames [][]byte, piece int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	var all []byte
	for _, f := range frames {
		all = append(all, frame(f)...)
	}
	go func() {
		for len(all) > 0 {
			n := min(len(all), 1+len(all)%piece)
			if _, err := c.Write(all[:n]); err != nil {
				return
			}
			all = all[n:]
		}
	}()
	for i, w := range frames {
		if got := readFrame(t, c); !bytes.Equal(got, w) {
			t.Errorf("frame %d: got %d bytes, want %d", i, len(got), len(w))
			return
		}
	}
}

func TestUringEcho(t *testing.T) {
	for _, pause := range []bool{false, true} {
		srv := &echoServer{pause: pause}
		e := startUring(t, 2, srv, UringOptions{MaxFrame: 1 << 20, RecvBufSize: 4096, RecvBuffers: 8})
		var wg sync.WaitGroup
		for cn := 0; cn < 4; cn++ {
			wg.Add(1)
			go func(cn int) {
				defer wg.Done()
				// Pipelined frames of sizes that straddle the 4 KiB receive
				// buffers, written in odd pieces.
				var frames [][]byte
				for i := 0; i < 50; i++ {
					frames = append(frames, bytes.Repeat([]byte{byte(i + cn)}, 1+(i*977)%20000))
				}
				echoPipelined(t, e.Addr().String(), frames, 7001)
			}(cn)
		}
		wg.Wait()
	}
}

func TestUringSpliceAndClose(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 300000) // 4.8 MB, several pipe fills
	p := filepath.Join(dir, "seg")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // after the engine's cleanup
	srv := &echoServer{file: f, size: int64(len(data))}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20})
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(append(append(frame([]byte("hello")), frame([]byte("file"))...), append(frame([]byte("bye")), frame([]byte("close"))...)...))
	if got := readFrame(t, c); string(got) != "hello" {
		t.Fatalf("got %q", got)
	}
	if got := readFrame(t, c); !bytes.Equal(got, data) {
		t.Fatalf("file frame: got %d bytes, want %d", len(got), len(data))
	}
	if got := readFrame(t, c); string(got) != "bye" {
		t.Fatalf("got %q", got)
	}
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after close: read %d, %v; want EOF", n, err)
	}
}

// TestUringResetMidRequest: peers that reset their connection (SO_LINGER 0)
// in the middle of a frame, and after a frame whose answer is not read,
// close only their own connection; another client keeps being served.
func TestUringResetMidRequest(t *testing.T) {
	srv := &echoServer{}
	e := startUring(t, 2, srv, UringOptions{MaxFrame: 1 << 20})
	good, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		big := bytes.Repeat([]byte("x"), 200000)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c, err := net.Dial("tcp", e.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			fr := frame(big)
			if i%2 == 0 {
				c.Write(fr[:len(fr)/2]) // half a frame
			} else {
				c.Write(append(fr, fr...)) // whole frames, answers never read
			}
			c.Close() // RST
		}
	}()
	for i := 0; i < 300; i++ {
		msg := []byte{byte(i), byte(i >> 8), 1, 2, 3}
		good.Write(frame(msg))
		if got := readFrame(t, good); !bytes.Equal(got, msg) {
			t.Fatalf("round %d: got %v", i, got)
		}
	}
	close(stop)
	wg.Wait()
	eventually(5*time.Second, func() bool { return srv.closed.Load() == srv.opened.Load()-1 })
	if o, c := srv.opened.Load(), srv.closed.Load(); c != o-1 {
		t.Fatalf("opened %d, closed %d; want all but the good one closed", o, c)
	}
	t.Logf("%d resetting connections served and closed", srv.closed.Load())
}

func TestUringFrameLimits(t *testing.T) {
	srv := &echoServer{}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 100, IdleTimeout: 0})
	c, _ := net.Dial("tcp", e.Addr().String())
	defer c.Close()
	c.Write(frame(make([]byte, 101)))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("oversized frame did not close the connection")
	}
	waitFor(t, 5*time.Second, "the connection to close", func() bool { return srv.closed.Load() > 0 })
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.errs) != 1 || !errors.Is(srv.errs[0], ErrFrameSize) {
		t.Fatalf("errors %v, want ErrFrameSize", srv.errs)
	}
}

// TestUringEOFMidFrame: a peer that closes between frames ends its
// connection with no error (FIN) or a bare ECONNRESET (RST); one that
// closes after part of a size prefix or of a frame ends it with an error
// that wraps ErrFrameCut: ErrFrameEOF for a FIN, ECONNRESET for a RST.
func TestUringEOFMidFrame(t *testing.T) {
	whole := append(frame([]byte("one")), frame([]byte("two"))...)
	for _, tc := range []struct {
		name string
		send []byte
		cut  bool
	}{
		{"between frames", whole, false},
		{"in a size prefix", append(slices.Clone(whole), 0, 0), true},
		{"in a frame", append(slices.Clone(whole), frame([]byte("three"))[:6]...), true},
	} {
		for _, reset := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s reset=%v", tc.name, reset), func(t *testing.T) {
				srv := &echoServer{}
				e := startUring(t, 1, srv, UringOptions{MaxFrame: 100})
				c, err := net.Dial("tcp", e.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				c.Write(tc.send)
				for _, w := range []string{"one", "two"} {
					if got := readFrame(t, c); string(got) != w {
						t.Fatalf("echo %q, want %q", got, w)
					}
				}
				if reset {
					c.(*net.TCPConn).SetLinger(0)
				}
				c.Close()
				eventually(5*time.Second, func() bool { return srv.closed.Load() > 0 })
				srv.mu.Lock()
				defer srv.mu.Unlock()
				if srv.closed.Load() != 1 {
					t.Fatal("connection not closed")
				}
				var got error
				if len(srv.errs) == 1 {
					got = srv.errs[0]
				} else if len(srv.errs) > 1 {
					t.Fatalf("errors %v, want at most one", srv.errs)
				}
				switch {
				case tc.cut && !errors.Is(got, ErrFrameCut):
					t.Fatalf("error %v, want one wrapping ErrFrameCut", got)
				case tc.cut && !reset && !errors.Is(got, ErrFrameEOF):
					t.Fatalf("error %v, want ErrFrameEOF", got)
				case tc.cut && reset && !errors.Is(got, syscall.ECONNRESET):
					t.Fatalf("error %v, want one wrapping ECONNRESET", got)
				case !tc.cut && errors.Is(got, ErrFrameCut):
					t.Fatalf("error %v between frames", got)
				case !tc.cut && !reset && got != nil:
					t.Fatalf("error %v after a FIN between frames, want none", got)
				}
			})
		}
	}
}

// TestUringEchoAllocs: a request/answer round trip through the engine
// (recv from the buffer ring, frame cut, OnFrame, Write, send) allocates
// nothing in steady state; the client's own read and write do not either,
// so the global count is the engine's.
func TestUringEchoAllocs(t *testing.T) {
	srv := &echoServer{}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20})
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := frame(bytes.Repeat([]byte("r"), 1000))
	resp := make([]byte, len(req))
	rt := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, resp); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		rt()
	}
	if n := testing.AllocsPerRun(2000, rt); n > 0.05 {
		t.Fatalf("round trip allocates %.2f times, want 0", n)
	}
}

// TestFrameCutAllocs: cutting frames from received chunks, in place and
// across chunk boundaries, allocates nothing once the reassembly buffer
// has grown.
func TestFrameCutAllocs(t *testing.T) {
	cb := &countCB{}
	c := &RingConn{us: &uringShard{e: &uring{o: UringOptions{MaxFrame: 1 << 20, MinFrame: 1}}}, cb: cb}
	var stream []byte
	for i := 0; i < 10; i++ {
		stream = append(stream, frame(bytes.Repeat([]byte{1}, 100+i*50))...)
	}
	feed := func() {
		for off := 0; off < len(stream); off += 333 {
			c.feed(stream[off:min(off+333, len(stream))])
		}
		c.feed(stream) // whole frames in one chunk: cut in place
	}
	feed()
	if n := testing.AllocsPerRun(1000, feed); n != 0 {
		t.Fatalf("feed allocates %.1f times, want 0", n)
	}
	if cb.n != 20*1002 || len(c.acc) != 0 { // feed, AllocsPerRun's warm-up, 1000 runs
		t.Fatalf("got %d frames (want %d), %d bytes left", cb.n, 20*1002, len(c.acc))
	}
}

type countCB struct{ n int }

func (c *countCB) OnFrame([]byte) FrameAction { c.n++; return FrameContinue }
func (c *countCB) OnClose(error)              {}

// TestUringStopsPromptly: closing the engine cancels each shard's
// multishot accepts before the listeners close, so the shards then stop
// at once instead of waiting out their 2 s shutdown deadline for an
// accept still in flight (a broker's SIGTERM took 2.2-4.3 s in about half
// the stops when the cancel reached the kernel after the listener had
// closed).
func TestUringStopsPromptly(t *testing.T) {
	if ok, why := Available(); !ok {
		t.Skip(why)
	}
	for round := range 6 {
		var ss []*Shard
		for i := range 2 {
			s, err := NewRingShard(i, ShardOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ss = append(ss, s)
		}
		e, err := NewUring(UringOptions{Addr: "127.0.0.1:0", Shards: ss, MinFrame: 1})
		if err != nil {
			t.Fatal(err)
		}
		srv := &echoServer{}
		served := make(chan error, 1)
		go func() { served <- e.Serve(srv) }()
		c, err := net.Dial("tcp", e.Addrs()[0].String())
		if err != nil {
			t.Fatal(err)
		}
		echoPipelined(t, e.Addrs()[0].String(), [][]byte{[]byte("hi")}, 1)
		c.Close()
		start := time.Now()
		// A busy loop: the cancel is prepared in the middle of an inbox
		// pass, and the pass goes on (here 100 ms) before the loop enters
		// the kernel, while Close has already closed the listeners. Each
		// shard is held in a task until Close has queued its cancel
		// (stopAccepting) behind it and the busy task behind that.
		started, release := make(chan struct{}, len(ss)), make(chan struct{})
		for _, s := range ss {
			s.Post(func() { started <- struct{}{}; <-release })
		}
		for range ss {
			<-started
		}
		closed := make(chan struct{})
		go func() { e.Close(); close(closed) }()
		waitFor(t, 5*time.Second, "Close to queue the cancels", func() bool {
			for _, s := range ss {
				if s.QueueDepth() == 0 {
					return false
				}
			}
			return true
		})
		for _, s := range ss {
			// The busy part of the pass, not a wait: the loop must stay
			// out of the kernel this long after the cancel is prepared.
			s.Post(func() { time.Sleep(100 * time.Millisecond) })
		}
		close(release)
		<-closed
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			s.Close()
		}
		if d := time.Since(start); d > 1500*time.Millisecond { // a missed cancel costs 2 s per shard
			t.Fatalf("round %d: the engine and its shards took %v to stop", round, d)
		}
	}
}
