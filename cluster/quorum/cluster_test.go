package quorum

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
)

// testApp is an Application that records the payloads it applies; its
// snapshot is that list.
type testApp struct {
	mu       sync.Mutex
	payloads []string
	index    uint64
	// restored is the index of the latest snapshot restored.
	restored uint64
}

func (a *testApp) Apply(c Committed) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.Index <= a.index {
		return fmt.Errorf("apply at %d after %d", c.Index, a.index)
	}
	a.payloads = append(a.payloads, string(c.Payload))
	a.index = c.Index
	return nil
}

func (a *testApp) Snapshot() ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b []byte
	for _, p := range a.payloads {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b, nil
}

func (a *testApp) Restore(snap []byte, index, _ uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ps []string
	for len(snap) > 0 {
		n, k := binary.Uvarint(snap)
		if k <= 0 || uint64(len(snap)-k) < n {
			return errors.New("bad test snapshot")
		}
		ps = append(ps, string(snap[k:k+int(n)]))
		snap = snap[k+int(n):]
	}
	a.payloads, a.index = ps, index
	a.restored = index
	return nil
}

func (a *testApp) seq() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.payloads)
}

// testCluster is a quorum of in-process nodes on a Hub behind Faults.
type testCluster struct {
	t      testing.TB
	cfg    Config
	ids    []uint64
	hub    *Hub
	faults *Faults
	mu     sync.Mutex
	nodes  map[uint64]*Node
	apps   map[uint64]*testApp
	stores map[uint64]Storage
	// disk: stores are DiskStorage under dirs.
	disk bool
	dirs map[uint64]string
}

func testConfig() Config {
	return Config{TickInterval: 5 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond, SnapshotBytes: -1}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newCluster(t testing.TB, n int, disk bool, tweak func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{
		t: t, cfg: testConfig(), hub: NewHub(), faults: NewFaults(1),
		nodes: map[uint64]*Node{}, apps: map[uint64]*testApp{}, stores: map[uint64]Storage{}, disk: disk, dirs: map[uint64]string{},
	}
	for i := 1; i <= n; i++ {
		c.ids = append(c.ids, uint64(i))
	}
	c.cfg.Voters = c.ids
	if tweak != nil {
		tweak(&c.cfg)
	}
	for _, id := range c.ids {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.stop(id)
		}
		for _, s := range c.stores {
			s.Close()
		}
	})
	return c
}

// start starts node id on its storage (kept across restarts).
func (c *testCluster) start(id uint64) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stores[id]
	if s == nil {
		if c.disk {
			c.dirs[id] = c.t.TempDir()
			ds, err := OpenDiskStorage(c.dirs[id], discard())
			if err != nil {
				c.t.Fatal(err)
			}
			s = ds
		} else {
			s = NewMemStorage()
		}
		c.stores[id] = s
	}
	cfg := c.cfg
	cfg.ID = id
	app := &testApp{}
	n, err := New(cfg, s, c.faults.Wrap(id, c.hub.Transport(id)), app, discard())
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id], c.apps[id] = n, app
}

func (c *testCluster) stop(id uint64) {
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n != nil {
		n.Stop()
	}
}

// reopen closes node id's disk storage and opens it again (a restart of
// the process).
func (c *testCluster) reopen(id uint64) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stores[id].Close(); err != nil {
		c.t.Fatal(err)
	}
	ds, err := OpenDiskStorage(c.dirs[id], discard())
	if err != nil {
		c.t.Fatal(err)
	}
	c.stores[id] = ds
}

func (c *testCluster) node(id uint64) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// leaderAmong returns the one node of ids that leads with every running
// node of ids agreeing on it, or 0.
func (c *testCluster) leaderAmong(ids []uint64) uint64 {
	var lead, term uint64
	for _, id := range ids {
		n := c.node(id)
		if n == nil {
			continue
		}
		l, tm := n.Leader()
		if l == 0 || (lead != 0 && (l != lead || tm != term)) {
			return 0
		}
		lead, term = l, tm
	}
	if lead == 0 || !slices.Contains(ids, lead) || c.node(lead) == nil {
		return 0
	}
	return lead
}

func (c *testCluster) waitLeader(ids []uint64) uint64 {
	c.t.Helper()
	var lead uint64
	if !wait.Until(20*time.Second, func() bool { lead = c.leaderAmong(ids); return lead != 0 }) {
		c.t.Fatalf("no agreed leader among %v", ids)
	}
	return lead
}

// propose proposes payload through whichever of ids leads, retrying on
// ErrNotLeader and dropped proposals, within 20 s.
func (c *testCluster) propose(ids []uint64, payload string) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		lead := c.waitLeader(ids)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		idx, err := c.node(lead).Propose(ctx, []byte(payload))
		cancel()
		if err == nil {
			return idx
		}
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrProposalDropped) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrStopped) {
			c.t.Fatalf("propose %q on %d: %v", payload, lead, err)
		}
	}
	c.t.Fatalf("propose %q: no commit within 20 s", payload)
	return 0
}

// waitApplied waits until every running node of ids has applied want.
func (c *testCluster) waitApplied(ids []uint64, want []string) {
	c.t.Helper()
	ok := wait.Until(20*time.Second, func() bool {
		for _, id := range ids {
			if c.node(id) == nil {
				continue
			}
			if !slices.Equal(c.apps[id].seq(), want) {
				return false
			}
		}
		return true
	})
	if !ok {
		for _, id := range ids {
			c.t.Logf("node %d applied %d: %v", id, len(c.apps[id].seq()), c.apps[id].seq())
		}
		c.t.Fatalf("nodes %v did not all apply %d payloads", ids, len(want))
	}
}

func (c *testCluster) others(id uint64) []uint64 {
	var out []uint64
	for _, x := range c.ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}
