package ioring

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sinkServer is echoServer whose connections take large frames into their
// own storage (FrameSink); it counts the frames that came each way.
type sinkServer struct {
	echoServer
	owned, copied atomic.Int64
	buffers       atomic.Int64
	directRecvs   atomic.Int64             // of the closed connections
	switches      atomic.Int64             // their DirectSwitches
	headerRecvs   atomic.Int64             // their HeaderRecvs
	last          atomic.Pointer[RingConn] // the connection opened last (stored before opened counts it)
}

type sinkConn struct {
	*echoConn
	s   *sinkServer
	buf []byte // the storage handed out by FrameBuffer
}

func (s *sinkServer) OpenRingConn(c *RingConn) RingConnCallbacks {
	s.last.Store(c)
	s.opened.Add(1)
	return &sinkConn{echoConn: &echoConn{s: &s.echoServer, c: c}, s: s}
}

func (k *sinkConn) OnFrame(f []byte) FrameAction {
	k.s.copied.Add(1)
	return k.echoConn.OnFrame(f)
}

func (k *sinkConn) OnClose(err error) {
	k.s.directRecvs.Add(int64(k.c.Stats.DirectRecvs))
	k.s.switches.Add(int64(k.c.Stats.DirectSwitches))
	k.s.headerRecvs.Add(int64(k.c.Stats.HeaderRecvs))
	k.echoConn.OnClose(err)
}

func (k *sinkConn) FrameBuffer(size int) []byte {
	k.s.buffers.Add(1)
	k.buf = make([]byte, size)
	return k.buf
}

func (k *sinkConn) OnOwnedFrame(f []byte) FrameAction {
	if len(f) != len(k.buf) || &f[0] != &k.buf[0] {
		panic("OnOwnedFrame got storage other than FrameBuffer's")
	}
	k.s.owned.Add(1)
	return k.echoConn.OnFrame(f)
}

// TestUringFrameSink: frames larger than bigFrameMin are assembled in the
// sink's storage, smaller ones are cut from the receive buffers as before,
// and both arrive whole and in order however the bytes are split, also
// while reading pauses every third frame.
func TestUringFrameSink(t *testing.T) {
	for _, pause := range []bool{false, true} {
		srv := &sinkServer{}
		srv.pause = pause
		e := startUring(t, 2, srv, UringOptions{MaxFrame: 1 << 20, RecvBufSize: 4096, RecvBuffers: 8})
		var wg sync.WaitGroup
		for cn := 0; cn < 3; cn++ {
			wg.Add(1)
			go func(cn int) {
				defer wg.Done()
				var frames [][]byte
				for i := 0; i < 40; i++ {
					size := 1 + (i*7919)%60000 // from 1 byte to ~60 KB, both sides of bigFrameMin
					f := bytes.Repeat([]byte{byte(i*3 + cn)}, size)
					f[0], f[len(f)-1] = byte(i), byte(cn) // ends that a shifted copy would get wrong
					frames = append(frames, f)
				}
				echoPipelined(t, e.Addr().String(), frames, 9001)
			}(cn)
		}
		wg.Wait()
		waitFor(t, 5*time.Second, "the 3 connections to close", func() bool { return srv.closed.Load() >= 3 })
		if srv.directRecvs.Load() == 0 {
			t.Fatalf("pause %v: no recv went straight into a large frame", pause)
		}
		if srv.owned.Load() == 0 || srv.copied.Load() == 0 {
			t.Fatalf("pause %v: %d frames through the sink, %d copied; want both kinds", pause, srv.owned.Load(), srv.copied.Load())
		}
		if srv.buffers.Load() != srv.owned.Load() {
			t.Fatalf("pause %v: %d buffers handed out, %d frames came back", pause, srv.buffers.Load(), srv.owned.Load())
		}
	}
}

// echoFrame writes f as one frame on c and checks that it comes back.
func echoFrame(t *testing.T, c net.Conn, f []byte) {
	t.Helper()
	if _, err := c.Write(frame(f)); err != nil {
		t.Fatal(err)
	}
	if got := readFrame(t, c); !bytes.Equal(got, f) {
		t.Fatalf("a frame of %d bytes came back as %d", len(f), len(got))
	}
}

// directArmed reports, asking on c's loop, whether c waits in a recv
// straight into a large frame's storage (the multishot recv has ended).
func directArmed(c *RingConn) (armed bool) {
	c.Shard().Call(func() { armed = c.recvArmed && c.direct && c.big != nil })
	return armed
}

// waitClosed waits up to 5 s until srv has closed n connections.
func waitClosed(t *testing.T, srv *sinkServer, n int64) {
	t.Helper()
	if !eventually(5*time.Second, func() bool { return srv.closed.Load() >= n }) {
		t.Fatalf("%d connections closed, want %d", srv.closed.Load(), n)
	}
}

// awaitStallClose waits until srv has handed out buffers frame buffers,
// runs drop (the other peer leaves halfway), checks that the server closes
// stalled (FrameTimeout), and waits until both connections are closed.
func awaitStallClose(t *testing.T, srv *sinkServer, buffers int64, stalled net.Conn, drop func()) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	waitFor(t, time.Until(deadline), "the frame buffers to be handed out", func() bool { return srv.buffers.Load() >= buffers })
	drop()
	stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := stalled.Read(make([]byte, 1)); err == nil {
		t.Fatal("a stalled large frame did not close the connection")
	}
	eventually(time.Until(deadline), func() bool { return srv.closed.Load() >= 2 })
}

// TestUringFrameSinkTruncated: a large frame that stops halfway is closed
// after FrameTimeout, and one whose peer leaves halfway is dropped; neither
// reaches OnOwnedFrame.
func TestUringFrameSinkTruncated(t *testing.T) {
	srv := &sinkServer{}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20, FrameTimeout: 200 * time.Millisecond})
	half := frame(make([]byte, 100000))[:50000]
	stalled, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.Write(half)
	gone, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	gone.Write(half)
	awaitStallClose(t, srv, 2, stalled, func() { gone.Close() })
	if srv.buffers.Load() != 2 || srv.owned.Load() != 0 || srv.closed.Load() != 2 {
		t.Fatalf("buffers %d, owned frames %d, closed %d; want 2, 0, 2", srv.buffers.Load(), srv.owned.Load(), srv.closed.Load())
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	timeouts, eofs := 0, 0
	for _, err := range srv.errs {
		switch {
		case errors.Is(err, ErrFrameTimeout):
			timeouts++
		case errors.Is(err, ErrFrameEOF):
			eofs++
		}
	}
	if timeouts != 1 || eofs != 1 || len(srv.errs) != 2 {
		t.Fatalf("errors %v, want one ErrFrameTimeout and one ErrFrameEOF", srv.errs)
	}
}

// TestUringFrameSinkHeaderMode: a large frame that is in the socket whole
// when the multishot recv reads it is assembled from the receive buffers,
// and the multishot recv ends only then; the large frames after it are
// received through header mode (a recv of the next frame's first bytes,
// then one straight into its storage), and a small frame goes back to the
// multishot recv. A large frame whose second half comes later ends the
// multishot recv once the socket is drained and is finished by a recv
// straight into its storage.
func TestUringFrameSinkHeaderMode(t *testing.T) {
	srv := &sinkServer{}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20, RecvBufSize: 4096, RecvBuffers: 16})
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const large, small = 10, 5
	for i := 0; i < large; i++ {
		echoFrame(t, c, bytes.Repeat([]byte{byte(i)}, 20000)) // one write, one loopback segment
	}
	for i := 0; i < small; i++ {
		echoFrame(t, c, bytes.Repeat([]byte{byte(i)}, 100))
	}
	echoFrame(t, c, bytes.Repeat([]byte{1}, 30000)) // from the multishot recv's buffers again
	c.Close()
	waitClosed(t, srv, 1)
	// The first large frame ends the multishot recv; frames 2-10 take a
	// header recv and a direct recv each; the first small frame one header
	// recv, after which the multishot recv reads; the last large frame
	// ends it again.
	if srv.owned.Load() != large+1 || srv.copied.Load() != small || srv.switches.Load() != 2 ||
		srv.headerRecvs.Load() != large || srv.directRecvs.Load() < large-1 {
		t.Fatalf("owned %d, copied %d, multishot recvs ended %d, header recvs %d, direct recvs %d; want %d, %d, 2, %d, >= %d",
			srv.owned.Load(), srv.copied.Load(), srv.switches.Load(), srv.headerRecvs.Load(), srv.directRecvs.Load(),
			large+1, small, large, large-1)
	}

	c, err = net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := bytes.Repeat([]byte{7}, 60000)
	all := frame(f)
	if _, err := c.Write(all[:30000]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the first half read and a recv armed into the frame's storage", func() bool {
		k := srv.last.Load()
		return srv.opened.Load() == 2 && directArmed(k)
	})
	if _, err := c.Write(all[30000:]); err != nil {
		t.Fatal(err)
	}
	if got := readFrame(t, c); !bytes.Equal(got, f) {
		t.Fatalf("split frame came back as %d bytes", len(got))
	}
	direct := srv.directRecvs.Load()
	c.Close()
	waitClosed(t, srv, 2)
	if srv.owned.Load() != large+2 || srv.switches.Load() != 3 || srv.directRecvs.Load() == direct {
		t.Fatalf("split frame: owned %d, multishot recvs ended %d, direct recvs %d (%d before); want %d, 3, more",
			srv.owned.Load(), srv.switches.Load(), srv.directRecvs.Load(), direct, large+2)
	}
}

// TestUringHeaderModeTruncated: in header mode (after a large frame), a
// large frame that stops halfway is closed after FrameTimeout, and one
// whose peer resets halfway is dropped; neither reaches OnOwnedFrame, and
// the shard goes on serving.
func TestUringHeaderModeTruncated(t *testing.T) {
	srv := &sinkServer{}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20, FrameTimeout: 200 * time.Millisecond})
	whole := bytes.Repeat([]byte{3}, 100000) // spans receive buffers: assembled in FrameBuffer's storage
	half := frame(make([]byte, 100000))[:50000]
	open := func() net.Conn {
		c, err := net.Dial("tcp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(frame(whole)); err != nil {
			t.Fatal(err)
		}
		if got := readFrame(t, c); !bytes.Equal(got, whole) {
			t.Fatalf("the first frame came back as %d bytes", len(got))
		}
		if _, err := c.Write(half); err != nil { // read in header mode
			t.Fatal(err)
		}
		return c
	}
	stalled := open()
	defer stalled.Close()
	reset := open()
	awaitStallClose(t, srv, 4, stalled, func() {
		reset.(*net.TCPConn).SetLinger(0)
		reset.Close()
	})
	if srv.buffers.Load() != 4 || srv.owned.Load() != 2 || srv.closed.Load() != 2 || srv.headerRecvs.Load() < 2 {
		t.Fatalf("buffers %d, owned frames %d, closed %d, header recvs %d; want 4, 2, 2, >= 2",
			srv.buffers.Load(), srv.owned.Load(), srv.closed.Load(), srv.headerRecvs.Load())
	}
	srv.mu.Lock()
	errs := append([]error(nil), srv.errs...)
	srv.mu.Unlock()
	timeouts := 0
	for _, err := range errs {
		if errors.Is(err, ErrFrameTimeout) {
			timeouts++
		}
	}
	if timeouts != 1 || len(errs) != 2 {
		t.Fatalf("errors %v, want one ErrFrameTimeout and the reset's", errs)
	}
	echoPipelined(t, e.Addr().String(), [][]byte{whole, []byte("after")}, 7000) // still serving
}

// TestUringHeaderModeOneBuffer: a large frame that fits in one receive
// buffer (cut from it, not assembled) also puts the connection in header
// mode, and a frame of at most 16 KiB takes it out.
func TestUringHeaderModeOneBuffer(t *testing.T) {
	srv := &sinkServer{}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20}) // 32 KiB receive buffers
	frames := [][]byte{bytes.Repeat([]byte{1}, 20000), bytes.Repeat([]byte{2}, 20000), []byte("small"), []byte("small")}
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		echoFrame(t, c, f)
	}
	c.Close()
	waitClosed(t, srv, 1)
	// The second frame and the first small one are read in header mode;
	// the last small one by the multishot recv.
	if srv.closed.Load() != 1 || srv.headerRecvs.Load() != 2 {
		t.Fatalf("closed %d, header recvs %d; want 1, 2", srv.closed.Load(), srv.headerRecvs.Load())
	}
}
