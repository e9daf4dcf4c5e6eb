package appliance

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// A frame followed by bytes that cannot start a frame (a size outside
// [8, socket.request.max.bytes]) is answered before the connection closes,
// as Kafka, which reads no further until it has answered, does: a produce
// in the same write as the garbage is acknowledged, not written and left
// unanswered (a client would retry it and duplicate its records).
func TestFrameBeforeBadSizeIsAnswered(t *testing.T) {
	if raceEnabled {
		t.Skip("starts a broker; slow under the race detector")
	}
	tails := map[string][]byte{
		"negative size": {0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"huge size":     {0x7f, 0xff, 0xff, 0xff},
		"short frame":   {0, 0, 0, 3, 1, 2, 3},
	}
	for _, e := range fixtureEngines() {
		t.Run(e, func(t *testing.T) {
			f := newAllocFixtureWith(t, map[string]string{"io.engine": e})
			for name, tail := range tails {
				nc, err := net.Dial("tcp", f.b.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				out := append(append(append([]byte{}, produceFrame(0, 1, 77)...), f.fetch...), tail...)
				if _, err := nc.Write(out); err != nil {
					t.Fatal(err)
				}
				corr, _ := readAnswerErr(nc)
				if corr != 77 {
					t.Errorf("%s: first answer correlation id %d, want the produce's 77", name, corr)
				}
				corr, _ = readAnswerErr(nc)
				if corr != 4 {
					t.Errorf("%s: second answer correlation id %d, want the fetch's 4", name, corr)
				}
				nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				if n, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
					t.Errorf("%s: after the answers read %d, %v; want the connection closed", name, n, err)
				}
				nc.Close()
			}
		})
	}
}

func isReset(err error) bool {
	return err != nil && bytes.Contains([]byte(err.Error()), []byte("reset"))
}

// readAnswerErr is readAnswer that reports a failed read as id -1.
func readAnswerErr(nc net.Conn) (int32, int) {
	var sz [8]byte
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(nc, sz[:]); err != nil {
		return -1, 0
	}
	n := int(binary.BigEndian.Uint32(sz[:]))
	if _, err := io.CopyN(io.Discard, nc, int64(n-4)); err != nil {
		return -1, 0
	}
	return int32(binary.BigEndian.Uint32(sz[4:])), n
}

// A client that sends fetches and never reads is closed after
// connections.max.idle.ms, on netpoll too, where the writer blocked on
// its full socket forever (the reader, waiting behind it, never saw its
// read deadline).
func TestStuckReaderClosedAfterIdle(t *testing.T) {
	if raceEnabled {
		t.Skip("starts a broker; slow under the race detector")
	}
	for _, e := range fixtureEngines() {
		t.Run(e, func(t *testing.T) {
			f := newAllocFixtureWith(t, map[string]string{"io.engine": e, "connections.max.idle.ms": "1500"})
			f.c.nc.Close() // the fixture's client would idle out too
			nc2, err := net.Dial("tcp", f.b.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			f.c.nc = nc2
			fillPartition0(f, 80) // 8 MB: an answer outgrows the socket buffers
			nc2.Close()
			d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
			}}
			nc, err := d.Dial("tcp", f.b.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			var all []byte
			for i := int32(1); i <= 4; i++ {
				all = append(all, fetchFrame(i, 1, 0, 8<<20, 0)...)
			}
			if _, err := nc.Write(all); err != nil {
				t.Fatal(err)
			}
			conns := func() int {
				f.b.connsMu.Lock()
				defer f.b.connsMu.Unlock()
				return len(f.b.conns)
			}
			deadline := time.Now().Add(15 * time.Second)
			for conns() > 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if n := conns(); n > 0 {
				t.Fatalf("%d connections still open 15 s after a client stopped reading; connections.max.idle.ms is 1.5 s", n)
			}
		})
	}
}
