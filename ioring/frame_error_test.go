package ioring

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// errSinkServer echoes frames on a later loop turn and records the error
// of a bad frame size, then closes.
type errSinkServer struct{ errs chan error }

type errSinkConn struct {
	s    *errSinkServer
	c    *RingConn
	hdr  [4]byte
	body []byte
}

func (s *errSinkServer) ServeConn(int, int, net.Conn) {}

func (s *errSinkServer) OpenRingConn(c *RingConn) RingConnCallbacks { return &errSinkConn{s: s, c: c} }

func (e *errSinkConn) OnFrame(f []byte) FrameAction {
	e.body = append([]byte(nil), f...)
	// Answered later, as a handler that waits: the bad size behind the
	// frame arrives before the answer is queued.
	e.c.Shard().Post(func() {
		e.c.Write(frame(e.body))
		e.c.Flush()
	})
	return FrameContinue
}

func (e *errSinkConn) OnFrameError(err error) {
	e.s.errs <- err
	e.c.Shard().Post(func() { e.c.Shard().Post(e.c.Close) }) // after the answer
}

func (e *errSinkConn) OnClose(error) {}

// TestUringFrameErrorSink: a bad frame size is reported to a
// FrameErrorSink instead of aborting the connection, so the answer to the
// frame before it still goes out, and the callee's Close ends it.
func TestUringFrameErrorSink(t *testing.T) {
	s := &errSinkServer{errs: make(chan error, 4)}
	e := startUring(t, 1, s, UringOptions{MaxFrame: 1 << 20})
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := []byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3}
	if _, err := c.Write(append(frame([]byte("first")), bad...)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.errs:
		if !errors.Is(err, ErrFrameSize) {
			t.Fatalf("OnFrameError got %v, want ErrFrameSize", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnFrameError not called")
	}
	if _, err := c.Write([]byte("more bytes after the bad size are dropped")); err != nil {
		t.Fatal(err)
	}
	if got := readFrame(t, c); string(got) != "first" {
		t.Fatalf("answer %q, want the frame before the bad size echoed", got)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the answer: read %d, %v; want EOF", n, err)
	}
	if len(s.errs) != 0 {
		t.Fatalf("OnFrameError called again: %v", <-s.errs)
	}
}
