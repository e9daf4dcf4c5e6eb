package quorum

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"go.etcd.io/raft/v3/raftpb"
)

// failingStorage fails every Append once fail is set.
type failingStorage struct {
	Storage
	fail atomic.Bool
}

var errInjected = errors.New("injected storage failure")

func (s *failingStorage) Append(hs *raftpb.HardState, ents []*raftpb.Entry, sync bool) error {
	if s.fail.Load() {
		return errInjected
	}
	return s.Storage.Append(hs, ents, sync)
}

// failingApp fails Apply of the payload "poison".
type failingApp struct{ testApp }

func (a *failingApp) Apply(c Committed) error {
	if string(c.Payload) == "poison" {
		return errInjected
	}
	return a.testApp.Apply(c)
}

func singleNode(t *testing.T, s Storage, app Application) *Node {
	t.Helper()
	cfg := testConfig()
	cfg.ID, cfg.Voters = 1, []uint64{1}
	n, err := New(cfg, s, NewHub().Transport(1), app, discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

func proposeOn(t *testing.T, n *Node, p string) (uint64, error) {
	t.Helper()
	// A one-voter quorum elects itself within an election timeout.
	if !wait.Until(10*time.Second, func() bool { l, _ := n.Leader(); return l == n.ID() }) {
		t.Fatalf("node %d did not elect itself", n.ID())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.Propose(ctx, []byte(p))
}

func TestStorageFailureStopsNode(t *testing.T) {
	s := &failingStorage{Storage: NewMemStorage()}
	n := singleNode(t, s, &testApp{})
	if _, err := proposeOn(t, n, "a"); err != nil {
		t.Fatal(err)
	}
	s.fail.Store(true)
	_, err := proposeOn(t, n, "b")
	if !errors.Is(err, ErrStopped) || !errors.Is(err, errInjected) {
		t.Fatalf("propose on failing storage: %v, want ErrStopped wrapping the failure", err)
	}
	<-n.Done()
	if !errors.Is(n.Err(), errInjected) {
		t.Fatalf("Err() = %v", n.Err())
	}
	if _, err := n.Status(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Status after the failure: %v", err)
	}
}

func TestApplyFailureStopsNode(t *testing.T) {
	n := singleNode(t, NewMemStorage(), &failingApp{})
	if _, err := proposeOn(t, n, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := proposeOn(t, n, "poison"); !errors.Is(err, ErrStopped) {
		t.Fatalf("propose of a payload the application refuses: %v", err)
	}
	<-n.Done()
	if !errors.Is(n.Err(), errInjected) {
		t.Fatalf("Err() = %v", n.Err())
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{},
		{ID: 1, Voters: []uint64{1, 1}},
		{ID: 1, Voters: []uint64{0}},
		{ID: 1, TickInterval: 100 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", c)
		}
	}
	c := Config{ID: 1}.withDefaults()
	if err := c.Validate(); err != nil || c.electionTicks() != 20 || c.heartbeatTicks() != 2 {
		t.Fatalf("defaults: %+v, %v (%d, %d ticks)", c, err, c.electionTicks(), c.heartbeatTicks())
	}
}
