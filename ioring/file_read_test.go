package ioring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// mixServer answers "mix" with an answer made of small and large file parts
// and byte parts between them, "eof" with a file part that runs past the
// end of the file; it keeps the closed connections' stats.
type mixServer struct {
	echoServer
	stats atomic.Pointer[ConnStats]
}

type mixConn struct {
	*echoConn
	s *mixServer
}

// mixParts are the answer's parts: [off, n] of the file, or n < 0 for
// -n bytes 'x'.
var mixParts = [][2]int64{{0, 1000}, {0, -2}, {5000, 3000}, {100, 70000}, {10, 10}, {0, -5}, {7, 1}}

func (s *mixServer) OpenRingConn(c *RingConn) RingConnCallbacks {
	s.opened.Add(1)
	return &mixConn{echoConn: &echoConn{s: &s.echoServer, c: c}, s: s}
}

// segFile writes n patterned bytes to a file and opens it.
func segFile(t *testing.T, n int) (*os.File, []byte) {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*13 + i/4093)
	}
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// closedStats waits for the server's connection to close and returns its stats.
func closedStats(t *testing.T, srv *mixServer) *ConnStats {
	t.Helper()
	eventually(5*time.Second, func() bool { return srv.stats.Load() != nil })
	st := srv.stats.Load()
	if st == nil {
		t.Fatal("the connection did not close")
	}
	return st
}

// writeAnswer queues one frame of parts ([off, n] of f, or n < 0 for -n
// bytes 'x') and flushes it.
func writeAnswer(c *RingConn, hdr *[4]byte, f *os.File, parts [][2]int64) {
	total := int64(0)
	for _, p := range parts {
		total += max(p[1], -p[1])
	}
	binary.BigEndian.PutUint32(hdr[:], uint32(total))
	c.Write(hdr[:])
	for _, p := range parts {
		if p[1] < 0 {
			c.Write(bytes.Repeat([]byte("x"), int(-p[1])))
		} else {
			c.WriteFile(f, p[0], p[1])
		}
	}
	c.Flush()
}

// wantAnswer is the frame body writeAnswer sends from a file holding data.
func wantAnswer(data []byte, parts [][2]int64) []byte {
	var want []byte
	for _, p := range parts {
		if p[1] < 0 {
			want = append(want, bytes.Repeat([]byte("x"), int(-p[1]))...)
		} else {
			want = append(want, data[p[0]:p[0]+p[1]]...)
		}
	}
	return want
}

func (m *mixConn) OnFrame(f []byte) FrameAction {
	switch string(f) {
	case "mix":
		writeAnswer(m.c, &m.hdr, m.s.file, mixParts)
		return FrameContinue
	case "eof":
		binary.BigEndian.PutUint32(m.hdr[:], 100)
		m.c.Write(m.hdr[:])
		m.c.WriteFile(m.s.file, m.s.size-50, 100)
		m.c.Flush()
		return FrameContinue
	}
	return m.echoConn.OnFrame(f)
}

func (m *mixConn) OnClose(err error) {
	st := m.c.Stats
	m.s.stats.Store(&st)
	m.echoConn.OnClose(err)
}

// TestUringFileReadParts: small file parts are read into memory and sent
// with the bytes around them, large ones spliced, in order (and every one
// spliced with FileCopyMax < 0); a part that runs past the end of its file
// closes the connection with an error either way.
func TestUringFileReadParts(t *testing.T) {
	f, data := segFile(t, 200000)
	want := wantAnswer(data, mixParts)
	for _, copyMax := range []int{64 << 10, 0, -1} {
		srv := &mixServer{echoServer: echoServer{file: f, size: int64(len(data))}}
		e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20, FileCopyMax: copyMax})
		c, err := net.Dial("tcp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		var req []byte
		for i := 0; i < 3; i++ {
			req = append(append(req, frame([]byte("mix"))...), frame([]byte("ping"))...)
		}
		c.Write(append(req, frame([]byte("close"))...))
		for i := 0; i < 3; i++ {
			if got := readFrame(t, c); !bytes.Equal(got, want) {
				t.Fatalf("FileCopyMax %d, answer %d: got %d bytes, differing from the %d wanted", copyMax, i, len(got), len(want))
			}
			if got := readFrame(t, c); string(got) != "ping" {
				t.Fatalf("FileCopyMax %d: got %q, want ping", copyMax, got)
			}
		}
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("after close: read %d, %v; want EOF", n, err)
		}
		c.Close()
		st := closedStats(t, srv)
		// 5 file parts per answer, one of them over 64 KiB (the default
		// limit, 1 MiB, reads them all).
		wantReads, wantSplices := uint64(3*4), uint64(3)
		switch {
		case copyMax < 0:
			wantReads, wantSplices = 0, 3*5
		case copyMax == 0:
			wantReads, wantSplices = 3*5, 0
		}
		if st.FileReads != wantReads || st.Splices < wantSplices || wantSplices == 0 && st.Splices > 0 {
			t.Fatalf("FileCopyMax %d: %d file reads, %d splices; want %d reads and at least %d splices", copyMax, st.FileReads, st.Splices, wantReads, wantSplices)
		}

		// A part past the end of the file.
		c2, err := net.Dial("tcp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c2.Write(frame([]byte("eof")))
		c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(c2)
		c2.Close()
		if len(got) >= 104 {
			t.Fatalf("FileCopyMax %d: a part past the end of the file sent %d bytes, want the connection closed short", copyMax, len(got))
		}
		eventually(5*time.Second, func() bool { return srv.closed.Load() >= 2 })
		srv.mu.Lock()
		errs := srv.errs
		srv.mu.Unlock()
		if len(errs) != 1 || errors.Is(errs[0], io.EOF) {
			t.Fatalf("FileCopyMax %d: close errors %v, want the short file's", copyMax, errs)
		}
	}
}

// TestArenaPool: a shard hands out arenas of at least the size asked
// (powers of two from 64 KiB), takes them back up to maxFreeArenas, and
// keeps the larger ones when full.
func TestArenaPool(t *testing.T) {
	us := &uringShard{}
	a := us.takeArena(100)
	b := us.takeArena(200 << 10)
	if cap(a) != 64<<10 || cap(b) != 256<<10 {
		t.Fatalf("caps %d, %d; want 64 KiB and 256 KiB", cap(a), cap(b))
	}
	us.giveArena(a)
	us.giveArena(b)
	if c := us.takeArena(100 << 10); &c[0] != &b[0] {
		t.Fatal("a 100 KiB request did not get the free 256 KiB arena")
	}
	if c := us.takeArena(10); &c[0] != &a[0] {
		t.Fatal("a small request did not get the free 64 KiB arena")
	}
	for i := 0; i < maxFreeArenas; i++ {
		us.giveArena(make([]byte, 64<<10))
	}
	us.giveArena(make([]byte, 1<<20))
	us.giveArena(nil)
	if len(us.arenas) != maxFreeArenas {
		t.Fatalf("%d free arenas kept, want %d", len(us.arenas), maxFreeArenas)
	}
	if c := us.takeArena(1 << 20); cap(c) != 1<<20 {
		t.Fatalf("the 1 MiB arena was not kept over a 64 KiB one (got %d)", cap(c))
	}
}
