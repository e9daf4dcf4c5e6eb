package ioring

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestAvailable(t *testing.T) {
	ok, reason := Available()
	if !ok {
		t.Skipf("io_uring not available: %s", reason)
	}
	if !strings.Contains(reason, "available") {
		t.Fatalf("reason %q", reason)
	}
}

// TestSetupFlags checks which flag set was accepted, and that the fallback
// path yields a working ring when the better flags are ruled out.
func TestSetupFlags(t *testing.T) {
	if os.Getenv("IORING_TEST_MODE") != "" {
		t.Skip("checks the default flag selection")
	}
	cases := []struct {
		name    string
		opts    Options
		want    uint32 // flags that must be set
		notWant uint32
	}{
		{"best", Options{Entries: 8}, SetupSingleIssuer | SetupCoopTaskrun | SetupDeferTaskrun, 0},
		{"no-defer", Options{Entries: 8, DisableFlags: SetupDeferTaskrun}, SetupSingleIssuer | SetupCoopTaskrun, SetupDeferTaskrun},
		{"no-single-issuer", Options{Entries: 8, DisableFlags: SetupSingleIssuer}, SetupCoopTaskrun, SetupSingleIssuer | SetupDeferTaskrun},
		{"plain", Options{Entries: 8, DisableFlags: setupKnownFlagMask}, 0, SetupSingleIssuer | SetupCoopTaskrun | SetupDeferTaskrun},
		{"no-sqarray", Options{Entries: 8, NoSQArray: true}, SetupNoSQArray | SetupDeferTaskrun, 0},
		{"cqsize", Options{Entries: 8, CQEntries: 64}, SetupCQSize, 0},
		{"sqpoll", Options{Entries: 8, SQPoll: true, SQPollIdle: 10 * time.Millisecond}, SetupSQPoll, SetupDeferTaskrun},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRing(t, c.opts)
			f := r.SetupFlags()
			if f&c.want != c.want || f&c.notWant != 0 {
				t.Fatalf("setup flags %#x: want %#x set and %#x clear", f, c.want, c.notWant)
			}
			if r.Features()&FeatSingleMmap == 0 || r.Features()&FeatExtArg == 0 {
				t.Fatalf("features %#x lack SINGLE_MMAP or EXT_ARG", r.Features())
			}
			if c.opts.CQEntries != 0 && r.CQEntries() != c.opts.CQEntries {
				t.Fatalf("CQ entries %d, want %d", r.CQEntries(), c.opts.CQEntries)
			}
			// The ring works: a batch of nops round-trips.
			var h rec
			for i := 0; i < 5; i++ {
				mustUD(t)(r.Nop(&h))
			}
			waitUntil(t, r, func() bool { return len(h.cqes) == 5 })
			for _, q := range h.cqes {
				if q.Res != 0 || q.More() {
					t.Fatalf("nop cqe %+v", q)
				}
			}
			if r.InFlight() != 0 {
				t.Fatalf("in flight %d after all completions", r.InFlight())
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{{Entries: 1 << 16}, {Entries: 64, CQEntries: 8}, {SQPollIdle: -1}}
	for _, o := range bad {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want error", o)
		}
	}
	o := Options{}
	if err := o.Validate(); err != nil || o.Entries != 256 || o.ShutdownTimeout != time.Second {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
}

func TestProbe(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	for _, op := range []Op{OpNop, OpAccept, OpRecv, OpSend, OpSendZC, OpMsgRing, OpSplice, OpFallocate,
		OpFsync, OpReadFixed, OpWriteFixed, OpWritev, OpTimeout, OpTimeoutRemove, OpAsyncCancel, OpClose} {
		if !r.Supports(op) {
			t.Errorf("Supports(%d) = false on Linux 6.18", op)
		}
	}
	if r.Supports(Op(255)) {
		t.Error("Supports(255) = true")
	}
	if r.LastOp() < OpSendmsgZC {
		t.Errorf("LastOp %d < %d", r.LastOp(), OpSendmsgZC)
	}
}

// TestSQFullSubmitsAndContinues starts more ops than the SQ holds: start
// submits the full SQ and carries on.
func TestSQFullSubmitsAndContinues(t *testing.T) {
	r := newRing(t, Options{Entries: 4, CQEntries: 64})
	var h rec
	for i := 0; i < 20; i++ {
		mustUD(t)(r.Nop(&h))
	}
	waitUntil(t, r, func() bool { return len(h.cqes) == 20 })
	// Raw NextSQE reports a full SQ with nil.
	for i := 0; i < int(r.SQEntries()); i++ {
		if s := r.NextSQE(); s == nil {
			t.Fatalf("NextSQE %d = nil before the SQ is full", i)
		} else {
			s.PrepNop()
		}
	}
	if r.NextSQE() != nil {
		t.Fatal("NextSQE on a full SQ is not nil")
	}
	if n, err := r.Submit(); err != nil || n != int(r.SQEntries()) {
		t.Fatalf("Submit = %d, %v", n, err)
	}
	r.Reap() // user_data 0: dropped silently
	if st := r.Stats(); st.Untracked != 0 {
		t.Fatalf("untracked %d", st.Untracked)
	}
}

// TestCQOverflow posts far more completions than the CQ holds before
// reaping: the kernel parks the excess on its overflow list
// (IORING_FEAT_NODROP) and Reap must deliver every one exactly once.
func TestCQOverflow(t *testing.T) {
	for _, name := range []string{"defer", "plain"} {
		t.Run(name, func(t *testing.T) {
			o := Options{Entries: 4, CQEntries: 4}
			if name == "plain" {
				o.DisableFlags = setupKnownFlagMask
			}
			r := newRing(t, o)
			const total = 64
			seen := map[uint64]int{}
			h := HandlerFunc(func(c CQE) { seen[c.UserData]++ })
			uds := map[uint64]bool{}
			for i := 0; i < total; i++ {
				s, _, ud, err := r.start(h, nil, nil)
				must(t, err)
				s.PrepNop()
				s.UserData = ud
				uds[ud] = true
				if (i+1)%4 == 0 {
					_, err := r.Submit()
					must(t, err)
				}
			}
			// Nothing reaped yet: the CQ (4 slots) overflowed.
			if r.Stats().Completions != 0 {
				t.Fatal("completions reaped early")
			}
			n := r.Reap()
			if n != total || len(seen) != total {
				t.Fatalf("reaped %d (%d distinct), want %d", n, len(seen), total)
			}
			for ud, c := range seen {
				if c != 1 || !uds[ud] {
					t.Fatalf("user_data %#x seen %d times (known %v)", ud, c, uds[ud])
				}
			}
			st := r.Stats()
			if st.Overflows == 0 || st.Dropped != 0 {
				t.Fatalf("stats %+v: want overflows > 0 and nothing dropped", st)
			}
		})
	}
}

// TestWaitTimeout bounds a wait with EXT_ARG: nothing completes, Wait
// returns after about the timeout with no error.
func TestWaitTimeout(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	start := time.Now()
	n, err := r.Wait(1, 30*time.Millisecond)
	el := time.Since(start)
	if err != nil || n != 0 {
		t.Fatalf("Wait = %d, %v", n, err)
	}
	if el < 25*time.Millisecond || el > 2*time.Second {
		t.Fatalf("Wait took %v, want about 30ms", el)
	}
}

// TestCloseCancelsInFlight closes a ring with recvs that never complete:
// their handlers see ECANCELED and Close returns nil.
func TestCloseCancelsInFlight(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(Options{Entries: 8, ShutdownTimeout: 2 * time.Second})
	must(t, err)
	a, _ := socketpair(t)
	var hs [3]rec
	bufs := make([][]byte, 3)
	for i := range hs {
		bufs[i] = make([]byte, 64)
		mustUD(t)(r.Recv(a, bufs[i], 0, &hs[i]))
	}
	_, err = r.Submit()
	must(t, err)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i := range hs {
		if len(hs[i].cqes) != 1 {
			t.Fatalf("recv %d got %d cqes", i, len(hs[i].cqes))
		}
		wantErrno(t, hs[i].cqes[0], unix.ECANCELED)
	}
	if _, err := r.Nop(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Nop after Close: %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestStaleUserData: a CQE whose user_data names a recycled slot is
// counted, not delivered to the slot's new owner.
func TestStaleUserData(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	var h rec
	ud := mustUD(t)(r.Nop(&h))
	waitUntil(t, r, h.done)
	r.dispatch(CQE{UserData: ud})
	r.dispatch(CQE{UserData: 1<<40 | 12345})
	if len(h.cqes) != 1 || r.Stats().Untracked != 2 {
		t.Fatalf("cqes %d, untracked %d", len(h.cqes), r.Stats().Untracked)
	}
}

// TestSingleIssuerOtherThread documents the single-issuer rule: another OS
// thread gets EEXIST when it submits to a SINGLE_ISSUER ring, and also when
// it merely waits on a DEFER_TASKRUN ring.
func TestSingleIssuerOtherThread(t *testing.T) {
	r := newRing(t, Options{Entries: 4})
	if r.SetupFlags()&SetupSingleIssuer == 0 || r.SetupFlags()&SetupSQPoll != 0 {
		t.Skip("no SINGLE_ISSUER, or SQPOLL (the poller thread is the issuer)")
	}
	var wg sync.WaitGroup
	var waitErr, submitErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // a different thread from the creator's
		defer runtime.UnlockOSThread()
		_, waitErr = r.enter(0, 0, enterGetEvents, nil, 0)
		r.NextSQE().PrepNop()
		_, submitErr = r.enter(r.flushSQ(), 0, 0, nil, 0)
	}()
	wg.Wait()
	if !errors.Is(submitErr, unix.EEXIST) {
		t.Fatalf("submit from another thread: %v, want EEXIST", submitErr)
	}
	if r.SetupFlags()&SetupDeferTaskrun != 0 && !errors.Is(waitErr, unix.EEXIST) {
		t.Fatalf("wait from another thread on a DEFER_TASKRUN ring: %v, want EEXIST", waitErr)
	}
	// The owner can still submit the nop.
	if n, err := r.Wait(1, time.Second); err != nil || n != 1 {
		t.Fatalf("owner Wait: %d, %v", n, err)
	}
}

// TestTableGrows starts more ops than the initial table holds.
func TestTableGrows(t *testing.T) {
	r := newRing(t, Options{Entries: 4, CQEntries: 4})
	var h rec
	n := 3 * chunkSize
	for i := 0; i < n; i++ {
		mustUD(t)(r.Nop(&h))
	}
	waitUntil(t, r, func() bool { return len(h.cqes) == n })
	if len(r.tab.chunks) < 3 {
		t.Fatalf("%d chunks", len(r.tab.chunks))
	}
}
