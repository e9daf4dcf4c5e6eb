package quorum

import (
	"math/rand/v2"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// LinkFaults are the faults injected on one directed link. Fractions
// are probabilities per message in [0, 1].
type LinkFaults struct {
	// Drop loses the message.
	Drop float64
	// Duplicate sends it twice.
	Duplicate float64
	// Reorder holds it back until after the link's next message.
	Reorder float64
	// Delay, when positive, delivers each message after a random delay
	// in [0, Delay) (which also reorders).
	Delay time.Duration
}

// FaultStats counts what Faults did to messages.
type FaultStats struct {
	Sent, Dropped, Cut, Duplicated, Reordered, Delayed int
}

// Faults injects faults into the transports it wraps: per directed
// link (from, to) it drops, duplicates, reorders and delays messages
// (LinkFaults) and it cuts links (Partition, Isolate, Heal). Each
// link's decisions come from its own random source seeded from the
// seed and the link, so a run's decisions on a link depend only on
// the messages sent on it. Safe for concurrent use.
type Faults struct {
	seed uint64

	mu     sync.Mutex
	all    LinkFaults
	links  map[[2]uint64]*faultLink
	cut    map[[2]uint64]bool
	stats  FaultStats
	closed map[uint64]bool
}

type faultLink struct {
	faults *LinkFaults // nil: Faults.all
	rnd    *rand.Rand
	held   []*raftpb.Message
}

// NewFaults returns a Faults that injects nothing until told.
func NewFaults(seed uint64) *Faults {
	return &Faults{seed: seed, links: map[[2]uint64]*faultLink{}, cut: map[[2]uint64]bool{}, closed: map[uint64]bool{}}
}

// Wrap returns inner, the transport of node id, with f's faults on the
// messages it sends.
func (f *Faults) Wrap(id uint64, inner Transport) Transport {
	return &faultTransport{f: f, id: id, inner: inner}
}

// SetAll sets the faults of every link that has none of its own.
func (f *Faults) SetAll(lf LinkFaults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = lf
}

// SetLink sets the faults of the link from -> to.
func (f *Faults) SetLink(from, to uint64, lf LinkFaults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.link(from, to).faults = &lf
}

// Partition cuts every link between nodes of different groups; links
// inside a group and links of nodes in no group are left as they are.
func (f *Faults) Partition(groups ...[]uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, g := range groups {
		for j, h := range groups {
			if i == j {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					f.cut[[2]uint64{a, b}] = true
				}
			}
		}
	}
}

// Isolate cuts every link to and from node id.
func (f *Faults) Isolate(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut[[2]uint64{id, 0}] = true
}

// Heal restores every cut link (not the LinkFaults).
func (f *Faults) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cut)
}

// Stats returns the counts so far.
func (f *Faults) Stats() FaultStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *Faults) link(from, to uint64) *faultLink {
	k := [2]uint64{from, to}
	l := f.links[k]
	if l == nil {
		l = &faultLink{rnd: rand.New(rand.NewPCG(f.seed, from<<32^to))}
		f.links[k] = l
	}
	return l
}

func (f *Faults) isCut(from, to uint64) bool {
	return f.cut[[2]uint64{from, to}] || f.cut[[2]uint64{from, 0}] || f.cut[[2]uint64{to, 0}]
}

// delivery is one message to send now or after delay.
type delivery struct {
	m     *raftpb.Message
	delay time.Duration
}

// plan decides the fate of msgs sent by from.
func (f *Faults) plan(from uint64, msgs []*raftpb.Message) []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []delivery
	for _, m := range msgs {
		f.stats.Sent++
		to := m.GetTo()
		if f.isCut(from, to) {
			f.stats.Cut++
			continue
		}
		l := f.link(from, to)
		lf := f.all
		if l.faults != nil {
			lf = *l.faults
		}
		if lf.Drop > 0 && l.rnd.Float64() < lf.Drop {
			f.stats.Dropped++
			continue
		}
		n := 1
		if lf.Duplicate > 0 && l.rnd.Float64() < lf.Duplicate {
			f.stats.Duplicated++
			n = 2
		}
		if lf.Reorder > 0 && len(l.held) == 0 && l.rnd.Float64() < lf.Reorder {
			f.stats.Reordered++
			l.held = append(l.held, m)
			continue
		}
		for range n {
			d := delivery{m: m}
			if lf.Delay > 0 {
				d.delay = time.Duration(l.rnd.Int64N(int64(lf.Delay)))
				f.stats.Delayed++
			}
			out = append(out, d)
		}
		for _, h := range l.held {
			out = append(out, delivery{m: h})
		}
		l.held = l.held[:0]
	}
	return out
}

type faultTransport struct {
	f     *Faults
	id    uint64
	inner Transport
}

func (t *faultTransport) Start(h Handler) error {
	t.f.mu.Lock()
	delete(t.f.closed, t.id)
	t.f.mu.Unlock()
	return t.inner.Start(h)
}

func (t *faultTransport) Send(msgs []*raftpb.Message) {
	var now []*raftpb.Message
	for _, d := range t.f.plan(t.id, msgs) {
		if d.delay <= 0 {
			now = append(now, d.m)
			continue
		}
		m := d.m
		time.AfterFunc(d.delay, func() {
			t.f.mu.Lock()
			closed := t.f.closed[t.id] || t.f.isCut(t.id, m.GetTo())
			t.f.mu.Unlock()
			if !closed {
				t.inner.Send([]*raftpb.Message{m})
			}
		})
	}
	if len(now) > 0 {
		t.inner.Send(now)
	}
}

func (t *faultTransport) Close() error {
	t.f.mu.Lock()
	t.f.closed[t.id] = true
	t.f.mu.Unlock()
	return t.inner.Close()
}
