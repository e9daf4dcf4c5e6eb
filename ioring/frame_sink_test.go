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
	directRecvs   atomic.Int64 // of the closed connections
	switches      atomic.Int64 // their DirectSwitches
}

type sinkConn struct {
	*echoConn
	s   *sinkServer
	buf []byte // the storage handed out by FrameBuffer
}

func (s *sinkServer) OpenRingConn(c *RingConn) RingConnCallbacks {
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
		deadline := time.Now().Add(5 * time.Second)
		for srv.closed.Load() < 3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
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
	deadline := time.Now().Add(10 * time.Second)
	for srv.buffers.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	gone.Close()
	stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := stalled.Read(make([]byte, 1)); err == nil {
		t.Fatal("a stalled large frame did not close the connection")
	}
	for srv.closed.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if srv.buffers.Load() != 2 || srv.owned.Load() != 0 || srv.closed.Load() != 2 {
		t.Fatalf("buffers %d, owned frames %d, closed %d; want 2, 0, 2", srv.buffers.Load(), srv.owned.Load(), srv.closed.Load())
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	timeouts := 0
	for _, err := range srv.errs {
		if errors.Is(err, ErrFrameTimeout) {
			timeouts++
		}
	}
	if timeouts != 1 {
		t.Fatalf("errors %v, want one ErrFrameTimeout", srv.errs)
	}
}

// TestUringFrameSinkWholeFrames: a large frame that is in the socket whole
// when the multishot recv reads it is assembled from the receive buffers
// without ending the multishot recv (no cancel, no direct recv), while one
// whose second half comes later is finished by a recv straight into its
// storage.
func TestUringFrameSinkWholeFrames(t *testing.T) {
	srv := &sinkServer{}
	e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20, RecvBufSize: 4096, RecvBuffers: 16})
	waitClosed := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for srv.closed.Load() < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if srv.closed.Load() < n {
			t.Fatalf("%d connections closed, want %d", srv.closed.Load(), n)
		}
	}

	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const whole = 10
	for i := 0; i < whole; i++ {
		f := bytes.Repeat([]byte{byte(i)}, 20000) // one write, one loopback segment
		if _, err := c.Write(frame(f)); err != nil {
			t.Fatal(err)
		}
		if got := readFrame(t, c); !bytes.Equal(got, f) {
			t.Fatalf("frame %d came back as %d bytes", i, len(got))
		}
	}
	c.Close()
	waitClosed(1)
	if srv.owned.Load() != whole || srv.switches.Load() != 0 || srv.directRecvs.Load() != 0 {
		t.Fatalf("whole frames: owned %d, multishot recvs ended %d, direct recvs %d; want %d, 0, 0",
			srv.owned.Load(), srv.switches.Load(), srv.directRecvs.Load(), whole)
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
	time.Sleep(100 * time.Millisecond)
	if _, err := c.Write(all[30000:]); err != nil {
		t.Fatal(err)
	}
	if got := readFrame(t, c); !bytes.Equal(got, f) {
		t.Fatalf("split frame came back as %d bytes", len(got))
	}
	c.Close()
	waitClosed(2)
	if srv.owned.Load() != whole+1 || srv.switches.Load() != 1 || srv.directRecvs.Load() == 0 {
		t.Fatalf("split frame: owned %d, multishot recvs ended %d, direct recvs %d; want %d, 1, >0",
			srv.owned.Load(), srv.switches.Load(), srv.directRecvs.Load(), whole+1)
	}
}
