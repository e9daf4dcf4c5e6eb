package appliance

import (
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicRecs(name string, id TopicID, partitions int32) []MetadataRecord {
	recs := []MetadataRecord{{Topic: &TopicRecord{Name: name, ID: id}}}
	for p := int32(0); p < partitions; p++ {
		recs = append(recs, MetadataRecord{Partition: &PartitionRecord{TopicID: id, Partition: p, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}})
	}
	return recs
}

// TestAddedPartitionThatCannotOpenIsOffline: a partition added to the
// metadata whose log then cannot be opened (here a file where its
// directory goes; on a full disk, a checkpoint it cannot write) answers
// KAFKA_STORAGE_ERROR and is listed offline (LEADER_NOT_AVAILABLE, leader
// -1), not with a leader that does not serve it; the partitions that
// opened serve. A created topic whose partitions cannot all open is
// removed again.
func TestAddedPartitionThatCannotOpenIsOffline(t *testing.T) {
	dir := t.TempDir()
	b := metaTestBroker(t, dir)
	if _, err := b.createTopic(TopicSpec{Name: "grow", Partitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.partitionDir("grow", 2), []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := b.controller().CreatePartitions("grow", 3, false)
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("add partitions with one that cannot open: %v, want KAFKA_STORAGE_ERROR", err)
	}
	im := b.currentImage()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("grow")
	req.Topics = append(req.Topics, rt)
	resp := buildMetadata(b, &wire.Request{Version: 12, Req: req}, req, nil).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 || len(im.Topics["grow"].Partitions) != 3 {
		t.Fatalf("metadata after the partial add: %+v", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		open := p.Partition != 2
		switch {
		case open && (p.ErrorCode != 0 || p.Leader != 1):
			t.Errorf("grow-%d opened but is listed with error %d, leader %d", p.Partition, p.ErrorCode, p.Leader)
		case !open && (p.ErrorCode != kerr.LeaderNotAvailable.Code || p.Leader != -1):
			t.Errorf("grow-2 did not open but is listed with error %d, leader %d; want LEADER_NOT_AVAILABLE, -1", p.ErrorCode, p.Leader)
		}
	}

	if err := os.WriteFile(b.partitionDir("blocked", 1), []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.createTopic(TopicSpec{Name: "blocked", Partitions: 2, ReplicationFactor: 1}, false); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("create with a partition that cannot open: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if b.currentImage().Topics["blocked"] != nil {
		t.Fatal("the topic whose partition could not open is in the metadata")
	}
	if im := replayImage(t, b, dir); im.Topics["blocked"] != nil || len(im.Topics["grow"].Partitions) != 3 {
		t.Fatalf("replayed: blocked %v, grow %d partitions", im.Topics["blocked"] != nil, len(im.Topics["grow"].Partitions))
	}
}

// openMetadataLog opens the metadata log under dir as the broker does,
// with the concepts' checks and the default snapshot interval.
func openMetadataLog(dir string, logger *slog.Logger) (*metadata.Log, *Image, error) {
	return metadata.OpenLog(dir, logger, metadata.LogOptions{Checks: imageChecks{}})
}
