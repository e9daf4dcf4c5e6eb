package group

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConsumerGroupScale joins many members (long member ids) to one
// group, lets every one of them heartbeat once, then lets all their
// sessions expire together, and reports how long each phase took on the
// group's shard. CG_SCALE_MEMBERS sets the member count (default 1000), CG_SCALE_ID_BYTES
// the member id length (default 1000).
// "one at a time" answers every join before the next arrives (each pays for
// its own assignment); "bursts" queues 100 joins on the shard before it runs
// them, as concurrent clients do, and they share one. Expiries fire
// together in both.
func TestConsumerGroupScale(t *testing.T) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("CG_SCALE_MEMBERS")); err == nil && v > 0 {
		n = v
	}
	for _, burst := range []int{1, 100} {
		cgScale(t, n, burst)
	}
}

func cgScale(t *testing.T, n, burst int) {
	h := newCGHarness(t, map[string]int{"t": 64})
	h.env.queue = true
	idBytes := 1000
	if v, err := strconv.Atoi(os.Getenv("CG_SCALE_ID_BYTES")); err == nil && v > 0 {
		idBytes = v
	}
	pad := strings.Repeat("x", idBytes)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%06d-%s", i, pad)
	}
	start := time.Now()
	epochs := make([]int32, n)
	for i, id := range ids {
		h.m.consumerHeartbeat(cgHeartbeatArgs{group: "g", memberID: id, epoch: 0, rebalanceTimeoutMillis: 30000, names: []string{"t"}, namesSet: true, image: h.im},
			func(r cgHeartbeatResult) {
				mustOK(t, r)
				epochs[i] = r.epoch
			})
		if (i+1)%burst == 0 {
			h.env.drain()
		}
	}
	h.env.drain()
	join := time.Since(start)
	h.env.queue = false
	start = time.Now()
	for i, id := range ids {
		r := h.hb(cgHeartbeatArgs{memberID: id, epoch: epochs[i], owned: nil})
		mustOK(t, r)
	}
	hb := time.Since(start)
	recs := len(h.env.records)
	start = time.Now()
	h.env.queue = true
	h.env.advance(h.m.cfg.consumerSessionTimeout + time.Second)
	h.env.drain()
	expire := time.Since(start)
	if s := h.m.describeConsumer("g"); s.state != "Empty" || len(s.members) != 0 {
		t.Fatalf("after expiry: %s with %d members", s.state, len(s.members))
	}
	cgCheckOwners(t, h.m.groups["g"].cg)
	t.Logf("bursts of %d: %d members: join %v (%v each), heartbeat %v, expire %v; epoch records: %d on join, %d on expiry",
		burst, n, join, join/time.Duration(n), hb, expire, recs, len(h.env.records)-recs)
}

// cgCheckOwners checks cg.owners against the members' partitions.
func cgCheckOwners(t *testing.T, cg *consumerGroup) {
	t.Helper()
	want := map[tpID]string{}
	for _, mem := range cg.members {
		for tp := range mem.assigned {
			if o, ok := want[tp]; ok {
				t.Fatalf("partition %v owned by %s and %s", tp, o, mem.id)
			}
			want[tp] = mem.id
		}
		for tp := range mem.revoking {
			if o, ok := want[tp]; ok {
				t.Fatalf("partition %v owned by %s and %s", tp, o, mem.id)
			}
			want[tp] = mem.id
		}
	}
	if len(want) != len(cg.owners) {
		t.Fatalf("owners index has %d partitions, members own %d", len(cg.owners), len(want))
	}
	for tp, id := range want {
		if cg.owners[tp] != id {
			t.Fatalf("owners index says %v is %q's, it is %q's", tp, cg.owners[tp], id)
		}
	}
}
