package ioring

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// releaseServer answers a frame with 8 MiB queued by WriteRefRelease.
type releaseServer struct {
	data     []byte
	released chan struct{}
	calls    atomic.Int32
}

type releaseConn struct {
	s   *releaseServer
	c   *RingConn
	hdr [4]byte
}

func (s *releaseServer) ServeConn(int, int, net.Conn)               {}
func (s *releaseServer) OpenRingConn(c *RingConn) RingConnCallbacks { return &releaseConn{s: s, c: c} }
func (s *releaseServer) Release() {
	if s.calls.Add(1) == 1 {
		close(s.released)
	}
}

func (r *releaseConn) OnFrame([]byte) FrameAction {
	binary.BigEndian.PutUint32(r.hdr[:], uint32(len(r.s.data)))
	r.c.Write(r.hdr[:])
	r.c.WriteRefRelease(r.s.data, r.s)
	r.c.Flush()
	return FrameContinue
}

func (r *releaseConn) OnClose(error) {}

// TestUringWriteRefRelease: a part queued with WriteRefRelease is released
// once: after its last byte is sent (not before the peer, with a small
// receive buffer, reads it), and when the peer goes away without reading
// it. With SendZCMin set the connection tries send-zc, which the kernel
// refuses (EOPNOTSUPP) on sockets accepted through the ring (6.18: they
// lack SOCK_SUPPORT_ZC): the part then goes by plain send, the connection
// stays up.
func TestUringWriteRefRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    UringOptions
		read bool
	}{
		{"sent", UringOptions{MaxFrame: 1 << 20}, true},
		{"sent-zc", UringOptions{MaxFrame: 1 << 20, SendZCMin: 64 << 10}, true},
		{"peer-closed", UringOptions{MaxFrame: 1 << 20}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &releaseServer{data: bytes.Repeat([]byte("0123456789abcdef"), 512<<10), released: make(chan struct{})}
			// Registered before startUring, so it runs after the engine
			// and its shards have stopped: no release can come later.
			t.Cleanup(func() {
				if n := s.calls.Load(); n != 1 {
					t.Errorf("released %d times, want 1", n)
				}
			})
			e := startUring(t, 1, s, tc.o)
			c, err := net.Dial("tcp", e.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(64 << 10)
			if _, err := c.Write(frame([]byte("go"))); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.released:
				t.Fatal("released before the peer read the answer")
			case <-time.After(300 * time.Millisecond):
			}
			if tc.read {
				if got := readFrame(t, c); !bytes.Equal(got, s.data) {
					t.Fatalf("read %d bytes, not the %d queued", len(got), len(s.data))
				}
			} else {
				c.Close()
			}
			select {
			case <-s.released:
			case <-time.After(5 * time.Second):
				t.Fatal("not released")
			}
		})
	}
}
