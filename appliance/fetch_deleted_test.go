package appliance

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A long poll parked on a topic that DeleteTopics removes answers at once,
// with the error a fetch sent after the deletion gets: UNKNOWN_TOPIC_ID
// from v13, UNKNOWN_TOPIC_OR_PARTITION before (not NOT_LEADER_OR_FOLLOWER,
// which sends clients looking for a new leader of a partition that is gone).
func TestLongPollAcrossDeleteTopics(t *testing.T) {
	if raceEnabled {
		t.Skip("starts a broker; slow under the race detector")
	}
	f := newAllocFixture(t)
	id := f.b.currentImage().Topics["a"].ID
	poll := func(version int16) net.Conn {
		fr := kmsg.NewPtrFetchRequest()
		fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = 30000, 1<<20, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "a", id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 2, 0, 1<<20 // empty: the fetch waits
		ft.Partitions = append(ft.Partitions, fp)
		fr.Topics = append(fr.Topics, ft)
		nc, err := net.Dial("tcp", f.b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		if _, err := nc.Write(frameOf(fr, version, 9)); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	versions := []int16{12, 13}
	conns := []net.Conn{poll(12), poll(13)}
	wait.Until(5*time.Second, func() bool { return f.b.metrics.FetchPurgatory() >= 2 }) // both parked
	if n := f.b.metrics.FetchPurgatory(); n < 2 {
		t.Fatalf("%d fetches waiting before the deletion, want 2", n)
	}

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames, dt.TimeoutMillis = []string{"a"}, 10000
	dr := kmsg.NewPtrDeleteTopicsResponse()
	dr.SetVersion(4)
	if err := dr.ReadFrom(f.c.roundTrip(frameOf(dt, 4, 2), true)); err != nil || dr.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics: %v %+v", err, dr.Topics)
	}
	start := time.Now()
	for i, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		var sz [4]byte
		if _, err := io.ReadFull(nc, sz[:]); err != nil {
			t.Fatalf("v%d: no answer after the deletion: %v", versions[i], err)
		}
		buf := make([]byte, binary.BigEndian.Uint32(sz[:]))
		if _, err := io.ReadFull(nc, buf); err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(versions[i])
		if err := resp.ReadFrom(buf[5:]); err != nil { // correlation id, header tags
			t.Fatalf("v%d: %v", versions[i], err)
		}
		want := kerr.UnknownTopicOrPartition.Code
		if versions[i] >= 13 {
			want = kerr.UnknownTopicID.Code
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: answer %+v", versions[i], resp.Topics)
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != want {
			t.Errorf("v%d: error %d (%v), want %d (%v)", versions[i], got, kerr.ErrorForCode(got), want, kerr.ErrorForCode(want))
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the parked polls answered %v after the deletion; max_wait_ms was 30 s, want at once", d)
	}
}
