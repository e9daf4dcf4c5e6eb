package ioring

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
)

// sendMaxServer answers "data" with one frame made of a copied header and
// three referenced parts, and "stats" with the connection's Sends and
// SentBytes (read on the loop).
type sendMaxServer struct{ parts [][]byte }

type sendMaxConn struct {
	s   *sendMaxServer
	c   *RingConn
	hdr [4]byte
}

func (s *sendMaxServer) ServeConn(int, int, net.Conn) {}
func (s *sendMaxServer) OpenRingConn(c *RingConn) RingConnCallbacks {
	return &sendMaxConn{s: s, c: c}
}

func (k *sendMaxConn) OnFrame(f []byte) FrameAction {
	if string(f) == "stats" {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], k.c.Stats.Sends)
		binary.BigEndian.PutUint64(b[8:], k.c.Stats.SentBytes)
		k.c.Write(frame(b[:]))
		k.c.Flush()
		return FrameContinue
	}
	n := 0
	for _, p := range k.s.parts {
		n += len(p)
	}
	binary.BigEndian.PutUint32(k.hdr[:], uint32(n))
	k.c.Write(k.hdr[:])
	for _, p := range k.s.parts {
		k.c.WriteRef(p)
	}
	k.c.Flush()
	return FrameContinue
}

func (k *sendMaxConn) OnClose(error) {}

// TestUringSendMax: with UringOptions.SendMax an answer's parts go out in
// sends of at most that many bytes (a part cut between two sends), so the
// 3 MiB answer takes at least 13 sends of 256 KiB and arrives whole and in
// order; unbounded (negative) it arrives the same.
func TestUringSendMax(t *testing.T) {
	pattern := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i%251)
		}
		return b
	}
	s := &sendMaxServer{parts: [][]byte{pattern(700<<10, 1), pattern(1<<20, 2), pattern(1300<<10, 3)}}
	want := bytes.Join(s.parts, nil)
	for _, tc := range []struct {
		name     string
		sendMax  int
		minSends uint64
	}{
		{"256KiB", 256 << 10, uint64((len(want) + 4 + 256<<10 - 1) / (256 << 10))},
		{"unbounded", -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startUring(t, 1, s, UringOptions{MaxFrame: 1 << 20, SendMax: tc.sendMax})
			c, err := net.Dial("tcp", e.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(frame([]byte("data"))); err != nil {
				t.Fatal(err)
			}
			if got := readFrame(t, c); !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, not the %d queued (or not in order)", len(got), len(want))
			}
			if _, err := c.Write(frame([]byte("stats"))); err != nil {
				t.Fatal(err)
			}
			st := readFrame(t, c)
			sends, sent := binary.BigEndian.Uint64(st[:8]), binary.BigEndian.Uint64(st[8:])
			if sent != uint64(len(want)+4) {
				t.Fatalf("SentBytes %d, want %d", sent, len(want)+4)
			}
			if sends < tc.minSends {
				t.Fatalf("%d sends for %d bytes, want at least %d", sends, sent, tc.minSends)
			}
			t.Logf("%d bytes in %d sends", sent, sends)
		})
	}
}
