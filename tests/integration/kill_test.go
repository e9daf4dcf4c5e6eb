package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKillNine streams records with acks=all to a 4-partition topic, kills
// the broker with SIGKILL mid-stream, restarts it on the same data directory
// and checks that every acknowledged record is still there, at the offset the
// broker acknowledged, and that each partition holds its records in produce
// order (records never acknowledged may or may not be there).
func TestKillNine(t *testing.T) {
	const (
		topic      = "kill9"
		partitions = 4
		maxRecords = 2_000_000 // bounds the producer loop: 20s at the paced rate
		perTick    = 500
		burst      = 20_000
		minAcked   = 2_000
		minStream  = 3 * time.Second
	)
	b := startBroker(t, "")
	createTopic(t, t.Context(), b, topic, partitions)

	type ack struct {
		seq    int
		offset int64
	}
	var (
		mu      sync.Mutex
		acked   [partitions][]ack
		nAcked  int
		errs    []string
		nErrs   int
		pending sync.WaitGroup
	)
	cl := newClient(t, b,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxProduceRequestsInflightPerBroker(1),
		kgo.ProducerLinger(time.Millisecond),
		kgo.DialTimeout(2*time.Second),
		kgo.RecordDeliveryTimeout(20*time.Second),
		kgo.MaxBufferedRecords(5_000),
	)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	producerDone := make(chan int, 1)
	var killWanted atomic.Bool
	burstSent := make(chan struct{})
	var streaming atomic.Bool
	streaming.Store(true)
	go func() {
		defer streaming.Store(false)
		// Paced at about 100,000 records/s so that a few seconds of
		// streaming stay a few hundred thousand records.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		seq := 0
		burstDone := false
		for seq < maxRecords && ctx.Err() == nil {
			n := perTick
			if killWanted.Load() && !burstDone {
				// A burst right before the kill leaves produce
				// requests in flight when SIGKILL lands.
				n = burst
			}
			for end := seq + n; seq < end && ctx.Err() == nil; seq++ {
				p := int32(seq % partitions)
				pending.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "seq-%09d", seq)},
					func(r *kgo.Record, err error) {
						defer pending.Done()
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							nErrs++
							if len(errs) < 5 {
								errs = append(errs, err.Error())
							}
							return
						}
						s, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "seq-"))
						acked[p] = append(acked[p], ack{seq: s, offset: r.Offset})
						nAcked++
					})
			}
			if n == burst {
				burstDone = true
				close(burstSent)
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
		producerDone <- seq
	}()

	streamStart := time.Now()
	waitFor(t, 60*time.Second, fmt.Sprintf("%d acknowledged records and %v of streaming", minAcked, minStream), func() bool {
		mu.Lock()
		defer mu.Unlock()
		if nErrs > 0 {
			t.Fatalf("produce errors before the kill: %d, first: %v", nErrs, errs)
		}
		return nAcked >= minAcked && time.Since(streamStart) >= minStream
	})
	killWanted.Store(true)
	select {
	case <-burstSent:
	case <-time.After(10 * time.Second):
		t.Fatal("the producer did not send its pre-kill burst within 10s")
	}
	if !streaming.Load() {
		t.Fatalf("the producer sent all %d records before the kill; raise maxRecords", maxRecords)
	}
	b.Kill()
	cancel()
	sent := <-producerDone
	cl.Close() // fails what is still buffered
	waited := make(chan struct{})
	go func() { pending.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("record promises still outstanding 30s after closing the producer")
	}
	mu.Lock()
	t.Logf("sent %d records in %v, %d acknowledged before SIGKILL, %d failed (first: %v)",
		sent, time.Since(streamStart).Round(time.Millisecond), nAcked, nErrs, errs)
	mu.Unlock()

	b.Start()

	// Read every partition up to its end offset after recovery.
	lctx, lcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer lcancel()
	ends, err := newAdmin(t, b).ListEndOffsets(lctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("ListEndOffsets after restart: %v", err)
	}
	total := 0
	for p := range int32(partitions) {
		o, ok := ends.Lookup(topic, p)
		if !ok {
			t.Fatalf("ListEndOffsets: no offset for partition %d", p)
		}
		if n := len(acked[p]); n > 0 && o.Offset <= acked[p][n-1].offset {
			t.Errorf("partition %d: end offset %d after restart, but offset %d was acknowledged", p, o.Offset, acked[p][n-1].offset)
		}
		total += int(o.Offset)
	}
	cons := newClient(t, b, kgo.ConsumePartitions(startOffsets(topic, partitions)))
	recs := consumeN(t, t.Context(), cons, total, 2*time.Minute)

	var got [partitions][]int // seq by offset
	for _, r := range recs {
		p := r.Partition
		if r.Topic != topic || p < 0 || p >= partitions {
			t.Fatalf("record from %s/%d", r.Topic, p)
		}
		if r.Offset != int64(len(got[p])) {
			t.Fatalf("partition %d: offset %d, want %d (gap or reordering after recovery)", p, r.Offset, len(got[p]))
		}
		s, err := strconv.Atoi(strings.TrimPrefix(string(r.Value), "seq-"))
		if err != nil || s%partitions != int(p) {
			t.Fatalf("partition %d offset %d: value %q is not a record produced to this partition", p, r.Offset, r.Value)
		}
		got[p] = append(got[p], s)
	}
	for p := range partitions {
		// Produce order: without idempotence a retried batch may be
		// duplicated, so sequences must only never go backwards.
		for i := 1; i < len(got[p]); i++ {
			if got[p][i] < got[p][i-1] {
				t.Errorf("partition %d: offset %d holds seq %d after seq %d at offset %d (not in produce order)",
					p, i, got[p][i], got[p][i-1], i-1)
				break
			}
		}
		lost := 0
		for _, a := range acked[p] {
			if a.offset >= int64(len(got[p])) || got[p][a.offset] != a.seq {
				if lost < 5 {
					var have any = "nothing"
					if a.offset < int64(len(got[p])) {
						have = got[p][a.offset]
					}
					t.Errorf("partition %d: acknowledged seq %d at offset %d, after restart that offset holds %v",
						p, a.seq, a.offset, have)
				}
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("partition %d: %d of %d acknowledged records lost or moved", p, lost, len(acked[p]))
		}
		t.Logf("partition %d: %d records after recovery, %d were acknowledged", p, len(got[p]), len(acked[p]))
	}
}
