package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDiskFull fills a small filesystem (a 48 MiB tmpfs) with acks=all
// records and checks what a full disk may and may not do: every
// acknowledged record reads back, in order, before and after a restart; a
// topic created while the disk is full is refused with
// KAFKA_STORAGE_ERROR and is not left half-created (listed but not
// served); the metadata log that refused the change reports itself
// offline in ringbroker_metadata_log_offline and takes changes again, with
// no restart, once space is freed. Before, the first failed metadata
// write answered UNKNOWN_SERVER_ERROR to every later create and delete
// until a restart, and a create whose partition directories could not be
// made left a topic clients could not use (found by the fresh-user
// disk-full test on a loop-mounted ext4).
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=48m"); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	// Ballast, removed later to free space.
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	mport := freePort(t)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	b := startBroker(t, filepath.Join(mnt, "data"), fmt.Sprintf("metrics.listener=127.0.0.1:%d", mport))
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	adm := newAdmin(t, b)
	const topic, partitions = "full", 2
	seg := "1048576"
	if _, err := adm.CreateTopic(ctx, partitions, 1, map[string]*string{"segment.bytes": &seg}, topic); err != nil {
		t.Fatal(err)
	}

	// A topic with room to spare, written and read again once the
	// metadata log has been repaired: the repair must leave the open
	// partitions' views as they are.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "before"); err != nil {
		t.Fatal(err)
	}

	// Fill: acks=all, sequential values, until produces fail for a while
	// (bounded by count and time).
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(5*time.Second), kgo.RecordRetries(3), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var mu sync.Mutex
	acked := map[int32][]int{} // partition -> record numbers in offset order
	var ackedOffsets = map[int32][]int64{}
	failures := 0
	fillEnd := time.Now().Add(90 * time.Second)
	for i := 0; i < 80_000 && time.Now().Before(fillEnd); i++ {
		mu.Lock()
		f := failures
		mu.Unlock()
		if f >= 200 {
			break
		}
		v := append(fmt.Appendf(nil, "%08d", i), bytes.Repeat([]byte{byte('a' + i%26)}, 1016)...)
		cl.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures++
				return
			}
			acked[r.Partition] = append(acked[r.Partition], i)
			ackedOffsets[r.Partition] = append(ackedOffsets[r.Partition], r.Offset)
		})
		if i%500 == 499 {
			cl.Flush(ctx)
		}
	}
	cl.Flush(ctx)
	cl.Close()
	total := 0
	for _, a := range acked {
		total += len(a)
	}
	if failures == 0 {
		t.Fatalf("%d records acknowledged and none refused: the 48 MiB filesystem never filled", total)
	}
	if total < 10_000 {
		t.Fatalf("only %d records acknowledged before the disk filled", total)
	}
	t.Logf("disk full after %d acknowledged records (%d refused)", total, failures)

	// Topics created now: on a full disk a small create may still fit
	// (the metadata log's last page has room, a directory takes no data
	// block on tmpfs), so create until the metadata log refuses one. A
	// refused create answers KAFKA_STORAGE_ERROR and leaves no topic; a
	// create that went through is listed and served.
	var created []string
	metaOffline := false
	for i := 0; i < 60 && !metaOffline; i++ {
		name := fmt.Sprintf("late%d", i)
		resp, err := adm.CreateTopic(ctx, 2, 1, nil, name)
		if err == nil {
			err = resp.Err
		}
		// A fresh client: franz-go answers a metadata request from its
		// cache for a few seconds.
		td, lerr := newAdmin(t, b).ListTopics(ctx)
		if lerr != nil {
			t.Fatal(lerr)
		}
		switch {
		case err == nil:
			if !td.Has(name) {
				t.Fatalf("created topic %s is not listed: %v", name, td.Names())
			}
			created = append(created, name)
		case errors.Is(err, kerr.KafkaStorageError):
			if td.Has(name) {
				t.Fatalf("topic %s refused on a full disk (%v) is listed: half-created", name, err)
			}
		default:
			t.Fatalf("create of %s on a full disk: %v, want success or KAFKA_STORAGE_ERROR", name, err)
		}
		metaOffline = scrape(t, metricsURL)["ringbroker_metadata_log_offline"] == 1
	}
	if !metaOffline {
		t.Fatalf("60 creates on a full disk and the metadata log never refused a write (%d created)", len(created))
	}
	t.Logf("%d topics created on the full disk before the metadata log refused one", len(created))

	// Partitions added on the full disk: refused with KAFKA_STORAGE_ERROR
	// or added, and every partition Metadata lists with a leader answers
	// (one that did not open is offline: leader -1 with an error). Before,
	// the answer was UNKNOWN_SERVER_ERROR and the unopened partitions were
	// listed with leader 1, so clients retried NOT_LEADER_FOR_PARTITION.
	cp, err := adm.CreatePartitions(ctx, 2, "before")
	if err == nil {
		err = cp["before"].Err
	}
	if err != nil && !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("add partitions on a full disk: %v, want success or KAFKA_STORAGE_ERROR", err)
	}
	checkServed := func(when string) int {
		t.Helper()
		a := newAdmin(t, b)
		td, err := a.ListTopics(ctx, "before")
		if err != nil {
			t.Fatal(err)
		}
		ends, err := a.ListEndOffsets(ctx, "before")
		if err != nil && len(ends) == 0 {
			t.Fatalf("%s: list end offsets: %v", when, err)
		}
		for _, p := range td["before"].Partitions {
			o, ok := ends.Lookup("before", p.Partition)
			switch {
			case p.Leader == -1 && p.Err == nil:
				t.Fatalf("%s: before-%d has no leader and no error", when, p.Partition)
			case p.Leader != -1 && (!ok || o.Err != nil):
				t.Fatalf("%s: before-%d listed with leader %d but its offsets cannot be listed (%v)", when, p.Partition, p.Leader, o.Err)
			}
		}
		return len(td["before"].Partitions)
	}
	parts := checkServed("after adding partitions on the full disk")
	t.Logf("add partitions on the full disk: %v; before has %d partitions", err, parts)

	// Space freed: topic changes work again without a restart.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.CreateTopic(ctx, 4, 1, nil, "newt")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create after space was freed: %v", err)
	}
	if m := scrape(t, metricsURL); m["ringbroker_metadata_log_offline"] != 0 {
		t.Errorf("ringbroker_metadata_log_offline %v after a change went through, want 0", m["ringbroker_metadata_log_offline"])
	}
	pcl := newClient(t, b, kgo.DefaultProduceTopic("newt"))
	if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce to the topic created after space was freed: %v", err)
	}
	pcl.Close()
	bcl := newClient(t, b, kgo.DefaultProduceTopic("before"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := bcl.ProduceSync(ctx, &kgo.Record{Value: []byte("still served"), Partition: 0}).FirstErr(); err != nil {
		t.Fatalf("produce to a topic created before the disk filled: %v", err)
	}
	bcl.Close()
	bc := newClient(t, b, kgo.ConsumePartitions(startOffsets("before", 1)))
	if got := consumeN(t, ctx, bc, 1, 15*time.Second); len(got) != 1 || string(got[0].Value) != "still served" {
		t.Fatalf("read back from a topic created before the disk filled: %d records", len(got))
	}
	bc.Close()

	// ringctl describes offline partitions in its ERROR column and the
	// online ones in full; before, one offline partition failed the
	// describe of every topic named (LEADER_NOT_AVAILABLE, exit 1).
	var descs []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32  `json:"partition"`
			Leader    int32  `json:"leader"`
			End       int64  `json:"log_end_offset"`
			Error     string `json:"error"`
		} `json:"partitions"`
	}
	ringctlJSON(t, b, &descs, "topic", "describe", topic, "newt")
	if len(descs) != 2 {
		t.Fatalf("ringctl topic describe %s newt: %d topics, want 2", topic, len(descs))
	}
	var newtEnd int64
	for _, d := range descs {
		for _, p := range d.Partitions {
			switch {
			case d.Topic == topic && p.Error == "" && (p.Leader == -1 || p.End < 0):
				t.Errorf("partition %s-%d described with leader %d and end offset %d but no error", d.Topic, p.Partition, p.Leader, p.End)
			case d.Topic == "newt" && (p.Error != "" || p.End < 0):
				t.Errorf("online partition newt-%d described with error %q, end offset %d", p.Partition, p.Error, p.End)
			case d.Topic == "newt":
				newtEnd += p.End
			}
		}
	}
	if newtEnd != 1 {
		t.Errorf("newt's end offsets sum to %d, want the 1 record produced", newtEnd)
	}

	check := func(when string) {
		t.Helper()
		c := newClient(t, b, kgo.ConsumePartitions(startOffsets(topic, partitions)))
		defer c.Close()
		got := consumeN(t, ctx, c, total, 60*time.Second)
		byPart := map[int32][]*kgo.Record{}
		for _, r := range got {
			byPart[r.Partition] = append(byPart[r.Partition], r)
		}
		for p, want := range acked {
			recs := byPart[p]
			i := 0
			for j, n := range want {
				for i < len(recs) && recs[i].Offset < ackedOffsets[p][j] {
					i++
				}
				if i == len(recs) || recs[i].Offset != ackedOffsets[p][j] || string(recs[i].Value[:8]) != fmt.Sprintf("%08d", n) {
					t.Fatalf("%s: partition %d: acknowledged record %d at offset %d missing or different", when, p, n, ackedOffsets[p][j])
				}
			}
		}
	}
	// The partitions that hit ENOSPC stay offline until a restart (as
	// Kafka's log directory does): read them back after one.
	b.Stop()
	b.Start()
	check("after restart")
	if n := checkServed("after the restart"); n != parts {
		t.Fatalf("before has %d partitions after the restart, %d before it", n, parts)
	}
	pc := newClient(t, b, kgo.DefaultProduceTopic("before"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(parts) {
		if err := pc.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Partition: p}).FirstErr(); err != nil {
			t.Fatalf("produce to before-%d after the restart: %v", p, err)
		}
	}
	pc.Close()
	td, err := newAdmin(t, b).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(created, "newt", "before", topic) {
		if !td.Has(name) {
			t.Errorf("topic %s missing after the restart", name)
		}
	}
	if n := len(td.Names()); n != len(created)+3 {
		t.Errorf("%d topics after the restart (%v), want the %d created: a refused create came back", n, td.Names(), len(created)+3)
	}
}
