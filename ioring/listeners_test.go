package ioring

import (
	"io"
	"net"
	"testing"
)

// listenerTeller answers each connection's first frame (uring) or the
// connection itself (netpoll) with one frame holding the listener index.
type listenerTeller struct{}

func (listenerTeller) ServeConn(_, listener int, c net.Conn) {
	defer c.Close()
	c.Write(frame([]byte{byte(listener)}))
	io.Copy(io.Discard, c)
}

func (listenerTeller) OpenRingConn(c *RingConn) RingConnCallbacks { return tellerConn{c} }

type tellerConn struct{ c *RingConn }

func (t tellerConn) OnFrame([]byte) FrameAction {
	t.c.Write(frame([]byte{byte(t.c.Listener())}))
	t.c.Flush()
	return FrameContinue
}

func (tellerConn) OnClose(error) {}

// TestEnginesSeveralListeners binds two listeners on two shards with each
// engine and checks that every connection is told the listener that
// accepted it.
func TestEnginesSeveralListeners(t *testing.T) {
	addrs := []string{"127.0.0.1:0", "127.0.0.1:0"}
	check := func(t *testing.T, e Engine) {
		got := e.Addrs()
		if len(got) != 2 || got[0].String() == got[1].String() || e.Addr().String() != got[0].String() {
			t.Fatalf("Addrs %v, Addr %v", got, e.Addr())
		}
		for round := 0; round < 4; round++ {
			for l, a := range got {
				c, err := net.Dial("tcp", a.String())
				if err != nil {
					t.Fatal(err)
				}
				c.Write(frame([]byte("?")))
				if b := readFrame(t, c); len(b) != 1 || int(b[0]) != l {
					t.Errorf("connection to %v told listener %v, want %d", a, b, l)
				}
				c.Close()
			}
		}
	}
	t.Run("netpoll", func(t *testing.T) {
		e, err := NewNetpoll(NetpollOptions{Addrs: addrs, Shards: 2})
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- e.Serve(listenerTeller{}) }()
		defer func() {
			e.Close()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}()
		check(t, e)
	})
	t.Run("uring", func(t *testing.T) {
		e := startUring(t, 2, listenerTeller{}, UringOptions{Addrs: addrs, MaxFrame: 1 << 20})
		check(t, e)
	})
}

// pathTeller is listenerTeller whose goroutine path answers 100 plus the
// listener index, so a test sees which path served a connection.
type pathTeller struct{ listenerTeller }

func (pathTeller) ServeConn(_, listener int, c net.Conn) {
	defer c.Close()
	c.Write(frame([]byte{byte(100 + listener)}))
	io.Copy(io.Discard, c)
}

// TestUringNetpollListeners marks the second of two listeners
// UringOptions.Netpoll: its connections go to ServeConn with their
// listener index, the first's to the ring.
func TestUringNetpollListeners(t *testing.T) {
	e := startUring(t, 2, pathTeller{}, UringOptions{Addrs: []string{"127.0.0.1:0", "127.0.0.1:0"}, Netpoll: []bool{false, true}, MaxFrame: 1 << 20})
	for round := 0; round < 4; round++ {
		for l, a := range e.Addrs() {
			c, err := net.Dial("tcp", a.String())
			if err != nil {
				t.Fatal(err)
			}
			c.Write(frame([]byte("?")))
			want := l
			if l == 1 {
				want = 101
			}
			if b := readFrame(t, c); len(b) != 1 || int(b[0]) != want {
				t.Errorf("connection to listener %d (%v) answered %v, want %d", l, a, b, want)
			}
			c.Close()
		}
	}
}
