package appliance

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUringDirectWriteBatch produces to 8 partitions over 2 uring shards
// with direct I/O, with io.uring.direct.write.batch on and off, and reads
// every record back: on, the shards' segment writes went in batches
// through their write rings; off, none did.
func TestUringDirectWriteBatch(t *testing.T) {
	for _, batch := range []string{"true", "false"} {
		t.Run("batch="+batch, func(t *testing.T) {
			b := uringDirectBroker(t, map[string]string{"num.partitions": "8", "io.uring.direct.write.batch": batch})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const n = 4000
			value := func(i int) string { return strconv.Itoa(i) + ":" + fmt.Sprint(make([]byte, i%300)) }
			produceAll(ctx, t, b, "wb", n, func(i int) *kgo.Record { return &kgo.Record{Value: []byte(value(i))} })
			consumeAll(ctx, t, b, "wb", n, func(r *kgo.Record) int {
				var i int
				var rest string
				if _, err := fmt.Sscanf(string(r.Value), "%d:%s", &i, &rest); err != nil || i < 0 || i >= n || string(r.Value) != value(i) {
					t.Fatalf("record %q at %d/%d: bad", r.Value, r.Partition, r.Offset)
				}
				return i
			})
			var st nvme.WriteBatchStats
			for _, s := range b.shards {
				var x nvme.WriteBatchStats
				s.loop.Call(func() { x = s.cache.WriteBatchStats() })
				st.Batches += x.Batches
				st.Writes += x.Writes
				st.RingWrites += x.RingWrites
			}
			if batch == "true" && (st.Batches == 0 || st.RingWrites == 0) {
				t.Fatalf("write batch stats %+v: want batches through the ring", st)
			}
			if batch == "false" && st.Batches != 0 {
				t.Fatalf("write batch stats %+v with io.uring.direct.write.batch=false", st)
			}
			t.Logf("write batch stats %+v", st)
		})
	}
}

// uringDirectBroker starts a test broker with io.engine=uring,
// log.io.mode=direct and props (one partition for the internal topics, no
// metrics listener), or skips the test where io_uring or O_DIRECT is
// unavailable.
func uringDirectBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	if ok, why := ioring.Available(); !ok {
		t.Skipf("io_uring unavailable: %s", why)
	}
	p := map[string]string{"io.engine": "uring", "log.io.mode": "direct", "metrics.listener": "none",
		"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
	for k, v := range props {
		p[k] = v
	}
	b := startTestBroker(t, p)
	if b.shards[0].cache == nil {
		t.Skip("O_DIRECT refused here: the broker runs buffered")
	}
	return b
}

// produceAll produces the records rec makes for 0..n-1 to topic (created
// on first use, partitions round robin, uncompressed) and waits for every
// acknowledgement.
func produceAll(ctx context.Context, t *testing.T, b *Broker, topic string, n int, rec func(i int) *kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errs := make(chan error, n)
	for i := range n {
		cl.Produce(ctx, rec(i), func(_ *kgo.Record, err error) { errs <- err })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// consumeAll reads topic from the start until it has seen n records:
// check verifies each and returns its index in 0..n-1, and none may come
// twice.
func consumeAll(ctx context.Context, t *testing.T, b *Broker, topic string, n int, check func(r *kgo.Record) int) {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := make([]bool, n)
	for got := 0; got < n; {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records read back: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			i := check(r)
			if seen[i] {
				t.Fatalf("record %d at %d/%d seen twice", i, r.Partition, r.Offset)
			}
			seen[i] = true
			got++
		})
	}
}
