package appliance

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Found by kafka-go's TestClientElectLeaders, TestClient*PartitionReassignments*
// (make compat): the broker closed the connection on these keys.

func TestElectLeadersHandler(t *testing.T) {
	b := adminTestBroker(t, nil)
	adminAddTopic(t, b, "t", 2, 0, nil)
	for _, v := range []int16{0, 1, 2} {
		req := kmsg.NewPtrElectLeadersRequest()
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 1, 2}
		req.Topics = append(req.Topics, rt)
		resp := adminRun(t, b, req, v).(*kmsg.ElectLeadersResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("v%d: error %d, topics %+v", v, resp.ErrorCode, resp.Topics)
		}
		want := []int16{kerr.ElectionNotNeeded.Code, kerr.ElectionNotNeeded.Code, kerr.UnknownTopicOrPartition.Code}
		for i, p := range resp.Topics[0].Partitions {
			if p.Partition != int32(i) || p.ErrorCode != want[i] {
				t.Errorf("v%d partition %d: error %d, want %d", v, p.Partition, p.ErrorCode, want[i])
			}
		}
	}
	all := kmsg.NewPtrElectLeadersRequest() // null topics: every partition, none elected
	if resp := adminRun(t, b, all, 2).(*kmsg.ElectLeadersResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Errorf("all partitions: error %d, %d topics; want 0, none", resp.ErrorCode, len(resp.Topics))
	}
	bad := kmsg.NewPtrElectLeadersRequest()
	bad.ElectionType = 2
	if resp := adminRun(t, b, bad, 1).(*kmsg.ElectLeadersResponse); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("election type 2: error %d, want INVALID_REQUEST", resp.ErrorCode)
	}
}

func TestPartitionReassignmentHandlers(t *testing.T) {
	b := adminTestBroker(t, nil)
	adminAddTopic(t, b, "t", 2, 0, nil)
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "t"
	for _, c := range []struct {
		p        int32
		replicas []int32
	}{{0, []int32{1}}, {1, []int32{2}}, {1, []int32{1, 1}}, {1, []int32{}}, {0, nil}, {5, []int32{1}}} {
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition, p.Replicas = c.p, c.replicas
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	want := []int16{0, kerr.InvalidReplicaAssignment.Code, kerr.InvalidReplicaAssignment.Code, kerr.InvalidReplicaAssignment.Code,
		kerr.NoReassignmentInProgress.Code, kerr.UnknownTopicOrPartition.Code}
	for _, v := range []int16{0, 1} {
		resp := adminRun(t, b, req, v).(*kmsg.AlterPartitionAssignmentsResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(want) {
			t.Fatalf("alter v%d: error %d, topics %+v", v, resp.ErrorCode, resp.Topics)
		}
		for i, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != want[i] {
				t.Errorf("alter v%d item %d (partition %d): error %d, want %d", v, i, p.Partition, p.ErrorCode, want[i])
			}
		}
	}
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lt := kmsg.NewListPartitionReassignmentsRequestTopic()
	lt.Topic, lt.Partitions = "t", []int32{0, 1}
	list.Topics = append(list.Topics, lt)
	if resp := adminRun(t, b, list, 0).(*kmsg.ListPartitionReassignmentsResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Errorf("list: error %d, %d topics; want 0, none in progress", resp.ErrorCode, len(resp.Topics))
	}
}
