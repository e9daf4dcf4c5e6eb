package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupsConfluentPython runs testdata/groups_confluent.py: two
// cooperative-sticky consumers share a topic, and a static member restarted
// within its session timeout gets its partitions back without revoking the
// other member.
func TestGroupsConfluentPython(t *testing.T) {
	py := needTool(t, systemPython, "-c", "import confluent_kafka")
	script, err := filepath.Abs(filepath.Join("testdata", "groups_confluent.py"))
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, "", groupBrokerOverrides...)
	out := runTool(t, 4*time.Minute, "", py, script, b.Addr, "pyg")
	t.Logf("groups_confluent.py:\n%s", out)
	if !strings.Contains(out, "OK") {
		t.Errorf("script did not report OK")
	}
}

// TestGroupsKcat: kcat -G consumes a topic in a group, stops, and a second
// run resumes from the committed offset (only the records produced since).
func TestGroupsKcat(t *testing.T) {
	kcat := needTool(t, "kcat", "-V")
	b := startBroker(t, "", groupBrokerOverrides...)
	createTopic(t, t.Context(), b, "kg", 1)
	lines := func(from, n int) []string {
		var out []string
		for i := from; i < from+n; i++ {
			out = append(out, fmt.Sprintf("kcat group line %04d", i))
		}
		return out
	}
	consume := func() []string {
		out := runTool(t, 90*time.Second, "", kcat, "-b", b.Addr, "-G", "kcat-group", "kg", "-e", "-q",
			"-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=100", "-X", "session.timeout.ms=6000")
		out = strings.TrimSuffix(out, "\n")
		if out == "" {
			return nil
		}
		return strings.Split(out, "\n")
	}
	first := lines(0, 100)
	runTool(t, 60*time.Second, strings.Join(first, "\n")+"\n", kcat, "-b", b.Addr, "-P", "-t", "kg")
	if got := consume(); strings.Join(got, "|") != strings.Join(first, "|") {
		t.Fatalf("first kcat -G run read %d lines, want %d: %q", len(got), len(first), got)
	}
	second := lines(100, 50)
	runTool(t, 60*time.Second, strings.Join(second, "\n")+"\n", kcat, "-b", b.Addr, "-P", "-t", "kg")
	if got := consume(); strings.Join(got, "|") != strings.Join(second, "|") {
		t.Fatalf("second kcat -G run read %d lines, want the %d new ones: %q", len(got), len(second), got)
	}
	offs, err := newAdmin(t, b).FetchOffsets(t.Context(), "kcat-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("kg", 0); !ok || o.At != 150 {
		t.Errorf("committed offset of kg/0 = %+v, want 150", o)
	}
}

// saramaSeen is what every sarama member processed.
type saramaSeen struct {
	mu      sync.Mutex
	offsets map[string]bool
	members map[string]bool
	claimed map[string]int // partitions per member in its latest session
}

// bothClaimed reports whether both members hold partitions in their latest session.
func (s *saramaSeen) bothClaimed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.claimed) == 2 && s.claimed["0"] > 0 && s.claimed["1"] > 0
}

func (s *saramaSeen) counts() (records, members int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.offsets), len(s.members)
}

type saramaHandler struct {
	seen *saramaSeen
	name string
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	n := 0
	for _, ps := range s.Claims() {
		n += len(ps)
	}
	h.seen.mu.Lock()
	if h.seen.claimed == nil {
		h.seen.claimed = map[string]int{}
	}
	h.seen.claimed[h.name] = n
	h.seen.mu.Unlock()
	return nil
}
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.seen.mu.Lock()
		h.seen.members[h.name] = true
		h.seen.offsets[fmt.Sprintf("%d/%d", m.Partition, m.Offset)] = true
		h.seen.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

// TestGroupsSarama: sarama's consumer group API with two members consumes
// every record of a 4-partition topic, both members processing records.
func TestGroupsSarama(t *testing.T) {
	const topic, total = "sg", 2000
	b := startBroker(t, "", groupBrokerOverrides...)
	createTopic(t, t.Context(), b, topic, 4)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	seen := &saramaSeen{offsets: map[string]bool{}, members: map[string]bool{}}
	var wg sync.WaitGroup
	for i := range 2 {
		g, err := sarama.NewConsumerGroup([]string{b.Addr}, "sarama-group", cfg)
		if err != nil {
			t.Fatalf("NewConsumerGroup: %v", err)
		}
		defer g.Close()
		h := &saramaHandler{seen: seen, name: fmt.Sprint(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
					t.Logf("member %d: Consume: %v", i, err)
				}
			}
		}()
	}
	// Produce once both members hold partitions, so both process records
	// (produced earlier, the first member could read everything before the
	// second one joins).
	waitFor(t, 60*time.Second, "both sarama members to hold partitions", seen.bothClaimed)
	produceSpread(t, b, topic, 4, 0, total)
	waitFor(t, 90*time.Second, "two sarama members to consume every record", func() bool {
		n, m := seen.counts()
		return n >= total && m == 2
	})
	cancel()
	wg.Wait()
}

// TestGroupsRestart: offsets with metadata committed by a group and the
// group's metadata survive a broker restart.
func TestGroupsRestart(t *testing.T) {
	const topic, group = "gr", "restart-group"
	b := startBroker(t, "", groupBrokerOverrides...)
	createTopic(t, t.Context(), b, topic, 3)
	produceSpread(t, b, topic, 3, 0, 300)
	cl := newClient(t, b, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.SessionTimeout(6*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	recs := consumeN(t, t.Context(), cl, 300, 60*time.Second)
	if err := cl.CommitRecords(t.Context(), recs...); err != nil {
		t.Fatalf("CommitRecords: %v", err)
	}
	cl.Close()
	adm := newAdmin(t, b)
	// A standalone commit with a metadata string, for a second group.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 42, LeaderEpoch: -1, Metadata: "meta-ü-1"})
	if r, err := adm.CommitOffsets(t.Context(), "standalone", os); err != nil || r.Error() != nil {
		t.Fatalf("CommitOffsets: %v %v", err, r.Error())
	}
	before, err := adm.FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	descBefore, err := adm.DescribeGroups(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	b.Restart()
	adm = newAdmin(t, b)
	after, err := adm.FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		x, _ := before.Lookup(topic, p)
		y, ok := after.Lookup(topic, p)
		if !ok || x.At != y.At || x.At != 100 {
			t.Errorf("partition %d: committed %d before the restart, %d (found %v) after; want 100", p, x.At, y.At, ok)
		}
	}
	sa, err := adm.FetchOffsets(t.Context(), "standalone")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := sa.Lookup(topic, 1); !ok || o.At != 42 || o.Metadata != "meta-ü-1" {
		t.Errorf("standalone offset after restart = %+v, want 42 with metadata", o)
	}
	descAfter, err := adm.DescribeGroups(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	db, da := descBefore[group], descAfter[group]
	if da.ProtocolType != "consumer" || da.State != db.State || da.State != "Empty" {
		t.Errorf("group after restart: type %q state %q; before: type %q state %q", da.ProtocolType, da.State, db.ProtocolType, db.State)
	}
	listed, err := adm.ListGroups(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed[group]; !ok {
		t.Errorf("ListGroups after restart lacks %s: %v", group, listed.Groups())
	}
	// An unknown group fetches -1 without error.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "never-seen"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	req.Version = 7
	resp, err := req.RequestWith(t.Context(), newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != -1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("OffsetFetch of an unknown group: %+v", resp)
	}
}

// TestGroupsPendingMemberDoesNotBlock: a JoinGroup that gets
// MEMBER_ID_REQUIRED and never follows up does not keep a real consumer
// from completing its rebalance (the pending member expires).
func TestGroupsPendingMemberDoesNotBlock(t *testing.T) {
	const topic, group = "gp", "pending-group"
	b := startBroker(t, "", groupBrokerOverrides...)
	createTopic(t, t.Context(), b, topic, 2)
	produceSpread(t, b, topic, 2, 0, 100)
	raw := newClient(t, b)
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = group, 6000, 60000, "consumer"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
		t.Fatalf("first JoinGroup: error %d member %q, want MEMBER_ID_REQUIRED with a member id", resp.ErrorCode, resp.MemberID)
	}
	start := time.Now()
	cl := newClient(t, b, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumeN(t, t.Context(), cl, 100, 45*time.Second)
	t.Logf("the real consumer read everything %v after the abandoned join", time.Since(start).Round(time.Millisecond))
}
