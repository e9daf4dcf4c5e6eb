package ioring

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bigParts are the answer of "big": [off, n] of the file, or n < 0 for -n
// bytes 'x'. The two large parts exceed the socket buffers, so a client
// that waits before reading makes sendfile find the socket full.
var bigParts = [][2]int64{{1000, 4 << 20}, {0, -5}, {3, 3 << 20}, {77, 100}}

type bigConn struct{ *mixConn }

func (b bigConn) OnFrame(f []byte) FrameAction {
	if string(f) != "big" {
		return b.mixConn.OnFrame(f)
	}
	writeAnswer(b.c, &b.hdr, b.s.file, bigParts)
	return FrameContinue
}

type bigServer struct{ mixServer }

func (s *bigServer) OpenRingConn(c *RingConn) RingConnCallbacks {
	s.last.Store(c)
	s.opened.Add(1)
	return bigConn{&mixConn{echoConn: &echoConn{s: &s.echoServer, c: c}, s: &s.mixServer}}
}

// TestUringSendfileParts: large file parts whose pages are all cached go
// by sendfile(2) from the loop, also when the client reads late and the
// socket fills (POLLOUT); once the file's pages are dropped from the page
// cache they are spliced instead; small parts are read either way; and
// with SendfileMin 0 nothing goes by sendfile. The bytes arrive in order.
func TestUringSendfileParts(t *testing.T) {
	f, data := segFile(t, 8<<20)
	if cached, err := pageCached(int(f.Fd()), 0, int64(len(data))); err != nil {
		t.Skipf("cachestat(2): %v", err)
	} else if !cached {
		t.Fatal("a file just written is not wholly in the page cache")
	}
	want := wantAnswer(data, bigParts)
	for _, tc := range []struct {
		name        string
		sendfileMin int
		drop        bool // drop the file's pages first
		sendfiles   bool // every large part goes by sendfile
	}{
		{"cached", 64 << 10, false, true},
		{"dropped", 64 << 10, true, false},
		{"off", 0, false, false},
	} {
		if tc.drop {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				t.Fatal(err)
			}
			if cached, _ := pageCached(int(f.Fd()), 1000, 4<<20); cached {
				t.Skip("FADV_DONTNEED left the file's pages cached")
			}
		}
		srv := &bigServer{mixServer{echoServer: echoServer{file: f, size: int64(len(data))}}}
		e := startUring(t, 1, srv, UringOptions{MaxFrame: 1 << 20, FileCopyMax: 1 << 20, SendfileMin: tc.sendfileMin})
		c, err := net.Dial("tcp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(append(append(frame([]byte("big")), frame([]byte("big"))...), frame([]byte("close"))...))
		waitSocketFull(t, &srv.echoServer, 1, 2)
		for i := 0; i < 2; i++ {
			if got := readFrame(t, c); !bytes.Equal(got, want) {
				t.Fatalf("%s, answer %d: %d bytes, differing from the %d wanted", tc.name, i, len(got), len(want))
			}
		}
		c.Close()
		st := closedStats(t, &srv.mixServer)
		t.Logf("%s: %d sendfile calls, %d splices, %d file reads", tc.name, st.Sendfiles, st.Splices, st.FileReads)
		// Dropped: the first part is spliced, which brings its pages (and
		// most of the next part's) back; what follows may go by sendfile.
		switch {
		case tc.sendfiles && (st.Sendfiles == 0 || st.Splices > 0),
			tc.drop && st.Splices == 0,
			tc.sendfileMin == 0 && (st.Sendfiles > 0 || st.Splices < 4):
			t.Fatalf("%s: %d sendfile calls and %d splices", tc.name, st.Sendfiles, st.Splices)
		}
		if !tc.drop && st.FileReads != 2 { // the 100-byte part of each answer
			t.Fatalf("%s: %d file reads, want the 2 small parts", tc.name, st.FileReads)
		}
		if tc.sendfiles && st.Sendfiles < 3 {
			t.Fatalf("%s: %d sendfile calls for 4 large parts sent to a full socket", tc.name, st.Sendfiles)
		}
	}
}

// waitSocketFull waits until srv's connection number opened (1-based) has
// handled frames frames and its answers fill its socket: the peer, not
// reading, leaves the socket no room (poll(2) finds it not writable) and
// more is queued behind.
func waitSocketFull(t *testing.T, srv *echoServer, opened int64, frames uint64) {
	t.Helper()
	waitFor(t, 5*time.Second, "the answers to fill the socket", func() bool {
		if srv.opened.Load() != opened {
			return false
		}
		c, full := srv.last.Load(), false
		c.Shard().Call(func() {
			if c.Stats.Frames < frames || c.Pending() == 0 {
				return
			}
			p := []unix.PollFd{{Fd: int32(c.Fd()), Events: unix.POLLOUT}}
			n, err := unix.Poll(p, 0)
			full = err == nil && n == 0
		})
		return full
	})
}

// closingConn answers "send" with a 3 MiB file part of a file it opens for
// the answer and closes right after queuing it (as retention closes a
// deleted segment under an answer in flight), and "closed" with a part of
// a file closed before WriteFile.
type closingConn struct {
	*echoConn
	path string
}

type closingServer struct {
	echoServer
	path string
}

func (s *closingServer) OpenRingConn(c *RingConn) RingConnCallbacks {
	s.last.Store(c)
	s.opened.Add(1)
	return &closingConn{echoConn: &echoConn{s: &s.echoServer, c: c}, path: s.path}
}

func (cc *closingConn) OnFrame(fr []byte) FrameAction {
	switch string(fr) {
	case "send", "closed":
		f, err := os.Open(cc.path)
		if err != nil {
			panic(err)
		}
		if string(fr) == "closed" {
			f.Close()
		}
		writeAnswer(cc.c, &cc.hdr, f, [][2]int64{{5, 3 << 20}})
		f.Close()
		return FrameContinue
	}
	return cc.echoConn.OnFrame(fr)
}

// TestUringFileClosedWhileQueued: a file part stays readable after its file
// is closed, on every path (sendfile, read, splice): the part holds its own
// descriptor. A part of a file closed before WriteFile closes the
// connection instead of sending anything.
func TestUringFileClosedWhileQueued(t *testing.T) {
	f, data := segFile(t, 4<<20)
	want := data[5 : 5+3<<20]
	for _, o := range []UringOptions{
		{MaxFrame: 1 << 20, FileCopyMax: 1 << 20, SendfileMin: 64 << 10},
		{MaxFrame: 1 << 20, FileCopyMax: 4 << 20},
		{MaxFrame: 1 << 20, FileCopyMax: -1},
	} {
		srv := &closingServer{path: f.Name()}
		e := startUring(t, 1, srv, o)
		c, err := net.Dial("tcp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(append(frame([]byte("send")), frame([]byte("send"))...))
		waitSocketFull(t, &srv.echoServer, 1, 2) // the files are closed by now
		for i := 0; i < 2; i++ {
			if got := readFrame(t, c); !bytes.Equal(got, want) {
				t.Fatalf("%+v, answer %d: %d bytes, differing from the %d wanted", o, i, len(got), len(want))
			}
		}
		c.Close()

		c2, err := net.Dial("tcp", e.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c2.Write(frame([]byte("closed")))
		c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(c2)
		c2.Close()
		if len(got) > 4 {
			t.Fatalf("%+v: a part of a closed file sent %d bytes", o, len(got))
		}
	}
}
