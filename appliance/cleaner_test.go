package appliance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/cleaner"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBatchesEnd(t *testing.T) {
	b := appendBatch(nil, 1000, 0, -1, -1, -1, []kmsg.Record{{Key: []byte("a")}, {Key: []byte("b")}})
	b = appendBatch(b, 1000, 0, -1, -1, -1, []kmsg.Record{{Key: []byte("c")}})
	if got := batchesEnd(b); got != 1 { // both batches start at offset 0 before the log assigns offsets
		t.Fatalf("batchesEnd = %d, want 1", got)
	}
	if got := batchesEnd(nil); got != -1 {
		t.Fatalf("batchesEnd(nil) = %d", got)
	}
}

// partitionLogBytes sums the .log files of a partition directory.
func partitionLogBytes(t *testing.T, dir string) (int64, int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	segs := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := e.Info()
			if err == nil {
				n += fi.Size()
				segs++
			}
		}
	}
	return n, segs
}

// TestCleanerCompactsTopicAndOffsets runs the cleaner in a broker: a
// compacted topic shrinks to its latest values, a keyless record is
// refused, __consumer_offsets is cleaned and a restarted broker replays
// the cleaned offsets.
func TestCleanerCompactsTopicAndOffsets(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"log.dirs": dir, "log.cleaner.backoff.ms": "20", "offsets.topic.num.partitions": "1",
		"offsets.topic.segment.bytes": "4096", "log.cleaner.min.cleanable.ratio": "0.01"}
	b := startTestBroker(t, props)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	cfg := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("4096"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01")}
	if r, err := adm.CreateTopic(ctx, 1, 1, cfg, "c"); err != nil || r.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, r.Err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "c", Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}
	const keys, updates = 20, 3000
	for i := 0; i < updates; i += 100 {
		var recs []*kgo.Record
		for k := i; k < i+100; k++ {
			recs = append(recs, &kgo.Record{Topic: "c", Key: []byte(fmt.Sprintf("key-%02d", k%keys)), Value: []byte(fmt.Sprintf("value-%d", k))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Commits of one group to the single __consumer_offsets partition.
	for i := 0; i < 400; i++ {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "c", Partition: 0, At: int64(i), LeaderEpoch: -1})
		if _, err := adm.CommitOffsets(ctx, "g", os); err != nil {
			t.Fatal(err)
		}
	}
	cdir := b.partitionDir("c", 0)
	odir := b.partitionDir(offsetsTopic, 0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		cb, _ := partitionLogBytes(t, cdir)
		ob, _ := partitionLogBytes(t, odir)
		if cb < 8*4096 && ob < 4*4096 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not compacted: topic %d bytes, offsets %d bytes", cb, ob)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every key's latest value is readable from the beginning.
	consume := kgo.NewClient
	cc, err := consume(kgo.SeedBrokers(b.Addr().String()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"c": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	got := map[string]string{}
	hwm := int64(0)
	for hwm < updates {
		fs := cc.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = string(r.Value)
			hwm = r.Offset + 1
		})
	}
	for k := updates - keys; k < updates; k++ {
		if v := got[fmt.Sprintf("key-%02d", k%keys)]; v != fmt.Sprintf("value-%d", k) {
			t.Errorf("key-%02d = %q, want value-%d", k%keys, v, k)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, cleaner.OffsetCheckpoint)); err != nil {
		t.Errorf("no cleaner checkpoint: %v", err)
	}
	cc.Close()
	cl.Close()
	b.Close()

	// Restart: the group's offset replays from the cleaned log.
	cfg2, err := ConfigFromProperties(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir, "shards": "2",
		"offsets.topic.num.partitions": "1", "metrics.listener": "none", "log.cleaner.enable": "false"})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := New(cfg2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Start(); err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if o, ok := groupOffsets(ctx, t, b2, "g").Lookup("c", 0); !ok || o.At != 399 {
		t.Fatalf("committed offset after restart %+v %v, want 399", o, ok)
	}
}
