package appliance

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"

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

// TestMetadataLogRepair: a metadata log a failed write took offline
// answers KAFKA_STORAGE_ERROR-marked errors while it cannot be reopened
// as the image in force says, and is repaired by the next commit when it
// can: after a plain failed write it goes on from the same image; after a
// topic creation whose removal could not be written (createTopic's undo)
// it writes the removal first and goes on from the image in force, whose
// partitions keep their views (the open partitions publish to them). A
// restart replays the same topics.
func TestMetadataLogRepair(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	m, im, err := openMetadataLog(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.close() }()
	kept := newTopicID()
	if im, err = m.commit(im, topicRecs("kept", kept, 2)); err != nil {
		t.Fatal(err)
	}
	keptImage := im.Topics["kept"]

	// A failed write (as a full disk's): offline, storage-marked errors.
	ferr := m.fail(syscall.ENOSPC)
	if !errors.Is(commitErr(ferr), kerr.KafkaStorageError) || !m.offline.Load() {
		t.Fatalf("failed write: %v, offline %v; want KAFKA_STORAGE_ERROR and offline", commitErr(ferr), m.offline.Load())
	}
	if errors.Is(commitErr(errors.New("does not apply")), kerr.KafkaStorageError) {
		t.Fatal("a change that does not apply answered as a storage error")
	}
	// The next commit reopens the log, finds it as im says and goes on.
	next, err := m.commit(im, topicRecs("second", newTopicID(), 1))
	if err != nil {
		t.Fatalf("commit after the failure: %v", err)
	}
	if m.offline.Load() || next.Topics["kept"] != keptImage {
		t.Fatalf("after the repair: offline %v, kept's image replaced %v", m.offline.Load(), next.Topics["kept"] != keptImage)
	}
	im = next

	// A creation in the log whose removal could not be written: the image
	// in force lacks the topic, the log holds it.
	half := newTopicID()
	withHalf, err := m.commit(im, topicRecs("half", half, 3))
	if err != nil {
		t.Fatal(err)
	}
	m.fail(syscall.ENOSPC)
	m.deferUndo(withHalf.Offset, []MetadataRecord{{RemoveTopic: &RemoveTopicRecord{ID: half}}})
	next, err = m.commit(im, topicRecs("third", newTopicID(), 1))
	if err != nil {
		t.Fatalf("commit after the deferred undo: %v", err)
	}
	if _, ok := next.Topics["half"]; ok || next.Topics["third"] == nil || next.Topics["kept"].ID != kept {
		t.Fatalf("after the undo: topics %v, kept's id kept %v", next.SortedTopicNames(), next.Topics["kept"].ID == kept)
	}
	if next.Offset != m.log.LogEndOffset()-1 {
		t.Fatalf("image at offset %d, log ends at %d", next.Offset, m.log.LogEndOffset())
	}

	// A log holding a change the image in force does not (no undo
	// pending for it): stays offline, the broker must restart.
	m.fail(syscall.EIO)
	if _, err := m.commit(im, topicRecs("fourth", newTopicID(), 1)); !errors.Is(commitErr(err), kerr.KafkaStorageError) || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("commit on a stale image after a failure: %v, want a storage error asking for a restart", err)
	}
	if !m.offline.Load() {
		t.Fatal("metadata log online again though it holds changes the image in force lacks")
	}

	m.close()
	m2, replayed, err := openMetadataLog(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	m = m2
	if got, want := strings.Join(replayed.SortedTopicNames(), ","), "kept,second,third"; got != want || replayed.Offset != next.Offset {
		t.Fatalf("replayed topics %s at offset %d, want %s at %d", got, replayed.Offset, want, next.Offset)
	}
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
	err := b.createPartitions("grow", 3, false)
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
