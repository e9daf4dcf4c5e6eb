package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchTagsMatchKmsg: a partition's DivergingEpoch and CurrentLeader
// tags and a response's NodeEndpoints are the bytes kmsg writes.
func TestFetchTagsMatchKmsg(t *testing.T) {
	rack := "r"
	want := kmsg.NewFetchResponse()
	want.Version = 16
	ft := kmsg.NewFetchResponseTopic()
	ft.TopicID = [16]byte{1}
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.Partition, fp.ErrorCode = 3, 6
	fp.DivergingEpoch.Epoch, fp.DivergingEpoch.EndOffset = 7, 70
	fp.CurrentLeader.LeaderID, fp.CurrentLeader.LeaderEpoch = 2, 9
	ft.Partitions = append(ft.Partitions, fp)
	want.Topics = append(want.Topics, ft)
	want.Brokers = []kmsg.FetchResponseBroker{{NodeID: 2, Host: "h2", Port: 9092, Rack: &rack}, {NodeID: 4, Host: "h4", Port: 1}}
	// The response ends with the partition's tags, the topic's (empty)
	// and the response's: ours must be kmsg's last bytes.
	ref := want.AppendTo(nil)
	part := AppendFetchPartitionTags(nil, true, 7, 70, true, 2, 9)
	resp := AppendFetchResponseTags(nil, 16, want.Brokers)
	tail := append(append(part, 0 /* topic tags */), resp...)
	if len(ref) < len(tail) || string(ref[len(ref)-len(tail):]) != string(tail) {
		t.Fatalf("tags\n% x\nkmsg ends\n% x", tail, ref[len(ref)-len(tail):])
	}
	if got := AppendFetchPartitionTags(nil, false, 0, 0, false, 0, 0); len(got) != 1 || got[0] != 0 {
		t.Fatalf("no tags: % x", got)
	}
	if got := AppendFetchResponseTags(nil, 15, want.Brokers); len(got) != 1 || got[0] != 0 {
		t.Fatalf("v15 response tags: % x", got)
	}
}
