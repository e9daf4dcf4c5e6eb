package appliance

import (
	"net"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitBinary commits binary metadata records through the broker's
// controller host as one batch and publishes the result, as the quorum
// will when it replays committed records.
func commitBinary(t *testing.T, b *Broker, recs ...records.Record) {
	t.Helper()
	h := ctlHost{b: b}
	h.Lock()
	defer h.Unlock()
	im := h.Image()
	conv := metadata.NewConverter(im)
	var out []MetadataRecord
	for _, r := range recs {
		var err error
		if out, err = conv.Convert(out, r); err != nil {
			t.Fatal(err)
		}
	}
	next, err := h.Commit(im, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Publish(im, next); err != nil {
		t.Fatal(err)
	}
}

// routedID is the id of topic "routed".
var routedID = [16]byte{0xaa, 1}

// routedBroker is a started broker whose image registers it, broker 2
// (live, rack r2) and broker 3 (fenced), with topic "routed": partition 0
// on this broker, 1 led by broker 2 at leader epoch 4, 2 led by fenced
// broker 3.
func routedBroker(t *testing.T) (*Broker, *kconn, int32) {
	t.Helper()
	b, k := startCompressionBroker(t, nil)
	self := b.cfg.NodeID
	_, portStr, _ := net.SplitHostPort(b.Addr().String())
	port, _ := strconv.Atoi(portStr)
	ep := func(host string, port int) []records.BrokerEndpoint {
		return []records.BrokerEndpoint{{Name: "PLAINTEXT", Host: host, Port: uint16(port)}}
	}
	selfRack, rack2 := "r1", "r2"
	tid := records.UUID(routedID)
	commitBinary(t, b,
		&records.RegisterBrokerRecord{RecordVersion: 3, BrokerID: self, BrokerEpoch: 100, EndPoints: ep("127.0.0.1", port), Rack: &selfRack, Fenced: true},
		&records.RegisterBrokerRecord{RecordVersion: 3, BrokerID: 2, BrokerEpoch: 101, EndPoints: ep("10.0.0.2", 9092), Rack: &rack2, Fenced: true},
		&records.RegisterBrokerRecord{RecordVersion: 3, BrokerID: 3, BrokerEpoch: 102, EndPoints: ep("10.0.0.3", 9092), Fenced: true},
		&records.UnfenceBrokerRecord{ID: self, Epoch: 100},
		&records.UnfenceBrokerRecord{ID: 2, Epoch: 101},
		&records.TopicRecord{Name: "routed", TopicID: tid},
		&records.PartitionRecord{TopicID: tid, PartitionID: 0, Replicas: []int32{self}, ISR: []int32{self}, Leader: self},
		&records.PartitionRecord{TopicID: tid, PartitionID: 1, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 4, PartitionEpoch: 6},
		&records.PartitionRecord{TopicID: tid, PartitionID: 2, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3, LeaderEpoch: 1})
	return b, k, self
}

// TestRoutingMetadata: Metadata and DescribeCluster list the live brokers
// with racks and endpoints, a live broker as controller, and partitions
// with their leaders; the fenced broker's partition has no leader.
func TestRoutingMetadata(t *testing.T) {
	b, k, self := routedBroker(t)
	_, portStr, _ := net.SplitHostPort(b.Addr().String())
	port, _ := strconv.Atoi(portStr)
	want := []kmsg.MetadataResponseBroker{
		{NodeID: self, Host: "127.0.0.1", Port: int32(port), Rack: kmsg.StringPtr("r1")},
		{NodeID: 2, Host: "10.0.0.2", Port: 9092, Rack: kmsg.StringPtr("r2")},
	}
	if self > 2 {
		want[0], want[1] = want[1], want[0]
	}
	md := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("routed")
	md.Topics = append(md.Topics, rt)
	resp := k.do(md, 12).(*kmsg.MetadataResponse)
	if !reflect.DeepEqual(resp.Brokers, want) {
		t.Fatalf("metadata brokers %+v, want %+v", resp.Brokers, want)
	}
	if resp.ControllerID != want[0].NodeID {
		t.Fatalf("controller id %d, want the lowest live broker %d", resp.ControllerID, want[0].NodeID)
	}
	ps := resp.Topics[0].Partitions
	if len(ps) != 3 || ps[0].Leader != self || ps[0].ErrorCode != 0 || ps[1].Leader != 2 || ps[1].LeaderEpoch != 4 || ps[1].ErrorCode != 0 ||
		!reflect.DeepEqual(ps[1].Replicas, []int32{2}) || ps[2].Leader != -1 || ps[2].ErrorCode != kerr.LeaderNotAvailable.Code ||
		!reflect.DeepEqual(ps[2].Replicas, []int32{3}) {
		t.Fatalf("partitions %+v", ps)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = 1
	dr := k.do(dc, 1).(*kmsg.DescribeClusterResponse)
	if dr.ErrorCode != 0 || len(dr.Brokers) != 2 || dr.ControllerID != want[0].NodeID {
		t.Fatalf("describe cluster %+v", dr)
	}
	for i, br := range dr.Brokers {
		if br.NodeID != want[i].NodeID || br.Host != want[i].Host || br.Port != want[i].Port || *br.Rack != *want[i].Rack {
			t.Fatalf("describe cluster broker %d: %+v, want %+v", i, br, want[i])
		}
	}

	// Only the partition with a replica here opened here.
	if _, err := os.Stat(b.partitionDir("routed", 0)); err != nil {
		t.Fatalf("local partition: %v", err)
	}
	for _, p := range []int32{1, 2} {
		if _, err := os.Stat(b.partitionDir("routed", p)); !os.IsNotExist(err) {
			t.Fatalf("partition %d of another broker has a directory here: %v", p, err)
		}
	}
}

func produceTo3(k *kconn, v int16, batch []byte) *kmsg.ProduceResponse {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "routed"
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return k.do(req, v).(*kmsg.ProduceResponse)
}

// TestRoutingProduceNotLeader: Produce to partitions this broker does not
// lead answers NOT_LEADER_OR_FOLLOWER, with the current leader and its
// endpoint from v10 (KIP-951); the local partition takes the records.
func TestRoutingProduceNotLeader(t *testing.T) {
	_, k, _ := routedBroker(t)
	batch := testBatch(t, nvme.CompressionNone, 2, 0)
	resp := produceTo3(k, 11, batch)
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].BaseOffset != 0 {
		t.Fatalf("local partition: %+v", ps[0])
	}
	if ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[1].CurrentLeader.LeaderID != 2 || ps[1].CurrentLeader.LeaderEpoch != 4 {
		t.Fatalf("partition led by 2: %+v", ps[1])
	}
	if ps[2].ErrorCode != kerr.NotLeaderForPartition.Code || ps[2].CurrentLeader.LeaderID != -1 || ps[2].CurrentLeader.LeaderEpoch != -1 {
		t.Fatalf("partition led by fenced 3: %+v", ps[2])
	}
	want := []kmsg.ProduceResponseBroker{{NodeID: 2, Host: "10.0.0.2", Port: 9092, Rack: kmsg.StringPtr("r2")}}
	if !reflect.DeepEqual(resp.Brokers, want) {
		t.Fatalf("node endpoints %+v, want %+v", resp.Brokers, want)
	}
	// v9 has no KIP-951 fields: the error alone.
	resp = produceTo3(k, 9, batch)
	if p := resp.Topics[0].Partitions[1]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID == 2 || len(resp.Brokers) != 0 {
		t.Fatalf("v9: %+v, brokers %+v", p, resp.Brokers)
	}
}

func fetch3(k *kconn, v int16) *kmsg.FetchResponse {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "routed", routedID // by id from v13
	for p := int32(0); p < 3; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = append(req.Topics, ft)
	return k.do(req, v).(*kmsg.FetchResponse)
}

// TestRoutingFetchNotLeader: Fetch of partitions another broker leads
// answers NOT_LEADER_OR_FOLLOWER with CurrentLeader (v12+) and the
// leader's endpoint (v16); the local partition is read.
func TestRoutingFetchNotLeader(t *testing.T) {
	_, k, _ := routedBroker(t)
	if p := produceTo3(k, 11, testBatch(t, nvme.CompressionNone, 3, 0)).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce: %+v", p)
	}
	resp := fetch3(k, 16)
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].HighWatermark != 3 || len(ps[0].RecordBatches) == 0 {
		t.Fatalf("local partition: code %d hw %d, %d bytes", ps[0].ErrorCode, ps[0].HighWatermark, len(ps[0].RecordBatches))
	}
	if ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[1].CurrentLeader.LeaderID != 2 || ps[1].CurrentLeader.LeaderEpoch != 4 {
		t.Fatalf("partition led by 2: code %d, current leader %+v", ps[1].ErrorCode, ps[1].CurrentLeader)
	}
	if ps[2].ErrorCode != kerr.NotLeaderForPartition.Code || ps[2].CurrentLeader.LeaderID != -1 {
		t.Fatalf("partition led by fenced 3: code %d, current leader %+v", ps[2].ErrorCode, ps[2].CurrentLeader)
	}
	want := []kmsg.FetchResponseBroker{{NodeID: 2, Host: "10.0.0.2", Port: 9092, Rack: kmsg.StringPtr("r2")}}
	if !reflect.DeepEqual(resp.Brokers, want) {
		t.Fatalf("node endpoints %+v, want %+v", resp.Brokers, want)
	}
	resp = fetch3(k, 12)
	if p := resp.Topics[0].Partitions[1]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 2 || len(resp.Brokers) != 0 {
		t.Fatalf("v12: code %d leader %+v, brokers %+v", p.ErrorCode, p.CurrentLeader, resp.Brokers)
	}
	resp = fetch3(k, 11)
	if p := resp.Topics[0].Partitions[1]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("v11: code %d", p.ErrorCode)
	}
}

// TestRoutingFencedAndBack: while this broker is fenced and its partition
// leaderless it answers NOT_LEADER_OR_FOLLOWER for it; when leadership
// returns with a new leader epoch, the open partition takes that epoch
// (fetches naming it are served, older ones are FENCED_LEADER_EPOCH).
func TestRoutingFencedAndBack(t *testing.T) {
	b, k, self := routedBroker(t)
	tid := records.UUID(routedID)
	away := records.NewPartitionChangeRecord(tid, 0)
	away.Leader = -1
	commitBinary(t, b, away, &records.BrokerRegistrationChangeRecord{RecordVersion: 1, BrokerID: self, BrokerEpoch: 100, Fenced: 1})
	p := produceTo3(k, 11, testBatch(t, nvme.CompressionNone, 1, 0)).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != -1 {
		t.Fatalf("produce while fenced: %+v", p)
	}
	back := records.NewPartitionChangeRecord(tid, 0)
	back.Leader = self
	commitBinary(t, b, &records.BrokerRegistrationChangeRecord{RecordVersion: 1, BrokerID: self, BrokerEpoch: 100, Fenced: -1}, back)
	if pi := b.currentImage().Topics["routed"].Partitions[0]; pi.Leader != self || pi.LeaderEpoch != 2 || pi.PartitionEpoch != 2 {
		t.Fatalf("partition after leadership returned: %+v", pi)
	}
	fetchAt := func(epoch int32) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = routedID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = epoch, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		return k.do(req, 16).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
	// The epoch reaches the partition on its shard right after publishing.
	if !wait.Every(5*time.Millisecond, 10*time.Second, func() bool { return fetchAt(2) == 0 }) {
		t.Fatalf("fetch at the new leader epoch: error %d", fetchAt(2))
	}
	if code := fetchAt(0); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fetch at the old leader epoch: error %d", code)
	}
	if p := produceTo3(k, 11, testBatch(t, nvme.CompressionNone, 1, 0)).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce after leadership returned: %+v", p)
	}
}
