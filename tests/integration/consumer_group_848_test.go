package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroup848 runs two franz-go consumers in a KIP-848
// consumer-protocol group (kgo.ServerSideBalancer, the broker's uniform
// assignor): they split the partitions, every record is consumed once and
// committed with the member epoch; when one leaves the other takes every
// partition; the committed offsets and the group survive a restart, after
// which the remaining consumer rejoins and reads only the new records.
func TestConsumerGroup848(t *testing.T) {
	b := startBroker(t, t.TempDir(), "group.consumer.heartbeat.interval.ms=300")
	ctx := t.Context()
	const topic, group, parts, perPart = "cg848", "g848", 4, 10
	createTopic(t, ctx, b, topic, parts)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(n int, tag string) {
		t.Helper()
		for p := int32(0); p < parts; p++ {
			for i := 0; i < n; i++ {
				r := &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", tag, p, i)}
				if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatalf("produce: %v", err)
				}
			}
		}
	}
	produce(perPart, "a")

	member := func() *kgo.Client {
		return newClient(t, b, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.StickyBalancer()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, prod)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("ConsumerGroupDescribe: %v %+v", err, resp)
		}
		return resp.Groups[0]
	}
	// counts returns the partition count of each member, sorted, once the
	// group is Stable.
	counts := func() []int {
		g := describe()
		if g.ErrorCode != 0 || g.State != "Stable" {
			return nil
		}
		var out []int
		for _, m := range g.Members {
			n := 0
			for _, tp := range m.Assignment.TopicPartitions {
				n += len(tp.Partitions)
			}
			out = append(out, n)
		}
		sort.Ints(out)
		return out
	}

	c1, c2 := member(), member()
	var mu sync.Mutex
	seen := map[string]int{}
	pollInto := func(pctx context.Context, cl *kgo.Client) {
		fs := cl.PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) {
			mu.Lock()
			seen[string(r.Value)]++
			mu.Unlock()
		})
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Logf("commit: %v", err) // a commit racing a rebalance may be stale; the next one lands
		}
	}
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	waitFor(t, 30*time.Second, "both members to own two partitions each", func() bool {
		for _, cl := range []*kgo.Client{c1, c2} {
			pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			pollInto(pctx, cl)
			cancel()
		}
		c := counts()
		return len(c) == 2 && c[0] == 2 && c[1] == 2
	})
	waitFor(t, 30*time.Second, "every record to be consumed", func() bool {
		for _, cl := range []*kgo.Client{c1, c2} {
			pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			pollInto(pctx, cl)
			cancel()
		}
		return total() == parts*perPart
	})
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s consumed %d times", v, n)
		}
	}
	for _, cl := range []*kgo.Client{c1, c2} {
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("final commit: %v", err)
		}
	}

	// c2 leaves (epoch -1): c1 gets every partition.
	c2.Close()
	waitFor(t, 30*time.Second, "the remaining member to own all partitions", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		pollInto(pctx, c1)
		cancel()
		c := counts()
		return len(c) == 1 && c[0] == parts
	})

	// ringctl describes the group through ConsumerGroupDescribe and refuses
	// to reset its offsets while it has a member.
	var desc []struct {
		State    string `json:"state"`
		Protocol string `json:"protocol"`
		Members  []struct {
			MemberID string `json:"member_id"`
		} `json:"members"`
		Offsets []struct {
			Partition int32  `json:"partition"`
			Committed int64  `json:"committed_offset"`
			End       int64  `json:"log_end_offset"`
			MemberID  string `json:"member_id"`
		} `json:"offsets"`
	}
	ringctlJSON(t, b, &desc, "group", "describe", group)
	if len(desc) != 1 || desc[0].State != "Stable" || desc[0].Protocol != "uniform" || len(desc[0].Members) != 1 || len(desc[0].Offsets) != parts {
		t.Fatalf("ringctl group describe = %+v, want Stable, uniform, one member, %d partitions", desc, parts)
	}
	for _, o := range desc[0].Offsets {
		if o.Committed != perPart || o.End != perPart || o.MemberID != desc[0].Members[0].MemberID {
			t.Fatalf("ringctl group describe offsets %+v", desc[0].Offsets)
		}
	}
	if r := ringctl(t, b, 1, "", "group", "reset-offsets", group, "--topic", topic, "--to-earliest"); !strings.Contains(r.stderr, "stop its consumers first") {
		t.Fatalf("ringctl reset-offsets of a live consumer group: %q", r.stderr)
	}

	adm := newAdmin(t, b)
	checkOffsets := func(when string) {
		t.Helper()
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("%s: FetchOffsets: %v", when, err)
		}
		for p := int32(0); p < parts; p++ {
			if o, ok := offs.Lookup(topic, p); !ok || o.At != perPart {
				t.Fatalf("%s: committed offset of partition %d is %+v, want %d", when, p, o, perPart)
			}
		}
	}
	checkOffsets("before the restart")
	epochBefore := describe().Epoch

	b.Restart()
	checkOffsets("after the restart")
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"consumer"}
	lresp, err := lreq.RequestWith(ctx, prod)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	found := false
	for _, g := range lresp.Groups {
		found = found || g.Group == group && g.GroupType == "consumer"
	}
	if !found {
		t.Fatalf("ListGroups with type consumer after the restart: %+v", lresp.Groups)
	}

	// c1's old member id is gone: it rejoins and reads only the new records.
	produce(1, "b")
	mu.Lock()
	clear(seen)
	mu.Unlock()
	waitFor(t, 60*time.Second, "the new records after the restart", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		pollInto(pctx, c1)
		cancel()
		return total() >= parts
	})
	// The rejoin (c1's heartbeat learns UNKNOWN_MEMBER_ID) may come after
	// c1 has read the new records with its old assignment: wait for it.
	waitFor(t, 30*time.Second, "the group epoch to move past the one before the restart", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		pollInto(pctx, c1)
		cancel()
		return describe().Epoch > epochBefore
	})
	mu.Lock()
	defer mu.Unlock()
	for v := range seen {
		if v[0] != 'b' {
			t.Fatalf("record %s consumed again after the restart", v)
		}
	}
}

// TestConsumerGroup848Disabled: with group.coordinator.rebalance.protocols
// =classic the broker does not advertise ConsumerGroupHeartbeat (68) and
// ConsumerGroupDescribe (69), and a franz-go consumer asking for the
// server-side balancer falls back to a classic group that consumes.
func TestConsumerGroup848Disabled(t *testing.T) {
	b := startBroker(t, t.TempDir(), "group.coordinator.rebalance.protocols=classic", "group.initial.rebalance.delay.ms=0")
	ctx := t.Context()
	createTopic(t, ctx, b, "cl", 1)
	prod := newClient(t, b, kgo.DefaultProduceTopic("cl"))
	if err := prod.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, prod)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 68 || k.ApiKey == 69 {
			t.Fatalf("API key %d advertised with the consumer protocol disabled", k.ApiKey)
		}
	}
	cl := newClient(t, b, kgo.ConsumerGroup("g-classic"), kgo.ConsumeTopics("cl"), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumeN(t, ctx, cl, 1, 30*time.Second)
	lreq := kmsg.NewPtrListGroupsRequest()
	lresp, err := lreq.RequestWith(ctx, prod)
	if err != nil || len(lresp.Groups) != 1 || lresp.Groups[0].GroupType != "classic" {
		t.Fatalf("ListGroups: %v %+v, want the one classic group", err, lresp)
	}
}
