package ioring

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestTimeout(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	cases := []struct {
		name  string
		d     time.Duration
		count uint32
		nops  int
		want  int32
	}{
		{"fires", 20 * time.Millisecond, 0, 0, -int32(unix.ETIME)},
		{"count reached", 10 * time.Second, 2, 2, 0},
	}
	for _, c := range cases { // no t.Run: the ring is this goroutine's
		var h, hn rec
		start := time.Now()
		mustUD(t)(r.Timeout(c.d, c.count, 0, &h))
		for range c.nops {
			mustUD(t)(r.Nop(&hn))
		}
		waitUntil(t, r, h.done)
		el := time.Since(start)
		if h.last().Res != c.want {
			t.Fatalf("%s: res %d (%v), want %d", c.name, h.last().Res, h.last().Err(), c.want)
		}
		if c.want == -int32(unix.ETIME) && el < c.d {
			t.Fatalf("%s: fired after %v, before %v", c.name, el, c.d)
		}
		if c.want == 0 && el > time.Second {
			t.Fatalf("%s: took %v", c.name, el)
		}
	}
}

func TestTimeoutRemove(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	var ht, hr, hr2 rec
	ud := mustUD(t)(r.Timeout(time.Hour, 0, 0, &ht))
	_, err := r.Submit()
	must(t, err)
	mustUD(t)(r.TimeoutRemove(ud, &hr))
	waitUntil(t, r, func() bool { return ht.done() && hr.done() })
	wantErrno(t, ht.last(), unix.ECANCELED)
	if hr.last().Res != 0 {
		t.Fatalf("timeout remove res %d", hr.last().Res)
	}
	mustUD(t)(r.TimeoutRemove(ud, &hr2))
	waitUntil(t, r, hr2.done)
	wantErrno(t, hr2.last(), unix.ENOENT)
}

// TestMsgRing wakes a ring owned by another goroutine (its own locked
// thread) from this one, as shards do for cross-shard work.
func TestMsgRing(t *testing.T) {
	type msg struct {
		ud  uint64
		res int32
	}
	got := make(chan msg, 4)
	ready := make(chan int)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		n := 0
		target, err := New(Options{Entries: 4, OnMessage: HandlerFunc(func(c CQE) {
			got <- msg{c.UserData, c.Res}
			n++
		})})
		if err != nil {
			t.Error(err)
			close(ready)
			return
		}
		defer target.Close()
		ready <- target.Fd()
		for n < 3 {
			if _, err := target.Wait(1, 5*time.Second); err != nil {
				t.Error(err)
				return
			}
		}
		<-stop
	}()
	fd, ok := <-ready
	if !ok {
		t.Fatal("target ring failed")
	}
	r := newRing(t, Options{Entries: 4})
	var hs rec
	for i := 1; i <= 3; i++ {
		mustUD(t)(r.MsgRing(fd, int32(100+i), uint64(i), &hs))
	}
	waitUntil(t, r, func() bool { return len(hs.cqes) == 3 })
	for _, c := range hs.cqes {
		if c.Res != 0 {
			t.Fatalf("sender cqe %+v (%v)", c, c.Err())
		}
	}
	for i := 1; i <= 3; i++ {
		select {
		case m := <-got:
			if m.ud != uint64(i) || m.res != int32(100+i) {
				t.Fatalf("message %d: %+v", i, m)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d not delivered", i)
		}
	}
	close(stop)
	wg.Wait()
	if _, err := r.MsgRing(fd, 0, 1<<32, nil); err == nil {
		t.Fatal("MsgRing accepted user_data >= 1<<32")
	}
	// A message to a fd that is not a ring fails on the sender side.
	var hb rec
	mustUD(t)(r.MsgRing(tempFile(t, nil), 1, 1, &hb))
	waitUntil(t, r, hb.done)
	wantErrno(t, hb.last(), unix.EBADFD)
}
