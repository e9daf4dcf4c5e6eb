package ioring

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRecvSend(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	a, b := socketpair(t)
	msg := []byte("hello, ring")
	buf := make([]byte, 64)
	var hr, hs rec
	mustUD(t)(r.Recv(b, buf, 0, &hr))
	mustUD(t)(r.Send(a, msg, 0, &hs))
	waitUntil(t, r, func() bool { return hr.done() && hs.done() })
	if hs.last().Res != int32(len(msg)) {
		t.Fatalf("send res %d", hs.last().Res)
	}
	if n := hr.last().Res; n != int32(len(msg)) || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("recv res %d %q", n, buf[:max(n, 0)])
	}
}

// TestRecvErrors: a recv with MSG_DONTWAIT on an empty socket gets EAGAIN;
// a recv after the peer shut down gets 0 (EOF).
func TestRecvErrors(t *testing.T) {
	cases := []struct {
		name  string
		flags int
		setup func(peer int)
		want  int32
	}{
		{"eagain", unix.MSG_DONTWAIT, func(int) {}, -int32(unix.EAGAIN)},
		{"eof", 0, func(peer int) { unix.Shutdown(peer, unix.SHUT_WR) }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRing(t, Options{Entries: 4})
			a, b := socketpair(t)
			c.setup(a)
			var h rec
			mustUD(t)(r.Recv(b, make([]byte, 16), c.flags, &h))
			waitUntil(t, r, h.done)
			if h.last().Res != c.want {
				t.Fatalf("res %d, want %d", h.last().Res, c.want)
			}
		})
	}
}

// TestCancelRecv cancels a recv that would never complete, by user_data.
func TestCancelRecv(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	_, b := socketpair(t)
	var hr, hc rec
	ud := mustUD(t)(r.Recv(b, make([]byte, 16), 0, &hr))
	_, err := r.Submit()
	must(t, err)
	mustUD(t)(r.Cancel(ud, 0, &hc))
	waitUntil(t, r, func() bool { return hr.done() && hc.done() })
	wantErrno(t, hr.last(), unix.ECANCELED)
	if hc.last().Res != 0 {
		t.Fatalf("cancel res %d", hc.last().Res)
	}
	// Cancelling it again finds nothing.
	var h2 rec
	mustUD(t)(r.Cancel(ud, 0, &h2))
	waitUntil(t, r, h2.done)
	wantErrno(t, h2.last(), unix.ENOENT)
}

// TestCancelAnyAndFd cancels several recvs at once: by fd with CancelAll,
// then everything with CancelAny.
func TestCancelAnyAndFd(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	_, b := socketpair(t)
	_, d := socketpair(t)
	var hb, hd [2]rec
	for i := range 2 {
		mustUD(t)(r.Recv(b, make([]byte, 8), 0, &hb[i]))
		mustUD(t)(r.Recv(d, make([]byte, 8), 0, &hd[i]))
	}
	_, err := r.Submit()
	must(t, err)
	var c1, c2 rec
	mustUD(t)(r.CancelFd(b, CancelAll, &c1))
	waitUntil(t, r, func() bool { return c1.done() && hb[0].done() && hb[1].done() })
	if c1.last().Res != 2 || hd[0].done() || hd[1].done() {
		t.Fatalf("cancel fd res %d, other fd done %v %v", c1.last().Res, hd[0].done(), hd[1].done())
	}
	mustUD(t)(r.Cancel(0, CancelAny|CancelAll, &c2))
	waitUntil(t, r, func() bool { return c2.done() && hd[0].done() && hd[1].done() })
	if c2.last().Res != 2 {
		t.Fatalf("cancel any res %d, want 2", c2.last().Res)
	}
	for _, h := range append(hb[:], hd[:]...) {
		wantErrno(t, h.last(), unix.ECANCELED)
	}
}

// TestConnectionReset: the peer closes with SO_LINGER 0 (an RST); a pending
// recv and a later one get ECONNRESET or 0, never hang.
func TestConnectionReset(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	c, s := tcpPair(t)
	var h rec
	mustUD(t)(r.Recv(s, make([]byte, 64), 0, &h))
	_, err := r.Submit()
	must(t, err)
	must(t, unix.SetsockoptLinger(c, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}))
	must(t, unix.Close(c))
	waitUntil(t, r, h.done)
	if res := h.last().Res; res != 0 && res != -int32(unix.ECONNRESET) {
		t.Fatalf("recv after reset: res %d (%v)", res, h.last().Err())
	}
	var h2 rec
	mustUD(t)(r.Send(s, []byte("x"), unix.MSG_NOSIGNAL, &h2))
	waitUntil(t, r, h2.done)
	if res := h2.last().Res; res >= 0 && res != 1 {
		t.Fatalf("send after reset: res %d", res)
	}
}

func TestAccept(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	ln, sa := listenTCP(t)
	var h rec
	mustUD(t)(r.Accept(ln, unix.SOCK_CLOEXEC, &h))
	_, err := r.Submit()
	must(t, err)
	dialTCP(t, sa)
	waitUntil(t, r, h.done)
	fd := h.last().Res
	if fd < 0 {
		t.Fatalf("accept: %v", h.last().Err())
	}
	unix.Close(int(fd))
}

// TestAcceptMultishot accepts several connections from one SQE, then
// cancels it.
func TestAcceptMultishot(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	ln, sa := listenTCP(t)
	var h rec
	ud := mustUD(t)(r.AcceptMultishot(ln, unix.SOCK_CLOEXEC, &h))
	_, err := r.Submit()
	must(t, err)
	const n = 5
	for range n {
		dialTCP(t, sa)
	}
	waitUntil(t, r, func() bool { return len(h.cqes) >= n })
	for i, c := range h.cqes {
		if c.Res < 0 || !c.More() {
			t.Fatalf("accept cqe %d: %+v", i, c)
		}
		unix.Close(int(c.Res))
	}
	if r.InFlight() != 1 {
		t.Fatalf("in flight %d, want the armed accept", r.InFlight())
	}
	var hc rec
	mustUD(t)(r.Cancel(ud, 0, &hc))
	waitUntil(t, r, h.done)
	wantErrno(t, h.last(), unix.ECANCELED)
	waitUntil(t, r, hc.done)
	if r.InFlight() != 0 {
		t.Fatalf("in flight %d after cancel", r.InFlight())
	}
}

// TestSendZC sends with IORING_OP_SEND_ZC over loopback TCP: a result CQE
// with More, then a notification CQE; the data arrives intact.
func TestSendZC(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	c, s := tcpPair(t)
	msg := bytes.Repeat([]byte("zerocopy"), 8192) // 64 KiB
	var h rec
	mustUD(t)(r.SendZC(c, msg, 0, SendZCReportUsage, &h))
	got := make([]byte, 0, len(msg))
	buf := make([]byte, 16384)
	var hr rec
	for len(got) < len(msg) {
		hr = rec{}
		mustUD(t)(r.Recv(s, buf, 0, &hr))
		waitUntil(t, r, hr.done)
		if hr.last().Res <= 0 {
			t.Fatalf("recv: %d", hr.last().Res)
		}
		got = append(got, buf[:hr.last().Res]...)
	}
	waitUntil(t, r, h.done)
	if !bytes.Equal(got, msg) {
		t.Fatal("received data differs")
	}
	if len(h.cqes) != 2 {
		t.Fatalf("send-zc posted %d cqes, want 2: %+v", len(h.cqes), h.cqes)
	}
	res, notif := h.cqes[0], h.cqes[1]
	if res.Res != int32(len(msg)) || !res.More() || res.Notif() {
		t.Fatalf("result cqe %+v", res)
	}
	if !notif.Notif() || notif.More() {
		t.Fatalf("notification cqe %+v", notif)
	}
	t.Logf("send-zc notification res %#x (copied: %v)", uint32(notif.Res), notif.Res&NotifUsageZCCopied != 0)
}

// TestSendZCFixed sends from a registered buffer (IORING_RECVSEND_FIXED_BUF).
func TestSendZCFixed(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	must(t, err)
	t.Cleanup(func() { unix.Munmap(mem) })
	must(t, r.RegisterBuffers([][]byte{mem}))
	c, s := tcpPair(t)
	payload := mem[100:600]
	for i := range payload {
		payload[i] = byte(i)
	}
	var h rec
	sqe, ud, err := r.Start(&h, payload)
	must(t, err)
	sqe.PrepSendZCFixed(c, payload, 0, 0, 0)
	sqe.UserData = ud
	waitUntil(t, r, h.done)
	if len(h.cqes) != 2 || h.cqes[0].Res != int32(len(payload)) || !h.cqes[1].Notif() {
		t.Fatalf("send-zc fixed cqes %+v", h.cqes)
	}
	got := make([]byte, len(payload))
	for n := 0; n < len(got); {
		m, err := unix.Read(s, got[n:])
		must(t, err)
		n += m
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("payload differs")
	}
}

// TestPollAdd: a POLLIN poll completes when data arrives, with POLLIN in
// res; a POLLOUT poll on a full socket completes once the peer drains it;
// a cancelled poll gets ECANCELED.
func TestPollAdd(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	a, b := tcpPair(t)
	var hin rec
	mustUD(t)(r.PollAdd(b, unix.POLLIN, &hin))
	_, err := r.Submit()
	must(t, err)
	if _, err := r.Poll(); err != nil || hin.done() {
		t.Fatalf("POLLIN completed on an empty socket: %v %+v", err, hin.cqes)
	}
	_, err = unix.Write(a, []byte("x"))
	must(t, err)
	waitUntil(t, r, hin.done)
	if res := hin.last().Res; res < 0 || res&unix.POLLIN == 0 {
		t.Fatalf("POLLIN poll res %#x", res)
	}

	// Fill a's send buffer (and b's receive buffer) without blocking.
	must(t, unix.SetNonblock(a, true))
	chunk := make([]byte, 64<<10)
	for {
		if _, err := unix.Write(a, chunk); err == unix.EAGAIN {
			break
		} else {
			must(t, err)
		}
	}
	var hout rec
	mustUD(t)(r.PollAdd(a, unix.POLLOUT, &hout))
	// Give a wrong completion 10 ms to arrive: a wait on the ring that
	// returns early if it does.
	if _, err := r.Wait(1, 10*time.Millisecond); err != nil || hout.done() {
		t.Fatalf("POLLOUT completed on a full socket: %v %+v", err, hout.cqes)
	}
	drained := make(chan struct{})
	go func() { // drain b
		defer close(drained)
		buf := make([]byte, 1<<20)
		for {
			if n, err := unix.Read(b, buf); n <= 0 || err != nil {
				return
			}
		}
	}()
	waitUntil(t, r, hout.done)
	if res := hout.last().Res; res < 0 || res&unix.POLLOUT == 0 {
		t.Fatalf("POLLOUT poll res %#x", res)
	}
	// Stop the drain before b is closed: a reader left blocked on b would
	// read whatever socket later reuses its descriptor number.
	must(t, unix.Shutdown(b, unix.SHUT_RDWR))
	<-drained

	c, _ := socketpair(t)
	var hc, hcan rec
	ud := mustUD(t)(r.PollAdd(c, unix.POLLIN, &hc))
	_, err = r.Submit()
	must(t, err)
	mustUD(t)(r.Cancel(ud, 0, &hcan))
	waitUntil(t, r, func() bool { return hc.done() && hcan.done() })
	wantErrno(t, hc.last(), unix.ECANCELED)
}
