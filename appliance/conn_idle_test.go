package appliance

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
)

// A client that sends fetches and never reads is closed after
// connections.max.idle.ms, on netpoll too, where the writer blocked on
// its full socket forever (the reader, waiting behind it, never saw its
// read deadline).
func TestStuckReaderClosedAfterIdle(t *testing.T) {
	onEngines(t, map[string]string{"connections.max.idle.ms": "1500"}, func(t *testing.T, f *allocFixture) {
		f.c.nc.Close() // the fixture's client would idle out too
		nc2, err := net.Dial("tcp", f.b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		f.c.nc = nc2
		fillPartition0(f, 80) // 8 MB: an answer outgrows the socket buffers
		nc2.Close()
		nc := smallRcvBuf(t, f.b.Addr().String())
		defer nc.Close()
		var all []byte
		for i := int32(1); i <= 4; i++ {
			all = append(all, fetchFrame(i, 1, 0, 8<<20, 0)...)
		}
		if _, err := nc.Write(all); err != nil {
			t.Fatal(err)
		}
		conns := func() int {
			f.b.front.mu.Lock()
			defer f.b.front.mu.Unlock()
			return len(f.b.front.conns)
		}
		// Wait for the broker to have it (uring accepts asynchronously)
		// and to have queued the answers it cannot send.
		if !wait.Until(2*time.Second, func() bool { return conns() > 0 }) {
			t.Fatal("the broker never registered the connection")
		}
		wait.Until(15*time.Second, func() bool { return conns() == 0 })
		if n := conns(); n > 0 {
			t.Fatalf("%d connections still open 15 s after a client stopped reading; connections.max.idle.ms is 1.5 s", n)
		}
	})
}

// smallRcvBuf dials with a 64 KiB receive buffer, so that an 8 MB answer
// cannot sit in the socket buffers.
func smallRcvBuf(t *testing.T, addr string) net.Conn {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// connections.max.idle.ms counts from the last socket activity, as
// Kafka's: a client that reads an answer slowly but steadily for longer
// than that keeps its connection (also when one write of its answer
// outlasts the idle time), and so does one whose long poll waits
// longer than that.
func TestIdleCountsSendsAndLongPolls(t *testing.T) {
	onEngines(t, map[string]string{"connections.max.idle.ms": "500"}, func(t *testing.T, f *allocFixture) {
		fillPartition0(f, 80)
		f.c.nc.Close()

		// A long poll of 3 s on the empty partitions 1 and 2.
		lp, err := net.Dial("tcp", f.b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer lp.Close()
		start := time.Now()
		if _, err := lp.Write(fetchFrame(1, 1<<20, 3000, 1<<20, 1, 2)); err != nil {
			t.Fatal(err)
		}

		// An 8 MB answer read at ~1 MB/s, 7 MB of it (past what the socket
		// buffers hold): ~7 s. A 1 MiB write, or one ring send of
		// several MiB, outlasts the idle time.
		nc := smallRcvBuf(t, f.b.Addr().String())
		defer nc.Close()
		if _, err := nc.Write(fetchFrame(2, 1, 0, 8<<20, 0)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16<<10)
		got := 0
		slowStart := time.Now()
		for {
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := nc.Read(buf)
			got += n
			if err != nil || got >= 7<<20 {
				if err != nil {
					t.Fatalf("slow reader: closed after %d bytes in %v: %v", got, time.Since(slowStart), err)
				}
				break
			}
			time.Sleep(16 * time.Millisecond) // 16 KiB per ~16 ms
		}
		if d := time.Since(slowStart); d < 3*time.Second {
			t.Fatalf("read %d bytes in %v: the reader was not slow enough to test the idle time", got, d)
		}

		corr, _ := readAnswer(t, lp)
		if corr != 1 {
			t.Fatalf("long poll answered with correlation id %d", corr)
		}
		if d := time.Since(start); d < 2900*time.Millisecond {
			t.Fatalf("long poll answered after %v, before its 3 s max_wait", d)
		}
	})
}
