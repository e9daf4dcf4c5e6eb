package integration

// Share groups (KIP-932) with franz-go's share consumer: two consumers that
// accept split the records between them with each record delivered once;
// released records come back with a higher delivery count; accepted
// progress (the share-partition start offset) survives a clean restart, and
// records acquired but not acknowledged when the broker is killed are
// delivered again after it (at-least-once).

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type shareRec struct {
	p   int32
	off int64
}

// setShareEarliest sets share.auto.offset.reset=earliest on group.
func setShareEarliest(t *testing.T, ctx context.Context, b *Broker, group string) {
	t.Helper()
	cl := newClient(t, b)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("IncrementalAlterConfigs %s: %v", group, err)
	}
}

func produceShare(t *testing.T, ctx context.Context, b *Broker, topic string, n int) {
	t.Helper()
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func shareConsumer(t *testing.T, b *Broker, group, topic string) *kgo.Client {
	return newClient(t, b, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
}

// pollAccept polls cl until ctx ends, accepting every record, and sends
// each to out.
func pollAccept(ctx context.Context, t *testing.T, cl *kgo.Client, out chan<- shareRec) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				t.Errorf("poll: %v", e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			r.Ack(kgo.AckAccept)
			out <- shareRec{r.Partition, r.Offset}
		})
		if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("flush acks: %v", err)
		}
	}
}

func TestShareGroupTwoConsumersExactlyOnce(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group, n = "share-once", "share-once-g", 600
	createTopic(t, ctx, b, topic, 3)
	setShareEarliest(t, ctx, b, group)
	produceShare(t, ctx, b, topic, n)

	got := make(chan shareRec, 2*n)
	pctx, pcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	per := make([]int, 2)
	var mu sync.Mutex
	for i := range 2 {
		cl := shareConsumer(t, b, group, topic)
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make(chan shareRec, 2*n)
			go func() {
				for r := range mine {
					mu.Lock()
					per[i]++
					mu.Unlock()
					got <- r
				}
			}()
			pollAccept(pctx, t, cl, mine)
			close(mine)
		}()
	}
	seen := map[shareRec]int{}
	deadline := time.After(45 * time.Second)
	for len(seen) < n {
		select {
		case r := <-got:
			seen[r]++
		case <-deadline:
			t.Fatalf("got %d distinct records of %d", len(seen), n)
		}
	}
	// Anything delivered a second time would arrive within a poll or two.
	quiet := time.After(2 * time.Second)
wait:
	for {
		select {
		case r := <-got:
			seen[r]++
		case <-quiet:
			break wait
		}
	}
	pcancel()
	wg.Wait()
	for r, c := range seen {
		if c != 1 {
			t.Errorf("partition %d offset %d delivered %d times", r.p, r.off, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct records, want %d", len(seen), n)
	}
	t.Logf("consumer records: %v", per)

	// The group is listed and described as a share group.
	adm := newAdmin(t, b)
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := lg[group]; !ok || g.ProtocolType != "share" {
		t.Errorf("ListGroups: %+v", lg[group])
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group, "no-such-share-group"}
	resp, err := req.RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Groups[0].ErrorCode != 0 || resp.Groups[0].GroupState == "" {
		t.Errorf("ShareGroupDescribe %s: %+v", group, resp.Groups[0])
	}
	if resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("ShareGroupDescribe of an unknown group: error %d, want GROUP_ID_NOT_FOUND", resp.Groups[1].ErrorCode)
	}
}

func TestShareGroupReleaseRedelivers(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group, n = "share-release", "share-release-g", 20
	createTopic(t, ctx, b, topic, 1)
	setShareEarliest(t, ctx, b, group)
	produceShare(t, ctx, b, topic, n)

	cl := shareConsumer(t, b, group, topic)
	released := map[int64]bool{}
	for len(released) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if dc := r.DeliveryCount(); dc != 1 {
				t.Errorf("first delivery of offset %d has delivery count %d", r.Offset, dc)
			}
			r.Ack(kgo.AckRelease)
			released[r.Offset] = true
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("flush acks: %v", err)
		}
	}
	again := map[int64]int32{}
	for len(again) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			again[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("flush acks: %v", err)
		}
	}
	for off := range int64(n) {
		if again[off] != 2 {
			t.Errorf("offset %d redelivered with delivery count %d, want 2", off, again[off])
		}
	}
}

// describeStart returns the share-partition start offset of partition 0.
func describeStart(t *testing.T, ctx context.Context, b *Broker, group, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatalf("DescribeShareGroupOffsets: %v", err)
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		t.Fatalf("DescribeShareGroupOffsets: %v", err)
	}
	return g.Topics[0].Partitions[0].StartOffset
}

func TestShareGroupStateSurvivesRestart(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group, n = "share-restart", "share-restart-g", 50
	createTopic(t, ctx, b, topic, 1)
	setShareEarliest(t, ctx, b, group)
	produceShare(t, ctx, b, topic, n)

	// Accept all n, then wait until the SPSO is persisted.
	cl := shareConsumer(t, b, group, topic)
	out := make(chan shareRec, 4*n)
	pctx, pcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { pollAccept(pctx, t, cl, out); close(done) }()
	for i := 0; i < n; i++ {
		select {
		case <-out:
		case <-ctx.Done():
			t.Fatalf("accepted %d of %d before the restart", i, n)
		}
	}
	pcancel()
	<-done
	cl.Close() // sends the last acknowledgements
	// No wait for the flusher: a clean stop writes the latest SPSO.
	b.Stop()
	b.Start()
	if got := describeStart(t, ctx, b, group, topic); got != n {
		t.Fatalf("SPSO after restart = %d, want %d", got, n)
	}
	// Acquire the next records without acknowledging them, then kill the broker.
	produceShare(t, ctx, b, topic, 10)
	held := newClient(t, b, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	var first []int64
	for len(first) == 0 && ctx.Err() == nil {
		held.PollFetches(ctx).EachRecord(func(r *kgo.Record) { first = append(first, r.Offset) })
	}
	if first[0] != n {
		t.Fatalf("after restart the first record delivered is offset %d, want %d (accepted records came back)", first[0], n)
	}
	b.Kill()
	held.Close()
	b.Start()
	// The records in flight at the crash are delivered again.
	cl2 := shareConsumer(t, b, group, topic)
	again := map[int64]int32{}
	for len(again) < 10 && ctx.Err() == nil {
		fs := cl2.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < n {
				t.Errorf("accepted offset %d delivered again", r.Offset)
			}
			again[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		})
		_ = cl2.FlushAcks(ctx)
	}
	for off := int64(n); off < n+10; off++ {
		if _, ok := again[off]; !ok {
			t.Errorf("offset %d held at the crash was not delivered again", off)
		}
	}
}

// ringctl describes a share group (state, members, share-partition start
// offsets), refuses to reset it while it has members, and resets it with
// AlterShareGroupOffsets once it is empty: a new consumer then gets the
// records again.
func TestShareGroupRingctl(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group, n = "share-ctl", "share-ctl-g", 40
	createTopic(t, ctx, b, topic, 1)
	setShareEarliest(t, ctx, b, group)
	produceShare(t, ctx, b, topic, n)

	consume := func(want int) {
		t.Helper()
		cl := shareConsumer(t, b, group, topic)
		got := make(chan shareRec, 4*n)
		pctx, pcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); pollAccept(pctx, t, cl, got) }()
		seen := map[shareRec]bool{}
		deadline := time.After(30 * time.Second)
		for len(seen) < want {
			select {
			case r := <-got:
				seen[r] = true
			case <-deadline:
				t.Fatalf("share consumer got %d records of %d", len(seen), want)
			}
		}
		var desc []struct {
			State        string `json:"state"`
			ProtocolType string `json:"protocol_type"`
			Members      []struct {
				MemberID string `json:"member_id"`
			} `json:"members"`
			Offsets []struct {
				Committed int64 `json:"committed_offset"`
				End       int64 `json:"log_end_offset"`
			} `json:"offsets"`
		}
		waitFor(t, 10*time.Second, "ringctl shows the start offset at the end", func() bool {
			desc = nil
			ringctlJSON(t, b, &desc, "group", "describe", group)
			return len(desc) == 1 && len(desc[0].Offsets) == 1 && desc[0].Offsets[0].Committed == n
		})
		if desc[0].ProtocolType != "share" || desc[0].State != "Stable" || len(desc[0].Members) != 1 || desc[0].Offsets[0].End != n {
			t.Fatalf("ringctl group describe = %+v", desc)
		}
		if r := ringctl(t, b, 1, "", "group", "reset-offsets", group, "--topic", topic, "--to-earliest"); !strings.Contains(r.stderr, "stop its consumers first") {
			t.Fatalf("ringctl reset-offsets of a live share group: %q", r.stderr)
		}
		pcancel()
		<-done
		cl.Close() // leaves the group
	}
	consume(n)
	waitFor(t, 10*time.Second, "the share group is empty after its consumer left", func() bool {
		r := runCLI(t, toolBinary(t, "ringctl"), "", "-b", b.Addr, "group", "reset-offsets", group, "--topic", topic, "--to-earliest")
		return r.code == 0
	})
	consume(n) // every record again from the start offset 0
}
