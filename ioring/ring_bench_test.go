package ioring

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// counter is an allocation-free handler.
type counter struct {
	n   int
	res int32
}

func (c *counter) Complete(q CQE) { c.n++; c.res = q.Res }

// TestHotPathAllocs: starting, submitting and reaping ops allocates
// nothing once the table and pinner caches are warm.
func TestHotPathAllocs(t *testing.T) {
	r := newRing(t, Options{Entries: 64})
	a, b := socketpair(t)
	var h counter
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	cases := []struct {
		name string
		f    func()
	}{
		{"nop", func() {
			r.Nop(&h)
			r.Wait(1, 0)
		}},
		{"send+recv", func() {
			n := h.n
			r.Send(a, msg, 0, &h)
			r.Recv(b, buf, 0, &h)
			for h.n < n+2 {
				r.Wait(1, time.Second)
			}
		}},
		{"timeout", func() {
			r.Timeout(0, 0, 0, &h)
			r.Wait(1, time.Second)
		}},
	}
	for _, c := range cases {
		c.f() // warm up
		if got := testing.AllocsPerRun(200, c.f); got != 0 {
			t.Errorf("%s: %.1f allocs per op, want 0", c.name, got)
		}
	}
}

// BenchmarkNopRoundTrip is one nop submitted and reaped per iteration: the
// fixed cost of a ring round trip (one io_uring_enter).
func BenchmarkNopRoundTrip(b *testing.B) {
	r := newRing(b, Options{Entries: 64})
	var h counter
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Nop(&h); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Wait(1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNopBatch32 submits and reaps 32 nops per io_uring_enter; ns/op
// is per nop.
func BenchmarkNopBatch32(b *testing.B) {
	r := newRing(b, Options{Entries: 64})
	var h counter
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		r.Nop(&h)
		if n++; n%32 == 0 {
			if _, err := r.Wait(32, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	r.Wait(uint32(r.InFlight()), time.Second)
}

// BenchmarkSendRecv compares a 64-byte (and 16 KiB) send+recv on a unix
// socketpair through the ring (both ops in one enter) with write(2)+read(2).
func BenchmarkSendRecv(b *testing.B) {
	for _, size := range []int{64, 16384} {
		b.Run("ring/"+itoa(size), func(b *testing.B) {
			r := newRing(b, Options{Entries: 64})
			x, y := socketpair(b)
			msg, buf := make([]byte, size), make([]byte, size)
			var h counter
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				want := h.n + 2
				r.Send(x, msg, 0, &h)
				r.Recv(y, buf, unix.MSG_WAITALL, &h)
				for h.n < want {
					if _, err := r.Wait(uint32(want-h.n), 0); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("syscall/"+itoa(size), func(b *testing.B) {
			x, y := socketpair(b)
			msg, buf := make([]byte, size), make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := unix.Write(x, msg); err != nil {
					b.Fatal(err)
				}
				for got := 0; got < size; {
					n, err := unix.Read(y, buf[got:])
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
			}
		})
	}
}

func itoa(n int) string {
	if n >= 1024 {
		return itoa(n/1024) + "k"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
