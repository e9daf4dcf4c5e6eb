package metadata

import (
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
)

func topicRecs(name string, id TopicID, partitions int32) []Record {
	recs := []Record{{Topic: &TopicRecord{Name: name, ID: id}}}
	for p := int32(0); p < partitions; p++ {
		recs = append(recs, Record{Partition: &PartitionRecord{TopicID: id, Partition: p, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}})
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
	m, im, err := OpenLog(dir, logger, LogOptions{Checks: testChecks{}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.Close() }()
	kept := NewTopicID()
	if im, err = m.Commit(im, topicRecs("kept", kept, 2)); err != nil {
		t.Fatal(err)
	}
	keptImage := im.Topics["kept"]

	// A failed write (as a full disk's): offline, storage-marked errors.
	ferr := m.fail(syscall.ENOSPC)
	if !errors.Is(ferr, ErrStorage) || !m.Offline() {
		t.Fatalf("failed write: %v, offline %v; want ErrStorage and offline", ferr, m.Offline())
	}
	if errors.Is(errors.New("does not apply"), ErrStorage) {
		t.Fatal("a change that does not apply answered as a storage error")
	}
	// The next commit reopens the log, finds it as im says and goes on.
	next, err := m.Commit(im, topicRecs("second", NewTopicID(), 1))
	if err != nil {
		t.Fatalf("commit after the failure: %v", err)
	}
	if m.Offline() || next.Topics["kept"] != keptImage {
		t.Fatalf("after the repair: offline %v, kept's image replaced %v", m.Offline(), next.Topics["kept"] != keptImage)
	}
	im = next

	// A creation in the log whose removal could not be written: the image
	// in force lacks the topic, the log holds it.
	half := NewTopicID()
	withHalf, err := m.Commit(im, topicRecs("half", half, 3))
	if err != nil {
		t.Fatal(err)
	}
	m.fail(syscall.ENOSPC)
	m.DeferUndo(withHalf.Offset, []Record{{RemoveTopic: &RemoveTopicRecord{ID: half}}})
	next, err = m.Commit(im, topicRecs("third", NewTopicID(), 1))
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
	if _, err := m.Commit(im, topicRecs("fourth", NewTopicID(), 1)); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("commit on a stale image after a failure: %v, want a storage error asking for a restart", err)
	}
	if !m.Offline() {
		t.Fatal("metadata log online again though it holds changes the image in force lacks")
	}

	m.Close()
	m2, replayed, err := OpenLog(dir, logger, LogOptions{Checks: testChecks{}})
	if err != nil {
		t.Fatal(err)
	}
	m = m2
	if got, want := strings.Join(replayed.SortedTopicNames(), ","), "kept,second,third"; got != want || replayed.Offset != next.Offset {
		t.Fatalf("replayed topics %s at offset %d, want %s at %d", got, replayed.Offset, want, next.Offset)
	}
}
