package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupBrokerOverrides make group tests quick: no initial rebalance delay;
// for KIP-848 groups the session and heartbeat interval the classic members
// of these tests ask for (a KIP-848 session is the broker's setting).
var groupBrokerOverrides = []string{"group.initial.rebalance.delay.ms=0",
	"group.consumer.session.timeout.ms=6000", "group.consumer.heartbeat.interval.ms=500"}

// Environment of the group member child process (TestGroupsHelperMember).
const (
	helperEnv         = "RB_GROUP_HELPER"
	helperAddrEnv     = "RB_GROUP_HELPER_ADDR"
	helperGroupEnv    = "RB_GROUP_HELPER_GROUP"
	helperTopicEnv    = "RB_GROUP_HELPER_TOPIC"
	helperBalancerEnv = "RB_GROUP_HELPER_BALANCER"
)

// groupMemberOpts are the consumer options every franz-go member of the
// kill tests uses: a short session, commits of marked records only.
func groupMemberOpts(group, topic, balancer string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(300 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.FetchMaxPartitionBytes(64 << 10),
	}
	switch balancer {
	case "cooperative-sticky":
		opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	case "848": // KIP-848: the broker's uniform assignor
		opts = append(opts, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
	}
	return opts
}

// TestGroupsHelperMember is not a test: it is the group member that the
// kill tests start as a separate process (the test binary re-executed with
// RB_GROUP_HELPER=1) and kill with SIGKILL. It prints "A" when it owns
// partitions and "R <partition> <offset>" for every record it processed,
// before marking it for commit.
func TestGroupsHelperMember(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for the group kill tests")
	}
	addr, group, topic := os.Getenv(helperAddrEnv), os.Getenv(helperGroupEnv), os.Getenv(helperTopicEnv)
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if len(m[topic]) > 0 {
				mu.Lock()
				fmt.Fprintf(out, "A %v\n", m[topic])
				out.Flush()
				mu.Unlock()
			}
		}),
	}, groupMemberOpts(group, topic, os.Getenv(helperBalancerEnv))...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		mu.Lock()
		for _, r := range recs {
			fmt.Fprintf(out, "R %d %d\n", r.Partition, r.Offset)
		}
		out.Flush()
		mu.Unlock()
		cl.MarkCommitRecords(recs...)
	}
}

// processedSet records which offsets of each partition were processed.
type processedSet struct {
	mu    sync.Mutex
	seen  map[int32]map[int64]bool
	count int
}

func newProcessedSet() *processedSet { return &processedSet{seen: map[int32]map[int64]bool{}} }

func (s *processedSet) add(p int32, o int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[p] == nil {
		s.seen[p] = map[int64]bool{}
	}
	if !s.seen[p][o] {
		s.seen[p][o] = true
		s.count++
	}
}

func (s *processedSet) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// produceSpread produces n small records round-robin over partitions
// (record i of the run to partition i%partitions) and waits for every ack.
func produceSpread(t *testing.T, b *Broker, topic string, partitions int32, from, n int) {
	t.Helper()
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(50_000))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := from; i < from+n; i++ {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: fmt.Appendf(nil, "record-%09d", i)},
			func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("producing %d records: %v", n, firstErr)
	}
}

// startHelperMember starts TestGroupsHelperMember as a separate process and
// feeds what it processed into seen; assigned is closed once it owns partitions.
func startHelperMember(t *testing.T, b *Broker, group, topic, balancer string, seen *processedSet) (cmd *exec.Cmd, assigned chan struct{}, exited chan struct{}) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestGroupsHelperMember$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperAddrEnv+"="+b.Addr, helperGroupEnv+"="+group,
		helperTopicEnv+"="+topic, helperBalancerEnv+"="+balancer)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start helper member: %v", err)
	}
	assigned = make(chan struct{})
	exited = make(chan struct{})
	go func() {
		defer close(exited)
		once := sync.Once{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) >= 1 && f[0] == "A":
				once.Do(func() { close(assigned) })
			case len(f) == 3 && f[0] == "R":
				p, _ := strconv.Atoi(f[1])
				o, _ := strconv.ParseInt(f[2], 10, 64)
				seen.add(int32(p), o)
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return cmd, assigned, exited
}

// TestGroupsFranzKillEager, TestGroupsFranzKillCooperative and
// TestGroupsFranzKill848 (a KIP-848 consumer group): three
// franz-go members, one of them a separate process, consume a 12-partition
// topic; the separate one is killed with SIGKILL mid-stream and the other
// two take over its partitions after the session timeout. Every record is
// processed at least once and the committed offsets end at the log end.
func TestGroupsFranzKillEager(t *testing.T) { testGroupsFranzKill(t, "eager") }

func TestGroupsFranzKillCooperative(t *testing.T) { testGroupsFranzKill(t, "cooperative-sticky") }

func TestGroupsFranzKill848(t *testing.T) { testGroupsFranzKill(t, "848") }

func testGroupsFranzKill(t *testing.T, balancer string) {
	const (
		partitions = 12
		total      = 300_000
		firstPart  = 60_000
		secondPart = 30_000
	)
	topic, group := "gk-"+balancer, "gk-group-"+balancer
	b := startBroker(t, "", groupBrokerOverrides...)
	createTopic(t, t.Context(), b, topic, partitions)
	produceSpread(t, b, topic, partitions, 0, firstPart)

	seen := newProcessedSet()
	var members []*kgo.Client
	for i := range 2 {
		opts := append([]kgo.Opt{kgo.ClientID(fmt.Sprintf("member-%d", i))}, groupMemberOpts(group, topic, balancer)...)
		members = append(members, newClient(t, b, opts...))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	for _, cl := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				var recs []*kgo.Record
				fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
				for _, r := range recs {
					seen.add(r.Partition, r.Offset)
				}
				cl.MarkCommitRecords(recs...)
			}
		}()
	}
	childSeen := newProcessedSet()
	child, assigned, exited := startHelperMember(t, b, group, topic, balancer, childSeen)
	select {
	case <-assigned:
	case <-time.After(60 * time.Second):
		t.Fatal("the helper member got no partitions within 60s")
	}
	// Records for the helper to process while it holds partitions.
	produceSpread(t, b, topic, partitions, firstPart, secondPart)
	waitFor(t, 60*time.Second, "the helper member to process records", func() bool { return childSeen.total() >= 100 })
	if err := child.Process.Kill(); err != nil {
		t.Fatalf("kill -9 helper: %v", err)
	}
	<-exited
	killed := time.Now()
	t.Logf("killed the helper member after it processed %d records", childSeen.total())
	produceSpread(t, b, topic, partitions, firstPart+secondPart, total-firstPart-secondPart)

	// Wait until every record was processed by someone.
	union := func() int {
		n := 0
		seen.mu.Lock()
		childSeen.mu.Lock()
		for p := range int32(partitions) {
			for o := range seen.seen[p] {
				_ = o
				n++
			}
			for o := range childSeen.seen[p] {
				if !seen.seen[p][o] {
					n++
				}
			}
		}
		childSeen.mu.Unlock()
		seen.mu.Unlock()
		return n
	}
	waitFor(t, 2*time.Minute, fmt.Sprintf("all %d records processed", total), func() bool { return union() >= total })
	t.Logf("all records processed %v after the kill", time.Since(killed).Round(time.Millisecond))
	adm := kadm.NewClient(newClient(t, b))
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("ListEndOffsets: %v %v", err, ends.Error())
	}
	// Commit what is marked and wait until the committed offsets reach the ends.
	waitFor(t, 60*time.Second, "committed offsets at the log end offsets", func() bool {
		for _, cl := range members {
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			_ = cl.CommitMarkedOffsets(cctx)
			ccancel()
		}
		octx, ocancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer ocancel()
		offs, err := adm.FetchOffsets(octx, group)
		if err != nil {
			return false
		}
		ok := true
		ends.Each(func(e kadm.ListedOffset) {
			o, found := offs.Lookup(topic, e.Partition)
			if !found || o.At != e.Offset {
				ok = false
			}
		})
		return ok
	})
	cancel()
	wg.Wait()
	// Every partition's every offset below the end was processed.
	for p := range int32(partitions) {
		e, _ := ends.Lookup(topic, p)
		for o := range e.Offset {
			if !seen.seen[p][o] && !childSeen.seen[p][o] {
				t.Fatalf("partition %d offset %d was never processed", p, o)
			}
		}
	}
	var sum int64
	ends.Each(func(e kadm.ListedOffset) { sum += e.Offset })
	if sum != total {
		t.Errorf("log end offsets sum to %d, want %d", sum, total)
	}
}
