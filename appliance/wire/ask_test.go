package wire

import (
	"sync"
	"testing"
	"time"
)

// owner is a stand-in for a shard: one goroutine running posted closures
// in order.
type owner struct {
	in chan func()
	wg sync.WaitGroup
}

func newOwner() *owner {
	o := &owner{in: make(chan func(), 16)}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for fn := range o.in {
			fn()
		}
	}()
	return o
}

func (o *owner) post(fn func()) { o.in <- fn }
func (o *owner) stop()          { close(o.in); o.wg.Wait() }

func TestAskTypedReply(t *testing.T) {
	o := newOwner()
	defer o.stop()
	done := make(chan struct{})
	state := map[string]int{"g": 7} // owned by o's goroutine
	type answer struct {
		n     int
		found bool
	}
	r := Ask(done, o.post, func(reply func(answer)) {
		n, ok := state["g"]
		reply(answer{n, ok})
		reply(answer{-1, false}) // a second reply is dropped, never blocks
	})
	if !r.Posted() {
		t.Fatal("ask not posted")
	}
	got, ok := r.Wait()
	if !ok || got != (answer{7, true}) {
		t.Fatalf("Wait = %+v %v, want {7 true} true", got, ok)
	}
	// The owner is still serving after the dropped second reply.
	if v, ok := Ask(done, o.post, func(reply func(string)) { reply("next") }).Wait(); !ok || v != "next" {
		t.Fatalf("second ask = %q %v", v, ok)
	}
}

func TestAskZeroReply(t *testing.T) {
	var r Reply[int]
	if r.Posted() {
		t.Fatal("zero Reply reports posted")
	}
	if v, ok := r.Wait(); ok || v != 0 {
		t.Fatalf("zero Reply Wait = %d %v", v, ok)
	}
}

func TestAskAfterClose(t *testing.T) {
	done := make(chan struct{})
	close(done)
	posted := false
	r := Ask(done, func(func()) { posted = true }, func(reply func(int)) { reply(1) })
	if posted || r.Posted() {
		t.Fatal("Ask posted after the broker closed")
	}
	if _, ok := r.Wait(); ok {
		t.Fatal("Wait succeeded after the broker closed")
	}
}

// An owner that never answers: Wait gives up when the broker closes.
func TestAskWaitGivesUpOnClose(t *testing.T) {
	done := make(chan struct{})
	var held func()
	r := Ask(done, func(fn func()) { held = fn }, func(reply func(int)) {})
	if !r.Posted() || held == nil {
		t.Fatal("ask not posted")
	}
	res := make(chan bool, 1)
	go func() {
		_, ok := r.Wait()
		res <- ok
	}()
	close(done)
	select {
	case ok := <-res:
		if ok {
			t.Fatal("Wait reported an answer that never came")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not give up after the broker closed")
	}
	held() // the late closure runs without blocking
}
