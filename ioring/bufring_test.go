package ioring

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRecvMultishotBufRing receives many messages through one multishot
// recv fed from a 4-buffer ring, recycling each buffer after use.
func TestRecvMultishotBufRing(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	br, err := r.RegisterBufRing(7, 4, 256)
	must(t, err)
	a, b := socketpair(t)
	var got bytes.Buffer
	cqes := 0
	h := HandlerFunc(func(c CQE) {
		cqes++
		if c.Res == -int32(unix.ECANCELED) && !c.More() {
			return // the cancel at the end
		}
		if c.Res <= 0 {
			t.Errorf("multishot recv ended: %d (%v)", c.Res, c.Err())
			return
		}
		id, ok := c.BufferID()
		if !ok || int(id) >= br.Entries() {
			t.Errorf("cqe %+v: no buffer id", c)
			return
		}
		got.Write(br.Buf(id, int(c.Res)))
		br.Recycle(id)
	})
	ud := mustUD(t)(r.RecvMultishot(b, br, 0, h))
	_, err = r.Submit()
	must(t, err)
	var want bytes.Buffer
	for i := range 50 {
		m := fmt.Sprintf("message %03d;", i)
		want.WriteString(m)
		_, err := unix.Write(a, []byte(m))
		must(t, err)
		// Let the ring consume so that each write needs a buffer.
		waitUntil(t, r, func() bool { return got.Len() == want.Len() })
	}
	if got.String() != want.String() {
		t.Fatalf("got %q", got.String())
	}
	if cqes < 50 {
		t.Fatalf("%d cqes for 50 writes", cqes)
	}
	var hc rec
	mustUD(t)(r.Cancel(ud, 0, &hc))
	waitUntil(t, r, func() bool { return hc.done() && r.InFlight() == 0 })
	must(t, br.Close())
}

// TestBufRingENOBUFS drains a 2-buffer ring without recycling: the
// multishot recv ends with ENOBUFS; after recycling and re-arming, the data
// still queued in the socket arrives.
func TestBufRingENOBUFS(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	br, err := r.RegisterBufRing(1, 2, 16)
	must(t, err)
	a, b := socketpair(t)
	var h rec
	mustUD(t)(r.RecvMultishot(b, br, 0, &h))
	_, err = r.Submit()
	must(t, err)
	for i := range 3 {
		_, err := unix.Write(a, []byte(fmt.Sprintf("chunk-%d", i)))
		must(t, err)
		waitUntil(t, r, func() bool { return len(h.cqes) > i || h.done() })
	}
	waitUntil(t, r, h.done)
	last := h.last()
	wantErrno(t, last, unix.ENOBUFS)
	var ids []uint16
	for _, c := range h.cqes[:len(h.cqes)-1] {
		id, ok := c.BufferID()
		if !ok || c.Res <= 0 || !c.More() {
			t.Fatalf("cqe %+v", c)
		}
		ids = append(ids, id)
	}
	if len(ids) != 2 {
		t.Fatalf("%d buffers used before ENOBUFS, want 2", len(ids))
	}
	if head, err := br.Head(); err == nil && head != br.Tail() {
		t.Fatalf("kernel head %d, tail %d: ring should be empty", head, br.Tail())
	}
	// A single-shot recv with buffer selection also fails while empty.
	var h1 rec
	s, ud, err := r.Start(&h1, nil)
	must(t, err)
	s.PrepRecvSelect(b, br.Group(), 0, 0)
	s.UserData = ud
	waitUntil(t, r, h1.done)
	wantErrno(t, h1.last(), unix.ENOBUFS)
	// Recycle both and re-arm: the third chunk (still in the socket) arrives.
	for _, id := range ids {
		br.Recycle(id)
	}
	var h2 rec
	mustUD(t)(r.RecvMultishot(b, br, 0, &h2))
	waitUntil(t, r, func() bool { return len(h2.cqes) > 0 })
	c := h2.cqes[0]
	id, _ := c.BufferID()
	if c.Res <= 0 || string(br.Buf(id, int(c.Res))) != "chunk-2" {
		t.Fatalf("after re-arm: %+v %q", c, br.Buf(id, max(int(c.Res), 0)))
	}
}

func TestRegisterBufRingErrors(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	for _, n := range []uint32{0, 3, 1 << 16} {
		if _, err := r.RegisterBufRing(1, n, 64); err == nil {
			t.Errorf("RegisterBufRing with %d entries succeeded", n)
		}
	}
	_, err := r.RegisterBufRing(2, 4, 64)
	must(t, err)
	if _, err := r.RegisterBufRing(2, 4, 64); err == nil {
		t.Error("registering group 2 twice succeeded")
	}
}
