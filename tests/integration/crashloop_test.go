package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCrashLoop kills the broker with SIGKILL under acks=all load, cycle
// after cycle, on one data directory. After every restart each record
// acknowledged in any earlier cycle must be at its acknowledged offset, and
// every partition must read back contiguously from 0 to its end offset (the
// tail was cut at the first invalid batch; nothing torn is served). At the
// end, after a clean stop, every segment file must be a sequence of whole
// batches with nothing after them (preallocated tails trimmed). Cycles: 5,
// or RB_CRASHLOOP_CYCLES (make crashloop runs 50). The io mode comes from
// RB_IO_MODE like every test (make test runs it in both modes).
func TestCrashLoop(t *testing.T) {
	const (
		topic      = "crashloop"
		partitions = 3
	)
	cycles := 5
	if v, err := strconv.Atoi(os.Getenv("RB_CRASHLOOP_CYCLES")); err == nil && v > 0 {
		cycles = v
	}
	b := startBroker(t, "")
	ctx := t.Context()
	seg := "262144" // small segments: rolls and trims happen within the loop
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := newAdmin(t, b).CreateTopics(cctx, partitions, 1, map[string]*string{"segment.bytes": &seg}, topic)
	cancel()
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("CreateTopics: %v %v", err, resp[topic].Err)
	}
	acked := [partitions]map[int64]string{{}, {}, {}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
	seq := 0
	for cycle := range cycles {
		n := produceUntilKill(t, b, topic, partitions, cycle, &seq, time.Duration(200+rng.IntN(600))*time.Millisecond, &acked)
		b.Start()
		total := checkAcked(t, b, topic, partitions, &acked)
		t.Logf("cycle %d: %d acknowledged this cycle, %d records in the log", cycle, n, total)
		if t.Failed() {
			return
		}
	}
	b.Stop()
	checkSegmentsPlain(t, b.DataDir, topic, partitions)
}

// produceUntilKill streams acks=all records for d, then SIGKILLs the broker
// while requests are in flight and returns how many were acknowledged.
func produceUntilKill(t *testing.T, b *Broker, topic string, partitions int, cycle int, seq *int, d time.Duration, acked *[3]map[int64]string) int {
	t.Helper()
	cl := newClient(t, b,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.DialTimeout(time.Second),
		kgo.RecordDeliveryTimeout(5*time.Second),
		kgo.MaxBufferedRecords(20_000),
	)
	var (
		mu      sync.Mutex
		n       int
		pending sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(t.Context())
	deadline := time.Now().Add(d)
	// A paced load loop: 200 records every 2 ms at most, until the kill.
	pace := time.NewTicker(2 * time.Millisecond)
	defer pace.Stop()
	for time.Now().Before(deadline) {
		for range 200 {
			p := int32(*seq % partitions)
			v := fmt.Sprintf("c%03d-%09d-%s", cycle, *seq, strings.Repeat("x", *seq%300))
			*seq++
			pending.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer pending.Done()
				if err != nil {
					return
				}
				mu.Lock()
				acked[p][r.Offset] = string(r.Value)
				n++
				mu.Unlock()
			})
		}
		<-pace.C
	}
	b.Kill()
	cancel()
	cl.Close()
	pending.Wait()
	if n == 0 {
		t.Fatalf("cycle %d: nothing acknowledged before the kill", cycle)
	}
	return n
}

// checkAcked reads every partition from 0 to its end offset and compares
// with the acknowledged records; it returns the records read.
func checkAcked(t *testing.T, b *Broker, topic string, partitions int, acked *[3]map[int64]string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ends, err := newAdmin(t, b).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("ListEndOffsets after restart: %v", err)
	}
	total := 0
	for p := range int32(partitions) {
		o, _ := ends.Lookup(topic, p)
		total += int(o.Offset)
	}
	cons := newClient(t, b, kgo.ConsumePartitions(startOffsets(topic, int32(partitions))))
	recs := consumeN(t, t.Context(), cons, total, time.Minute)
	cons.Close()
	next := make([]int64, partitions)
	got := make([]map[int64]string, partitions)
	for i := range got {
		got[i] = map[int64]string{}
	}
	for _, r := range recs {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d after %d (gap after recovery)", r.Partition, r.Offset, next[r.Partition]-1)
		}
		next[r.Partition]++
		got[r.Partition][r.Offset] = string(r.Value)
	}
	for p := range partitions {
		lost := 0
		for off, v := range acked[p] {
			if got[p][off] != v {
				if lost < 3 {
					t.Errorf("partition %d: acknowledged %.20q at offset %d, the log holds %.20q", p, v, off, got[p][off])
				}
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("partition %d: %d of %d acknowledged records lost", p, lost, len(acked[p]))
		}
	}
	return total
}

// checkSegmentsPlain walks the batch framing of every segment: whole
// batches up to the file's end, nothing after (no preallocated zeros).
func checkSegmentsPlain(t *testing.T, dataDir, topic string, partitions int) {
	t.Helper()
	for p := range partitions {
		files, _ := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p), "*.log"))
		if len(files) == 0 {
			t.Errorf("partition %d: no segments", p)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			for pos+12 <= len(b) {
				l := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
				if l < 49 || pos+12+l > len(b) || b[pos+16] != 2 {
					break
				}
				pos += 12 + l
			}
			if pos != len(b) {
				t.Errorf("%s: %d bytes, whole batches end at %d", f, len(b), pos)
			}
		}
		t.Logf("partition %d: %d segments, all plain", p, len(files))
	}
}
