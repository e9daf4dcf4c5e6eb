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
	if ok, why := ioring.Available(); !ok {
		t.Skipf("io_uring unavailable: %s", why)
	}
	for _, batch := range []string{"true", "false"} {
		t.Run("batch="+batch, func(t *testing.T) {
			b := startTestBroker(t, map[string]string{"io.engine": "uring", "log.io.mode": "direct", "num.partitions": "8",
				"io.uring.direct.write.batch": batch, "metrics.listener": "none", "offsets.topic.num.partitions": "1",
				"transaction.state.log.num.partitions": "1"})
			if b.shards[0].cache == nil {
				t.Skip("O_DIRECT refused here: the broker runs buffered")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("wb"),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			const n = 4000
			errs := make(chan error, n)
			for i := range n {
				cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i) + ":" + fmt.Sprint(make([]byte, i%300)))}, func(_ *kgo.Record, err error) { errs <- err })
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ConsumeTopics("wb"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
					var i int
					var rest string
					if _, err := fmt.Sscanf(string(r.Value), "%d:%s", &i, &rest); err != nil || i < 0 || i >= n || seen[i] {
						t.Fatalf("record %q at %d/%d: bad or seen twice", r.Value, r.Partition, r.Offset)
					}
					if want := strconv.Itoa(i) + ":" + fmt.Sprint(make([]byte, i%300)); string(r.Value) != want {
						t.Fatalf("record %d at %d/%d differs", i, r.Partition, r.Offset)
					}
					seen[i] = true
					got++
				})
			}
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
