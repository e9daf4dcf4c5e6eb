package group

import (
	"fmt"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func assignTopics(spec map[string]int32) map[string]cgTopic {
	out := map[string]cgTopic{}
	i := byte(1)
	for name, n := range spec {
		var id TopicID
		id[0] = i
		copy(id[1:], name)
		i++
		out[name] = cgTopic{id: id, partitions: n}
	}
	return out
}

func subsOf(n int, topics ...string) []cgSubscriber {
	var out []cgSubscriber
	for i := 0; i < n; i++ {
		s := cgSubscriber{id: fmt.Sprintf("m%02d", i), topics: map[string]bool{}}
		for _, t := range topics {
			s.topics[t] = true
		}
		out = append(out, s)
	}
	return out
}

// checkAssignment verifies every subscribed partition is assigned exactly
// once, to a member subscribed to its topic, and returns the counts.
func checkAssignment(t *testing.T, subs []cgSubscriber, topics map[string]cgTopic, got map[string]partSet) map[string]int {
	t.Helper()
	byID := map[TopicID]string{}
	for n, tp := range topics {
		byID[tp.id] = n
	}
	seen := map[tpID]string{}
	counts := map[string]int{}
	for _, s := range subs {
		for tp := range got[s.id] {
			if prev, dup := seen[tp]; dup {
				t.Fatalf("%v assigned to %s and %s", tp, prev, s.id)
			}
			seen[tp] = s.id
			if !s.topics[byID[tp.topic]] {
				t.Fatalf("%s got %s it does not subscribe to", s.id, byID[tp.topic])
			}
			counts[s.id]++
		}
	}
	for n, tp := range topics {
		subscribed := false
		for _, s := range subs {
			subscribed = subscribed || s.topics[n]
		}
		for p := int32(0); p < tp.partitions && subscribed; p++ {
			if _, ok := seen[tpID{tp.id, p}]; !ok {
				t.Fatalf("%s:%d not assigned", n, p)
			}
		}
	}
	return counts
}

func spread(counts map[string]int, subs []cgSubscriber) (lo, hi int) {
	lo = 1 << 30
	for _, s := range subs {
		lo, hi = min(lo, counts[s.id]), max(hi, counts[s.id])
	}
	return lo, hi
}

func TestUniformAssignBalancedAndSticky(t *testing.T) {
	topics := assignTopics(map[string]int32{"a": 7, "b": 5})
	for n := 1; n <= 13; n++ {
		subs := subsOf(n, "a", "b")
		got := uniformAssign(subs, topics, nil)
		lo, hi := spread(checkAssignment(t, subs, topics, got), subs)
		if hi-lo > 1 {
			t.Fatalf("%d members: counts from %d to %d", n, lo, hi)
		}
	}
	// Adding a member moves only what it needs to get its share.
	subs := subsOf(3, "a", "b")
	prev := uniformAssign(subs, topics, nil)
	subs4 := subsOf(4, "a", "b")
	next := uniformAssign(subs4, topics, prev)
	checkAssignment(t, subs4, topics, next)
	moved := 0
	for _, s := range subs {
		for tp := range prev[s.id] {
			if !next[s.id][tp] {
				moved++
			}
		}
	}
	if moved != len(next["m03"]) || moved != 3 {
		t.Fatalf("moved %d partitions, the new member got %d (want 3 = 12/4)", moved, len(next["m03"]))
	}
	// Removing a member keeps the others' partitions.
	next2 := uniformAssign(subs, topics, next)
	for _, s := range subs {
		for tp := range next[s.id] {
			if !next2[s.id][tp] {
				t.Fatalf("%s lost %v when another member left", s.id, tp)
			}
		}
	}
}

func TestUniformAssignHeterogeneous(t *testing.T) {
	topics := assignTopics(map[string]int32{"a": 6, "b": 2})
	subs := append(subsOf(2, "a"), cgSubscriber{id: "z1", topics: map[string]bool{"a": true, "b": true}},
		cgSubscriber{id: "z2", topics: map[string]bool{"b": true}})
	got := uniformAssign(subs, topics, nil)
	counts := checkAssignment(t, subs, topics, got)
	if lo, hi := spread(counts, subs); hi-lo > 1 {
		t.Fatalf("counts %v", counts)
	}
}

func TestRangeAssign(t *testing.T) {
	topics := assignTopics(map[string]int32{"a": 5})
	subs := subsOf(2, "a")
	got := rangeAssign(subs, topics)
	checkAssignment(t, subs, topics, got)
	id := topics["a"].id
	for p := int32(0); p < 3; p++ {
		if !got["m00"][tpID{id, p}] {
			t.Fatalf("m00 lacks a:%d: %v", p, got)
		}
	}
	for p := int32(3); p < 5; p++ {
		if !got["m01"][tpID{id, p}] {
			t.Fatalf("m01 lacks a:%d: %v", p, got)
		}
	}
	if got := computeAssignment("range", nil, topics, nil); len(got) != 0 {
		t.Fatalf("no members: %v", got)
	}
}

func TestConsumerGroupConfig(t *testing.T) {
	c, err := ConfigFromProps(map[string]string{})
	if err != nil || c.consumerHeartbeatInterval != 5*time.Second || c.consumerSessionTimeout != 45*time.Second ||
		len(c.consumerAssignors) != 2 || c.consumerAssignors[0] != "uniform" || !c.consumerProtocol {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ConfigFromProps(map[string]string{"group.consumer.heartbeat.interval.ms": "300",
		"group.consumer.assignors": "range", "group.coordinator.rebalance.protocols": "classic", "group.consumer.max.size": "3"})
	if err != nil || c.consumerHeartbeatInterval != 300*time.Millisecond || len(c.consumerAssignors) != 1 ||
		c.consumerAssignors[0] != "range" || c.consumerProtocol || c.consumerMaxSize != 3 {
		t.Fatalf("overrides: %+v %v", c, err)
	}
	if _, err := ConfigFromProps(map[string]string{"group.consumer.assignors": "roundrobin"}); err == nil {
		t.Fatal("an unknown assignor was accepted")
	}
	tab := wire.NewTable()
	Register(tab, nil)
	if a, ok := tab.Lookup(68); !ok || a.Max != 1 {
		t.Fatalf("ConsumerGroupHeartbeat registered up to v%d (registered: %v)", a.Max, ok)
	}
}

func TestConsumerGroupMaxSize(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 1})
	h.m.cfg.consumerMaxSize = 1
	mustOK(t, h.join("A", "t"))
	if r := h.join("B", "t"); r.err != kerr.GroupMaxSizeReached {
		t.Fatalf("second member of a group of at most one: %v", r.err)
	}
}
