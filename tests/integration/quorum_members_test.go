package integration

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leadersOf returns the leader of each partition of topic in nd's
// Metadata and the broker ids it lists.
func leadersOf(nd *quorumNode, adm *kadm.Client, topic string) (map[int32]int32, []int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	var ids []int32
	for _, b := range md.Brokers {
		ids = append(ids, b.NodeID)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, ids, fmt.Errorf("node %d: topic %s: %v", nd.id, topic, td.Err)
	}
	out := map[int32]int32{}
	for p, pd := range td.Partitions {
		out[p] = pd.Leader
	}
	return out, ids, nil
}

// TestQuorumMembership: three combined nodes register with the active
// controller; Metadata on any node lists the three; a topic of 12
// partitions is placed across them; records produced to every partition
// are consumed back; a node killed -9 is fenced after
// broker.session.timeout.ms and its partitions lose their leader, and it
// leads them again after it restarts and registers.
func TestQuorumMembership(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three ringbroker processes")
	}
	nodes := startQuorumNodes(t, 3, "broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=500")
	adms := make([]*kadm.Client, len(nodes))
	for i, nd := range nodes {
		adms[i] = nd.admin()
	}
	for i, nd := range nodes {
		waitFor(t, 60*time.Second, fmt.Sprintf("node %d listing 3 brokers", nd.id), func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			md, err := adms[i].Metadata(ctx)
			return err == nil && len(md.Brokers) == 3
		})
	}
	const topic, parts = "spread", 12
	waitFor(t, 60*time.Second, "topic created", func() bool {
		err := createVia(t, nodes[0], adms[0], topic, parts)
		return err == nil || logContains(nodes[0].logPath, "TOPIC_ALREADY_EXISTS")
	})
	var leaders map[int32]int32
	for i, nd := range nodes {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d showing leaders on every node", nd.id), func() bool {
			l, _, err := leadersOf(nd, adms[i], topic)
			if err != nil || len(l) != parts {
				return false
			}
			on := map[int32]bool{}
			for _, b := range l {
				on[b] = true
			}
			leaders = l
			return len(on) == 3 && !on[-1]
		})
	}
	t.Logf("leaders: %v", leaders)

	produceAll := func(round string) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr, nodes[2].addr),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(20)) // idempotent: ids from the active controller

		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for p := range int32(parts) {
			for i := range 5 {
				r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(strconv.Itoa(int(p))), Value: []byte(fmt.Sprintf("%s-%d-%d", round, p, i))}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatalf("produce to partition %d: %v", p, err)
				}
			}
		}
	}
	consumeAll := func(want int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr, nodes[2].addr),
			kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		got := 0
		for got < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records", got, want)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Key) != strconv.Itoa(int(r.Partition)) {
					t.Errorf("record keyed %q in partition %d", r.Key, r.Partition)
				}
				got++
			})
		}
		if got != want {
			t.Fatalf("consumed %d records, want %d", got, want)
		}
	}
	produceAll("a")

	// Every node hands out producer ids from blocks the active controller
	// allocates (AllocateProducerIds): InitProducerId succeeds on each and
	// no two nodes hand out the same id.
	pids := map[int64]int{}
	for _, n := range nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req := kmsg.NewPtrInitProducerIDRequest()
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("InitProducerId on node %d: %v, error code %v", n.id, err, resp)
		}
		if other, dup := pids[resp.ProducerID]; dup {
			t.Fatalf("producer id %d from nodes %d and %d", resp.ProducerID, other, n.id)
		}
		pids[resp.ProducerID] = n.id
	}
	consumeAll(parts * 5)

	// kill -9 a node that is not the active controller: it is fenced and
	// its partitions show leader -1.
	lead, _ := activeController(nodes)
	var victim *quorumNode
	for _, nd := range nodes {
		if nd != lead {
			victim = nd
			break
		}
	}
	var owned []int32
	for p, b := range leaders {
		if b == int32(victim.id) {
			owned = append(owned, p)
		}
	}
	killed := time.Now()
	victim.kill()
	li := 0
	for i, nd := range nodes {
		if nd == lead {
			li = i
		}
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d's partitions leaderless", victim.id), func() bool {
		l, _, err := leadersOf(lead, adms[li], topic)
		if err != nil {
			return false
		}
		for _, p := range owned {
			if l[p] != -1 {
				return false
			}
		}
		return true
	})
	if d := time.Since(killed); d < 2*time.Second {
		t.Errorf("node %d fenced %v after kill -9, before broker.session.timeout.ms", victim.id, d)
	}
	victim.start()
	victim.waitReady()
	waitFor(t, 60*time.Second, fmt.Sprintf("node %d leading its partitions again", victim.id), func() bool {
		l, _, err := leadersOf(lead, adms[li], topic)
		if err != nil {
			return false
		}
		for _, p := range owned {
			if l[p] != int32(victim.id) {
				return false
			}
		}
		return true
	})
	produceAll("b")
	consumeAll(2 * parts * 5)
}
