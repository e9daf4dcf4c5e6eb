package appliance

import (
	"fmt"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
)

// openParts lists the partitions open on b's shards as "topic/id/p
// retention.ms", the retention read from the partition's own config.
func openParts(b *Broker) []string {
	var out []string
	for _, st := range b.shards {
		st.loop.Call(func() {
			for k, p := range st.parts {
				out = append(out, fmt.Sprintf("%s/%s/%d retention.ms=%d", p.topic, k.id, k.p, p.cfg.RetentionMs))
			}
		})
	}
	slices.Sort(out)
	return out
}

// imageParts lists what openParts should find for im: every partition of
// every topic, with the retention its configs give.
func imageParts(b *Broker, im *Image) []string {
	var out []string
	for _, t := range im.Topics {
		cfg := b.topicConfig(t)
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%s/%d retention.ms=%d", t.Name, t.ID, p.Partition, cfg.RetentionMs))
		}
	}
	slices.Sort(out)
	return out
}

// TestReplayedRecordsDrivePartitions: partitions are opened, reconfigured
// and deleted by the records, not by the code that proposed them. Node A
// creates, reconfigures, grows and deletes topics through its controller;
// node B, a fresh node with its own metadata log, is fed A's committed
// batches one by one, as records replicated by a quorum would reach it. After
// every batch B's open partitions are exactly its image's, with the
// image's configs; at the end B's image equals A's, the deleted topic's
// directories are gone, and a restart of B from its own log opens the same
// partitions.
func TestReplayedRecordsDrivePartitions(t *testing.T) {
	a := startTestBroker(t, nil)
	if _, err := a.createTopic(TopicSpec{Name: "a", Partitions: 3, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.createTopic(TopicSpec{Name: "b", Partitions: 2, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "600000"}}, false); err != nil {
		t.Fatal(err)
	}
	v := "1234000"
	if err := a.controller().AlterTopicConfigs("a", []metadata.ConfigChange{{Key: "retention.ms", Value: &v}}, false, false); err != nil {
		t.Fatal(err)
	}
	if err := a.controller().CreatePartitions("b", 4, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.controller().DeleteTopic("a", TopicID{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.createTopic(TopicSpec{Name: "a", Partitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	if got, want := openParts(a), imageParts(a, a.currentImage()); !slices.Equal(got, want) {
		t.Fatalf("node A: open partitions %v, image %v", got, want)
	}
	aImage := a.currentImage()
	aDir := a.cfg.LogDir
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// A's committed batches, in order.
	src, _, err := openMetadataLog(aDir, a.log)
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]MetadataRecord
	if _, err := src.ReplayBatches(emptyImage(), func(_ int64, recs []MetadataRecord) error {
		batches = append(batches, recs)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	src.Close()

	b := adminTestBroker(t, map[string]string{"offsets.topic.num.partitions": "2"})
	meta, im, err := openMetadataLog(b.cfg.LogDir, b.log)
	if err != nil {
		t.Fatal(err)
	}
	b.ctl.meta = meta
	b.ctl.image.Store(im)
	sawConfig, sawGrowth, sawDelete := false, false, false
	for i, recs := range batches {
		for _, r := range recs {
			sawConfig = sawConfig || r.Config != nil && r.Config.Name == "a"
			sawGrowth = sawGrowth || r.Partition != nil && r.Partition.Partition == 3
			sawDelete = sawDelete || r.RemoveTopic != nil
		}
		if err := b.applyCommitted(recs); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if got, want := openParts(b), imageParts(b, b.currentImage()); !slices.Equal(got, want) {
			t.Fatalf("after batch %d: node B has open %v, its image %v", i, got, want)
		}
	}
	if !sawConfig || !sawGrowth || !sawDelete {
		t.Fatalf("A's log lacks a change: config %v, growth %v, delete %v", sawConfig, sawGrowth, sawDelete)
	}
	bImage := b.currentImage()
	if got, want := bImage.SortedTopicNames(), aImage.SortedTopicNames(); !slices.Equal(got, want) {
		t.Fatalf("node B has topics %v, A %v", got, want)
	}
	for name, at := range aImage.Topics {
		bt := bImage.Topics[name]
		if bt.ID != at.ID || len(bt.Partitions) != len(at.Partitions) || !maps.Equal(bt.Configs, at.Configs) {
			t.Fatalf("topic %s: B has id %s, %d partitions, configs %v; A has %s, %d, %v", name, bt.ID, len(bt.Partitions), bt.Configs, at.ID, len(at.Partitions), at.Configs)
		}
	}
	if n := len(bImage.Topics["b"].Partitions); n != 4 {
		t.Fatalf("topic b has %d partitions on B, want 4", n)
	}
	// The first "a" had 3 partitions; the second has 1: a-1 and a-2 must
	// be gone, and a-0 must be the new topic's.
	for _, p := range []int{1, 2} {
		if _, err := os.Stat(b.partitionDir("a", int32(p))); !os.IsNotExist(err) {
			t.Fatalf("partition a-%d of the deleted topic is still on disk: %v", p, err)
		}
	}
	if got, err := readPartitionID(b.partitionDir("a", 0)); err != nil || got != bImage.Topics["a"].ID {
		t.Fatalf("a-0 holds topic id %s (%v), want the new topic's %s", got, err, bImage.Topics["a"].ID)
	}
	want := openParts(b)
	if err := b.closePartitions(); err != nil {
		t.Fatal(err)
	}
	if err := b.ctl.meta.Close(); err != nil {
		t.Fatal(err)
	}
	b.ctl.meta = nil

	// A restart of B replays B's own log through the same publisher.
	b2 := startTestBroker(t, map[string]string{"log.dirs": b.cfg.LogDir})
	if got := openParts(b2); !slices.Equal(got, want) {
		t.Fatalf("after restart B has open %v, before %v", got, want)
	}
}

func readPartitionID(dir string) (TopicID, error) {
	id, err := nvme.ReadPartitionMetadata(dir)
	return TopicID(id), err
}
