package ioring

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkWake measures a cross-ring wake-up round trip (ring A wakes ring
// B, which wakes A back; both sleep in io_uring_enter between) with the
// two mechanisms a shard inbox could use: an eventfd whose read is armed on
// the sleeping ring (posters need no ring), and IORING_OP_MSG_RING (the
// poster needs its own ring). ns/op is one round trip, two wake-ups.
func BenchmarkWake(b *testing.B) {
	b.Run("eventfd", func(b *testing.B) { benchWake(b, false) })
	b.Run("msgring", func(b *testing.B) { benchWake(b, true) })
}

type waker struct {
	r     *Ring
	efd   int
	buf   [8]byte
	one   [8]byte
	got   int
	readH HandlerFunc
}

func (w *waker) arm() {
	if _, err := w.r.Read(w.efd, w.buf[:], 0, false, w.readH); err != nil && err != ErrClosed {
		panic(err)
	}
}

func newWaker(msg bool) *waker {
	w := &waker{}
	w.one[0] = 1
	o := Options{Entries: 64}
	if msg {
		o.OnMessage = HandlerFunc(func(CQE) { w.got++ })
	}
	r, err := New(o)
	if err != nil {
		panic(err)
	}
	w.r = r
	if !msg {
		w.efd, _ = unix.Eventfd(0, unix.EFD_CLOEXEC)
		w.readH = func(CQE) { w.got++; w.arm() }
		w.arm()
		w.r.Submit()
	}
	return w
}

func (w *waker) close() {
	w.r.Close()
	if w.efd > 0 {
		unix.Close(w.efd)
	}
}

// poke wakes peer from w's thread.
func (w *waker) poke(peer *waker, msg bool) {
	if msg {
		if _, err := w.r.MsgRing(peer.r.Fd(), 0, 1, nil); err != nil {
			panic(err)
		}
		w.r.Submit()
		return
	}
	unix.RawSyscall(unix.SYS_WRITE, uintptr(peer.efd), uintptr(unsafe.Pointer(&w.one[0])), 8)
}

func (w *waker) waitOne() {
	for w.got == 0 {
		w.r.Wait(1, time.Second)
	}
	w.got--
}

func benchWake(b *testing.B, msg bool) {
	if ok, why := Available(); !ok {
		b.Skip(why)
	}
	aReady, bReady := make(chan *waker), make(chan *waker)
	done := make(chan struct{})
	n := b.N
	go func() { // ring B: echo every wake-up back to A
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		wb := newWaker(msg)
		bReady <- wb
		wa := <-aReady
		for i := 0; i < n; i++ {
			wb.waitOne()
			wb.poke(wa, msg)
		}
		<-done
		wb.close()
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wa := newWaker(msg)
	wb := <-bReady
	aReady <- wa
	b.ResetTimer()
	for i := 0; i < n; i++ {
		wa.poke(wb, msg)
		wa.waitOne()
	}
	b.StopTimer()
	close(done)
	wa.close()
}

// BenchmarkShardPost measures Shard.Post to an idle ring shard and the
// closure's answer back over a channel (the inbox path deferred work uses).
func BenchmarkShardPost(b *testing.B) {
	if ok, why := Available(); !ok {
		b.Skip(why)
	}
	s, err := NewRingShard(0, ShardOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ch := make(chan struct{}, 1)
	fn := func() { ch <- struct{}{} }
	b.ReportAllocs()
	for b.Loop() {
		s.Post(fn)
		<-ch
	}
}

// BenchmarkShardPostChan is BenchmarkShardPost on a channel shard (the
// netpoll engine's), the baseline.
func BenchmarkShardPostChan(b *testing.B) {
	s := NewShard(0, ShardOptions{})
	defer s.Close()
	ch := make(chan struct{}, 1)
	fn := func() { ch <- struct{}{} }
	b.ReportAllocs()
	for b.Loop() {
		s.Post(fn)
		<-ch
	}
}
