package quota

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestManagerTable: requests are counted against the values SetValues
// installed, and only for the kinds they set; a new table replaces the
// old one.
func TestManagerTable(t *testing.T) {
	q, err := NewManager(Config{WindowNum: 2, WindowMs: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	produce := kmsg.NewPtrProduceRequest()
	pt := kmsg.NewProduceRequestTopic()
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = make([]byte, 1500)
	pt.Partitions = append(pt.Partitions, pp, pp)
	produce.Topics = append(produce.Topics, pt)
	now := time.Unix(100, 0)
	if q.Values() != nil || q.Kinds() != 0 || q.RecordProduce("User:alice", "c", produce, now) != 0 {
		t.Fatal("a new Manager has quotas")
	}
	alice := Entity{User: Named("alice")}
	q.SetValues(Values{alice: {ProducerByteRate: 1000}})
	if q.Kinds() != KindProduce || q.Values()[alice][ProducerByteRate] != 1000 {
		t.Fatalf("kinds %b values %v", q.Kinds(), q.Values())
	}
	// 3000 bytes in one second against 1000 B/s: two seconds over.
	if d := q.RecordProduce("User:alice", "c", produce, now); d != 2*time.Second {
		t.Errorf("alice's produce throttled %v, want 2s", d)
	}
	if d := q.RecordProduce("User:bob", "c", produce, now); d != 0 {
		t.Errorf("bob, without a quota, throttled %v", d)
	}
	if d := q.RecordFetch("User:alice", "c", 1<<30, now); d != 0 {
		t.Errorf("fetch without consumer_byte_rate throttled %v", d)
	}
	q.SetValues(Values{Entity{ClientID: Default()}: {ConsumerByteRate: 1000}})
	if q.Kinds() != KindFetch {
		t.Fatalf("kinds %b after replacing the values", q.Kinds())
	}
	if d := q.RecordProduce("User:alice", "c", produce, now); d != 0 {
		t.Errorf("produce after its quota was removed throttled %v", d)
	}
	if d := q.RecordFetch("User:bob", "d", 2000, now); d != time.Second {
		t.Errorf("fetch of 2000 B against 1000 B/s throttled %v, want 1s", d)
	}
	q.SetValues(nil)
	if q.Kinds() != 0 || q.Values() != nil {
		t.Fatal("SetValues(nil) left quotas")
	}
}

// TestHold returns at once for no throttle and when either channel
// closes.
func TestHold(t *testing.T) {
	Hold(0, nil, nil)
	Hold(-time.Second, nil, nil)
	closed := make(chan struct{})
	close(closed)
	Hold(time.Hour, closed, nil)
	Hold(time.Hour, nil, closed)
}

func TestUser(t *testing.T) {
	if User("User:alice") != "alice" || User("User:ANONYMOUS") != "ANONYMOUS" {
		t.Fatal(User("User:alice"))
	}
}
