package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
)

func TestElectsOneLeader(t *testing.T) {
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("voters=%d", n), func(t *testing.T) {
			c := newCluster(t, n, false, nil)
			lead := c.waitLeader(c.ids)
			leaders := 0
			for _, id := range c.ids {
				st, err := c.node(id).Status()
				if err != nil {
					t.Fatal(err)
				}
				if st.Role == "leader" {
					leaders++
				}
			}
			if leaders != 1 {
				t.Fatalf("%d nodes say they lead, want 1 (agreed leader %d)", leaders, lead)
			}
		})
	}
}

func TestProposalsCommitInOrderOnAll(t *testing.T) {
	c := newCluster(t, 3, false, nil)
	var want []string
	var last uint64
	for i := range 30 {
		p := fmt.Sprintf("p%d", i)
		idx := c.propose(c.ids, p)
		if idx <= last {
			t.Fatalf("proposal %d committed at %d after %d", i, idx, last)
		}
		last = idx
		want = append(want, p)
	}
	c.waitApplied(c.ids, want)
	// Concurrent proposals: every one commits exactly once, all nodes
	// apply the same order.
	lead := c.waitLeader(c.ids)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.node(lead).Propose(ctx, fmt.Appendf(nil, "g%d-%d", g, i))
				cancel()
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent propose: %v", err)
	}
	all := c.apps[lead].seq()
	if len(all) != 70 {
		t.Fatalf("leader applied %d payloads, want 70", len(all))
	}
	c.waitApplied(c.ids, all)
	st, err := c.node(lead).Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.HighWatermark < 71 || len(st.Voters) != 3 {
		t.Fatalf("leader status %+v: want high watermark >= 71 and 3 voters", st)
	}
	for _, v := range st.Voters {
		if v.LastContact.IsZero() {
			t.Fatalf("voter %d: no last contact in %+v", v.ID, st)
		}
	}
}

func TestProposeOnFollowerNamesLeader(t *testing.T) {
	c := newCluster(t, 3, false, nil)
	lead := c.waitLeader(c.ids)
	f := c.others(lead)[0]
	_, err := c.node(f).Propose(context.Background(), []byte("x"))
	var nl *NotLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, ErrNotLeader) || nl.Leader != lead {
		t.Fatalf("propose on follower %d: %v, want NotLeaderError naming %d", f, err, lead)
	}
	if _, err := c.node(lead).Propose(context.Background(), nil); !errors.Is(err, ErrEmptyPayload) {
		t.Fatalf("empty propose: %v", err)
	}
}

func TestLeaderStopsNewLeaderAndCatchUp(t *testing.T) {
	c := newCluster(t, 3, false, nil)
	want := []string{c.proposeS("a"), c.proposeS("b")}
	old := c.waitLeader(c.ids)
	_, oldTerm := c.node(old).Leader()
	c.stop(old)
	rest := c.others(old)
	lead := c.waitLeader(rest)
	if _, term := c.node(lead).Leader(); term <= oldTerm {
		t.Fatalf("new leader %d in term %d, want after %d", lead, term, oldTerm)
	}
	for _, p := range []string{"c", "d", "e"} {
		c.propose(rest, p)
		want = append(want, p)
	}
	c.waitApplied(rest, want)
	c.start(old)
	c.waitApplied(c.ids, want)
}

func (c *testCluster) proposeS(p string) string { c.propose(c.ids, p); return p }

func TestMinorityCannotCommit(t *testing.T) {
	c := newCluster(t, 5, false, nil)
	want := []string{c.proposeS("a")}
	old := c.waitLeader(c.ids)
	// The old leader and one follower on one side, three on the other.
	minority := []uint64{old, c.others(old)[0]}
	majority := c.others(old)[1:]
	c.faults.Partition(minority, majority)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := c.node(old).Propose(ctx, []byte("lost"))
	cancel()
	if err == nil {
		t.Fatal("the minority's leader committed a proposal")
	}
	lead := c.waitLeader(majority)
	for _, p := range []string{"b", "c"} {
		c.propose(majority, p)
		want = append(want, p)
	}
	// Check-quorum: the old leader stepped down.
	if !wait.Until(10*time.Second, func() bool {
		st, err := c.node(old).Status()
		return err == nil && st.Role != "leader"
	}) {
		t.Fatalf("old leader %d still leads its minority", old)
	}
	c.faults.Heal()
	c.waitApplied(c.ids, want)
	if got := c.waitLeader(c.ids); got != lead {
		t.Logf("leader moved from %d to %d after the heal", lead, got)
	}
	for _, id := range c.ids {
		for _, p := range c.apps[id].seq() {
			if p == "lost" {
				t.Fatalf("node %d applied the minority's proposal", id)
			}
		}
	}
}

func TestRejoiningNodeDoesNotDepose(t *testing.T) {
	c := newCluster(t, 3, false, nil)
	c.proposeS("a")
	lead := c.waitLeader(c.ids)
	_, term := c.node(lead).Leader()
	f := c.others(lead)[0]
	c.faults.Isolate(f)
	// The isolated follower loses its leader and pre-votes in vain.
	if !wait.Until(10*time.Second, func() bool {
		st, err := c.node(f).Status()
		return err == nil && st.Role == "pre-candidate"
	}) {
		t.Fatalf("isolated node %d never pre-voted", f)
	}
	c.propose(c.others(f), "b")
	c.faults.Heal()
	c.waitApplied(c.ids, []string{"a", "b"})
	c.proposeS("c")
	c.waitApplied(c.ids, []string{"a", "b", "c"})
	if l, tm := c.node(lead).Leader(); l != lead || tm != term {
		t.Fatalf("leader %d term %d after the rejoin, want %d term %d", l, tm, lead, term)
	}
}

func TestRestartAllFromDisk(t *testing.T) {
	for _, snapBytes := range []int64{-1, 50} {
		t.Run(fmt.Sprintf("snapshot.bytes=%d", snapBytes), func(t *testing.T) {
			c := newCluster(t, 3, true, func(cfg *Config) { cfg.SnapshotBytes = snapBytes })
			var want []string
			for i := range 20 {
				want = append(want, c.proposeS(fmt.Sprintf("p%d", i)))
			}
			c.waitApplied(c.ids, want)
			for _, id := range c.ids {
				c.stop(id)
			}
			for _, id := range c.ids {
				c.reopen(id)
				c.start(id)
			}
			c.waitApplied(c.ids, want)
			if snapBytes > 0 {
				for _, id := range c.ids {
					if c.apps[id].restored <= 1 {
						t.Fatalf("node %d restarted without its snapshot (restored %d)", id, c.apps[id].restored)
					}
				}
			}
			want = append(want, c.proposeS("after"))
			c.waitApplied(c.ids, want)
		})
	}
}

func TestSnapshotCatchesUpLaggingNode(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprintf("disk=%v", disk), func(t *testing.T) {
			c := newCluster(t, 3, disk, func(cfg *Config) { cfg.SnapshotBytes = 64 })
			want := []string{c.proposeS("first")}
			c.waitApplied(c.ids, want)
			lead := c.waitLeader(c.ids)
			lag := c.others(lead)[0]
			c.stop(lag)
			for i := range 40 {
				want = append(want, c.proposeS(fmt.Sprintf("payload-%02d", i)))
			}
			first, err := c.stores[lead].FirstIndex()
			if err != nil {
				t.Fatal(err)
			}
			if first < 10 {
				t.Fatalf("leader's log starts at %d: not compacted", first)
			}
			if disk {
				c.reopen(lag)
			}
			c.start(lag)
			c.waitApplied(c.ids, want)
			if r := c.apps[lag].restored; r < first-1 {
				t.Fatalf("lagging node %d restored the snapshot at %d, want one at %d or later", lag, r, first-1)
			}
		})
	}
}

func TestFaultyNetworkSameSequence(t *testing.T) {
	c := newCluster(t, 3, false, nil)
	c.faults.SetAll(LinkFaults{Drop: 0.05, Duplicate: 0.05, Reorder: 0.05, Delay: 3 * time.Millisecond})
	var want []string
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 60 && time.Now().Before(deadline); i++ {
		want = append(want, c.proposeS(fmt.Sprintf("f%d", i)))
	}
	c.waitApplied(c.ids, want)
	st := c.faults.Stats()
	if st.Dropped == 0 || st.Duplicated == 0 || st.Reordered == 0 || st.Delayed == 0 {
		t.Fatalf("faults not injected: %+v", st)
	}
	t.Logf("%d proposals, faults %+v", len(want), st)
}

func TestVoterChanges(t *testing.T) {
	c := newCluster(t, 3, false, nil)
	want := []string{c.proposeS("a")}
	// Node 4 starts empty (not among the bootstrap voters) and joins as
	// an observer, then becomes a voter.
	c.ids = append(c.ids, 4)
	c.start(4)
	lead := c.waitLeader(c.ids[:3])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.node(lead).AddObserver(ctx, 4); err != nil {
		t.Fatal(err)
	}
	c.waitApplied(c.ids, want)
	st, err := c.node(lead).Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Observers) != 1 || st.Observers[0].ID != 4 || len(st.Voters) != 3 {
		t.Fatalf("status after AddObserver: %+v", st)
	}
	if _, err := c.node(lead).AddVoter(ctx, 4); err != nil {
		t.Fatal(err)
	}
	want = append(want, c.proposeS("b"))
	c.waitApplied(c.ids, want)
	// Remove the leader itself: it steps down and the others go on.
	if _, err := c.node(lead).RemoveNode(ctx, lead); err != nil {
		t.Fatal(err)
	}
	rest := c.others(lead)
	if !wait.Until(10*time.Second, func() bool {
		l := c.leaderAmong(rest)
		return l != 0 && l != lead
	}) {
		t.Fatal("no new leader after the leader removed itself")
	}
	st, err = c.node(c.waitLeader(rest)).Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Voters) != 3 {
		t.Fatalf("status after RemoveNode(%d): %+v", lead, st)
	}
	c.propose(rest, "c")
	want = append(want, "c")
	c.waitApplied(rest, want)
}

func TestTransferLeadership(t *testing.T) {
	c := newCluster(t, 3, false, nil)
	c.proposeS("a")
	lead := c.waitLeader(c.ids)
	to := c.others(lead)[1]
	if err := c.node(lead).TransferLeadership(to); err != nil {
		t.Fatal(err)
	}
	if !wait.Until(10*time.Second, func() bool { return c.leaderAmong(c.ids) == to }) {
		t.Fatalf("leadership did not move from %d to %d", lead, to)
	}
	c.proposeS("b")
	c.waitApplied(c.ids, []string{"a", "b"})
}
