package ioring

import (
	"errors"
	"testing"
	"time"
)

// urgentRec is a rec whose op WaitFor may complete.
type urgentRec struct{ rec }

func (*urgentRec) Urgent() {}

// order records the order in which handlers ran.
type order struct {
	name string
	log  *[]string
}

func (o *order) Complete(CQE) { *o.log = append(*o.log, o.name) }

// TestWaitForHoldsOthers: WaitFor runs the urgent op it waits for and
// holds the completions of other ops, even those posted before it, which
// the next Poll dispatches in the order the kernel posted them; a Wait
// with held CQEs returns them without sleeping.
func TestWaitForHoldsOthers(t *testing.T) {
	r := newRing(t, Options{Entries: 16})
	var ran []string
	a, b := &order{"a", &ran}, &order{"b", &ran}
	if _, err := r.Nop(a); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Nop(b); err != nil {
		t.Fatal(err)
	}
	u := &urgentRec{}
	if _, err := r.Timeout(20*time.Millisecond, 0, 0, u); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitFor(u.done, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !u.done() || len(ran) != 0 || r.Held() != 2 {
		t.Fatalf("after WaitFor: urgent done %v, others ran %v, %d held; want done, none, 2", u.done(), ran, r.Held())
	}
	if st := r.Stats(); st.Held != 2 {
		t.Fatalf("Stats.Held %d, want 2", st.Held)
	}
	n, err := r.Wait(1, time.Minute)
	if err != nil || n != 2 || r.Held() != 0 {
		t.Fatalf("Wait: %d, %v, %d held; want the 2 held at once", n, err, r.Held())
	}
	if len(ran) != 2 || ran[0] != "a" || ran[1] != "b" {
		t.Fatalf("held CQEs ran as %v, want [a b]", ran)
	}
}

// TestWaitForNestedInHandler: a handler that waits (as a segment roll run
// from a completion would) gets its urgent op; CQEs held meanwhile run
// after the rest of the outer Reap's batch, still in order.
func TestWaitForNestedInHandler(t *testing.T) {
	r := newRing(t, Options{Entries: 16})
	var ran []string
	later := &order{"later", &ran}
	u := &urgentRec{}
	var waitErr error
	outer := HandlerFunc(func(CQE) {
		ran = append(ran, "outer")
		if _, err := r.Nop(later); err != nil {
			t.Error(err)
		}
		if _, err := r.Timeout(10*time.Millisecond, 0, 0, u); err != nil {
			t.Error(err)
		}
		waitErr = r.WaitFor(u.done, 5*time.Second)
	})
	second := &order{"second", &ran}
	if _, err := r.Nop(outer); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Nop(second); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, r, func() bool { return len(ran) == 3 })
	if waitErr != nil || !u.done() {
		t.Fatalf("nested WaitFor: %v, urgent done %v", waitErr, u.done())
	}
	if ran[0] != "outer" || ran[1] != "second" || ran[2] != "later" {
		t.Fatalf("ran %v, want [outer second later]", ran)
	}
}

// TestWaitForTimeout: a condition that never holds ends with
// ErrWaitTimeout after about the timeout.
func TestWaitForTimeout(t *testing.T) {
	r := newRing(t, Options{Entries: 8})
	start := time.Now()
	err := r.WaitFor(func() bool { return false }, 30*time.Millisecond)
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("WaitFor: %v, want ErrWaitTimeout", err)
	}
	if d := time.Since(start); d < 25*time.Millisecond || d > 2*time.Second {
		t.Fatalf("timed out after %v, want ~30ms", d)
	}
}

// TestWaitForSeesUrgentInReapBatch: a handler waits for an urgent op that
// completed in the same Reap batch, after the handler's own CQE; WaitFor
// dispatches it from the batch at once instead of waiting on the CQ, and
// Reap does not dispatch it a second time.
func TestWaitForSeesUrgentInReapBatch(t *testing.T) {
	r := newRing(t, Options{Entries: 16})
	u := &urgentRec{}
	var waitErr error
	var took time.Duration
	ran := false
	outer := HandlerFunc(func(CQE) {
		ran = true
		start := time.Now()
		waitErr = r.WaitFor(u.done, 2*time.Second)
		took = time.Since(start)
	})
	if _, err := r.Nop(outer); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Nop(u); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, r, func() bool { return ran && u.done() })
	if waitErr != nil || took > time.Second {
		t.Fatalf("WaitFor in a handler: %v after %v; the urgent CQE was already reaped", waitErr, took)
	}
	if _, err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	if len(u.cqes) != 1 {
		t.Fatalf("urgent op got %d CQEs, want 1", len(u.cqes))
	}
}
