package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func sp(s string) *string { return &s }

// describedPaths renders described quotas as "entity: k=v,..." lines, sorted.
func describedPaths(qs kadm.DescribedClientQuotas) []string {
	var out []string
	for _, q := range qs {
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, v.String())
		}
		sort.Strings(vals)
		out = append(out, q.Entity.String()+": "+strings.Join(vals, ","))
	}
	sort.Strings(out)
	return out
}

func describeQuotas(t *testing.T, ctx context.Context, adm *kadm.Client, strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
	t.Helper()
	qs, err := adm.DescribeClientQuotas(ctx, strict, comps)
	if err != nil {
		t.Fatalf("DescribeClientQuotas %+v strict=%v: %v", comps, strict, err)
	}
	return describedPaths(qs)
}

func samePaths(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestQuotaAdminPersist sets, describes (with filters), removes client
// quotas with kadm and sees them survive a restart.
func TestQuotaAdminPersist(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := newAdmin(t, b)
	app := kadm.ClientQuotaEntity{{Type: "client-id", Name: sp("app")}}
	defUser := kadm.ClientQuotaEntity{{Type: "user"}}
	aliceAnyClient := kadm.ClientQuotaEntity{{Type: "user", Name: sp("alice")}, {Type: "client-id"}}
	defIP := kadm.ClientQuotaEntity{{Type: "ip"}}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: app, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}, {Key: "consumer_byte_rate", Value: 2097152}}},
		{Entity: defUser, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 25}}},
		{Entity: aliceAnyClient, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 100}}},
		{Entity: defIP, Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 10}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: sp("x")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "no_such_quota", Value: 1}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: sp("y")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 0}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: sp("10.0.0.1")}, {Type: "user", Name: sp("u")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 1}}},
	})
	if err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}
	if len(res) != 7 {
		t.Fatalf("AlterClientQuotas: %d results, want 7", len(res))
	}
	for i, r := range res {
		if i < 4 && r.Err != nil {
			t.Errorf("entry %s: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
		if i >= 4 && (!errors.Is(r.Err, kerr.InvalidRequest) || r.ErrMessage == "") {
			t.Errorf("entry %s: got %v %q, want INVALID_REQUEST with a message", r.Entity, r.Err, r.ErrMessage)
		}
	}
	// validate_only changes nothing.
	if res, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: app, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 5}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("ValidateAlterClientQuotas: %v %v", err, res)
	}

	all := []string{
		"{client-id=app}: consumer_byte_rate=2097152.000000,producer_byte_rate=1048576.000000",
		"{ip=<default>}: connection_creation_rate=10.000000",
		"{user=<default>}: request_percentage=25.000000",
		"{user=alice, client-id=<default>}: producer_byte_rate=100.000000",
	}
	check := func() {
		t.Helper()
		samePaths(t, "all", describeQuotas(t, ctx, adm, false), all...)
		samePaths(t, "client-id app exact", describeQuotas(t, ctx, adm, false, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchName: sp("app"), MatchType: 0}), all[0])
		samePaths(t, "user default strict", describeQuotas(t, ctx, adm, true, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 1}), all[2])
		samePaths(t, "any user", describeQuotas(t, ctx, adm, false, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 2}), all[2], all[3])
		samePaths(t, "any user strict", describeQuotas(t, ctx, adm, true, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 2}), all[2])
		samePaths(t, "user alice, client default", describeQuotas(t, ctx, adm, true,
			kadm.DescribeClientQuotaComponent{Type: "user", MatchName: sp("alice"), MatchType: 0}, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 1}), all[3])
	}
	check()
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "group", MatchType: 2}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("unknown entity type in filter: %v, want INVALID_REQUEST", err)
	}

	b.Restart()
	adm = newAdmin(t, b)
	check()

	// Removing the only key removes the entity, also after a restart.
	if res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: defUser, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Remove: true}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("remove: %v %v", err, res)
	}
	all = append(all[:2], all[3])
	samePaths(t, "after removal", describeQuotas(t, ctx, adm, false), all...)
	b.Restart()
	adm = newAdmin(t, b)
	samePaths(t, "after removal and restart", describeQuotas(t, ctx, adm, false), all...)
}

// throttleHook counts the throttles brokers report (kgo.HookBrokerThrottle).
type throttleHook struct {
	n     atomic.Int64
	total atomic.Int64 // ns
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.total.Add(int64(d))
}

const quotaRate = 1 << 20 // bytes/s

// setClientQuota sets key to quotaRate for client id.
func setClientQuota(t *testing.T, ctx context.Context, b *Broker, clientID, key string) {
	t.Helper()
	res, err := newAdmin(t, b).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: sp(clientID)}}, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: quotaRate}}},
	})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas %s %s: %v %v", clientID, key, err, res)
	}
}

// produceBytes produces total bytes in 64 KiB records and returns how long
// it took.
func produceBytes(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, total int) time.Duration {
	t.Helper()
	const size = 64 << 10
	start := time.Now()
	for i := 0; i < total/size; i++ {
		val := make([]byte, size)
		rand.Read(val) // incompressible: the quota counts the request's bytes as sent
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	return time.Since(start)
}

// TestQuotaProduceThrottle: a client id with producer_byte_rate = 1 MiB/s
// is held to about that rate and told so in throttle_time_ms; another
// client id is not throttled. Two 1 s quota windows keep the allowed burst
// (num-1 windows of quota) small enough to see in a few seconds. 8 MiB:
// the client waits out a throttle before its next request, never after its
// last, so the burst and the last throttle make a short run look faster
// (4 MiB measured 1.51x the quota once in direct mode).
func TestQuotaProduceThrottle(t *testing.T) {
	b := startBroker(t, "", "quota.window.num=2", "quota.window.size.seconds=1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTopic(t, ctx, b, "quota-produce", 1)
	setClientQuota(t, ctx, b, "throttled", "producer_byte_rate")

	const total = 8 << 20
	var slow, fast throttleHook
	slowCl := newClient(t, b, kgo.ClientID("throttled"), kgo.WithHooks(&slow), kgo.ProducerBatchCompression(kgo.NoCompression()))
	took := produceBytes(t, ctx, slowCl, "quota-produce", total)
	rate := float64(total) / took.Seconds()
	t.Logf("throttled client: %d bytes in %v = %.0f B/s (quota %d B/s, %.2fx), %d throttles totalling %v",
		total, took, rate, quotaRate, rate/quotaRate, slow.n.Load(), time.Duration(slow.total.Load()))
	if rate > 1.5*quotaRate {
		t.Errorf("throttled client produced %.0f B/s, more than 1.5x the quota %d B/s", rate, quotaRate)
	}
	if slow.n.Load() == 0 {
		t.Errorf("throttled client saw no throttle")
	}

	fastCl := newClient(t, b, kgo.ClientID("free"), kgo.WithHooks(&fast), kgo.ProducerBatchCompression(kgo.NoCompression()))
	took = produceBytes(t, ctx, fastCl, "quota-produce", total)
	t.Logf("free client: %d bytes in %v, %d throttles", total, took, fast.n.Load())
	if fast.n.Load() != 0 {
		t.Errorf("client without a quota was throttled %d times", fast.n.Load())
	}
}

// TestQuotaFetchThrottle: consumer_byte_rate = 1 MiB/s on a client id holds
// its fetches to about that rate.
func TestQuotaFetchThrottle(t *testing.T) {
	b := startBroker(t, "", "quota.window.num=2", "quota.window.size.seconds=1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTopic(t, ctx, b, "quota-fetch", 1)
	const total = 4 << 20
	produceBytes(t, ctx, newClient(t, b, kgo.ProducerBatchCompression(kgo.NoCompression())), "quota-fetch", total)
	setClientQuota(t, ctx, b, "slow-reader", "consumer_byte_rate")

	consume := func(clientID string, h *throttleHook) time.Duration {
		cl := newClient(t, b, kgo.ClientID(clientID), kgo.WithHooks(h), kgo.ConsumeTopics("quota-fetch"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(256<<10))
		start := time.Now()
		got := 0
		for got < total {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: poll: %v", clientID, err)
			}
			fs.EachRecord(func(r *kgo.Record) { got += len(r.Value) })
		}
		return time.Since(start)
	}
	var slow, fast throttleHook
	took := consume("slow-reader", &slow)
	rate := float64(total) / took.Seconds()
	t.Logf("throttled consumer: %d bytes in %v = %.0f B/s (quota %d B/s, %.2fx), %d throttles totalling %v",
		total, took, rate, quotaRate, rate/quotaRate, slow.n.Load(), time.Duration(slow.total.Load()))
	if rate > 1.5*quotaRate {
		t.Errorf("throttled consumer fetched %.0f B/s, more than 1.5x the quota %d B/s", rate, quotaRate)
	}
	if slow.n.Load() == 0 {
		t.Errorf("throttled consumer saw no throttle")
	}
	took = consume("fast-reader", &fast)
	t.Logf("free consumer: %d bytes in %v, %d throttles", total, took, fast.n.Load())
	if fast.n.Load() != 0 {
		t.Errorf("consumer without a quota was throttled %d times", fast.n.Load())
	}
}
