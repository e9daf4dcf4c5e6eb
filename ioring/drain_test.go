package ioring

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// drainServer answers a frame with 8 MiB, queued by reference, and arms
// NotifyDrained after it; results go to armed and drained.
type drainServer struct {
	armed, idle chan bool
	drained     chan struct{}
	data        []byte
}

type drainConn struct {
	s   *drainServer
	c   *RingConn
	hdr [4]byte
}

func (s *drainServer) ServeConn(int, int, net.Conn) {}

func (s *drainServer) OpenRingConn(c *RingConn) RingConnCallbacks { return &drainConn{s: s, c: c} }

func (d *drainConn) OnFrame([]byte) FrameAction {
	d.s.idle <- d.c.NotifyDrained(func() { panic("armed on an empty queue") })
	binary.BigEndian.PutUint32(d.hdr[:], uint32(len(d.s.data)))
	d.c.Write(d.hdr[:])
	d.c.WriteRef(d.s.data)
	d.c.Flush()
	d.s.armed <- d.c.NotifyDrained(func() { close(d.s.drained) })
	return FrameContinue
}

func (d *drainConn) OnClose(error) {}

// askDrain starts a drainServer of 8 MiB answers on an engine with o and
// asks it for one from a client with a 64 KiB receive buffer (closed with
// the test).
func askDrain(t *testing.T, o UringOptions) (*drainServer, net.Conn) {
	s := &drainServer{armed: make(chan bool, 1), idle: make(chan bool, 1), drained: make(chan struct{}),
		data: bytes.Repeat([]byte("0123456789abcdef"), 512<<10)}
	e := startUring(t, 1, s, o)
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	if _, err := c.Write(frame([]byte("go"))); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestUringNotifyDrained: the drain callback runs once the peer has taken
// every queued byte, not before, and is not armed on an empty queue.
func TestUringNotifyDrained(t *testing.T) {
	s, c := askDrain(t, UringOptions{MaxFrame: 1 << 20})
	if <-s.idle {
		t.Fatal("NotifyDrained armed on an empty send queue")
	}
	if !<-s.armed {
		t.Fatal("NotifyDrained did not arm with 8 MiB queued and unread")
	}
	select {
	case <-s.drained:
		t.Fatal("drained before the peer read the answer")
	case <-time.After(300 * time.Millisecond):
	}
	got := readFrame(t, c)
	if len(got) != len(s.data) {
		t.Fatalf("read %d bytes, want %d", len(got), len(s.data))
	}
	select {
	case <-s.drained:
	case <-time.After(5 * time.Second):
		t.Fatal("drain callback not called after the answer was read")
	}
}

// TestUringSlowReaderNotIdle: a peer that sends nothing more but reads a
// large answer slowly and steadily for far longer than IdleTimeout is not
// closed as idle: send progress counts as activity (tick notes
// Stats.SentBytes moving).
func TestUringSlowReaderNotIdle(t *testing.T) {
	s, c := askDrain(t, UringOptions{MaxFrame: 1 << 20, IdleTimeout: 100 * time.Millisecond})
	<-s.idle
	<-s.armed
	start := time.Now()
	buf := make([]byte, 16<<10)
	got := 0
	// The reader's pace is what is tested: 16 KiB per 16 ms (~1 MB/s),
	// each pause far below IdleTimeout, the whole read far above it.
	pace := time.NewTicker(16 * time.Millisecond)
	defer pace.Stop()
	for got < 5<<20 {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(buf)
		got += n
		if err != nil {
			t.Fatalf("closed after %d bytes, %v into a read at ~1 MB/s (idle time 0.1 s): %v", got, time.Since(start), err)
		}
		<-pace.C
	}
	t.Logf("read %d bytes in %v", got, time.Since(start))
}
