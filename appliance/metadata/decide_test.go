package metadata

import "testing"

// TestCreateTopicRecords: the records of a create and of added partitions
// apply to an image and give the topic, its partitions led by the node
// and its overrides; a name that differs only by '.' and '_' collides.
func TestCreateTopicRecords(t *testing.T) {
	id := NewTopicID()
	recs := CreateTopicRecords("a.b", id, 3, 7, map[string]string{"retention.ms": "10", "cleanup.policy": "compact"})
	im, err := NewImage(testChecks{}).Apply(int64(len(recs))-1, recs)
	if err != nil {
		t.Fatal(err)
	}
	tp := im.Topics["a.b"]
	if tp == nil || tp.ID != id || len(tp.Partitions) != 3 || len(tp.Configs) != 2 || tp.Configs["retention.ms"] != "10" {
		t.Fatalf("topic %+v", tp)
	}
	for i, p := range tp.Partitions {
		if p.Partition != int32(i) || p.Leader != 7 || p.LeaderEpoch != 0 || len(p.Replicas) != 1 || p.Replicas[0] != 7 || len(p.ISR) != 1 || p.ISR[0] != 7 {
			t.Fatalf("partition %d: %+v", i, p)
		}
	}
	more := AddPartitionRecords(id, 3, 5, 7)
	if im, err = im.Apply(im.Offset+int64(len(more)), more); err != nil || len(im.Topics["a.b"].Partitions) != 5 {
		t.Fatalf("add partitions: %v", err)
	}
	if got := im.CollidingTopic("a_b"); got != "a.b" {
		t.Errorf("CollidingTopic(a_b) = %q, want a.b", got)
	}
	if got := im.CollidingTopic("a.b"); got != "" {
		t.Errorf("CollidingTopic(a.b) = %q, want none (the topic itself)", got)
	}
}
