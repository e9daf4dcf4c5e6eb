package appliance

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/cluster/brokerlife"
	"github.com/ringbroker/ringbroker/cluster/membership"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMembershipInProcess connects the pieces as a combined node that is
// the active controller would: the broker's lifecycle manager registers
// and heartbeats through metadata.Membership over the broker's controller
// host; the broker appears in Metadata with its rack, new topics are
// placed on it, and its controlled shutdown leaves its partitions
// leaderless and it fenced.
func TestMembershipInProcess(t *testing.T) {
	b, k := startCompressionBroker(t, nil)
	self := b.cfg.NodeID
	m, err := metadata.NewMembership(ctlHost{b: b}, metadata.MembershipConfig{
		Registry:            membership.Config{ClusterID: b.cfg.ClusterID, SessionTimeout: 5 * time.Second, Now: time.Now},
		ControllerListeners: []string{"CONTROLLER"}})
	if err != nil {
		t.Fatal(err)
	}
	_, portStr, _ := net.SplitHostPort(b.Addr().String())
	port, _ := strconv.Atoi(portStr)
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(port)
	rack := "rack-a"
	offset := func() int64 { return b.currentImage().Offset }
	mgr, err := brokerlife.New(brokerlife.Config{NodeID: self, ClusterID: b.cfg.ClusterID, IncarnationID: [16]byte{7},
		Listeners: []kmsg.BrokerRegistrationRequestListener{l}, Rack: &rack, HeartbeatInterval: 10 * time.Millisecond,
		MetadataOffset: offset, HighWatermark: func() int64 { return offset() + 1 }}, m)
	if err != nil {
		t.Fatal(err)
	}
	mgr.Start()
	defer mgr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := mgr.WaitFor(ctx, brokerlife.Running); err != nil {
		t.Fatal(err)
	}
	if reg := b.currentImage().Registered[self]; reg == nil || reg.Fenced || reg.Epoch != mgr.Epoch() {
		t.Fatalf("registration in the image %+v, manager epoch %d", reg, mgr.Epoch())
	}

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "placed", 3, 1
	ct.Topics = append(ct.Topics, rt)
	if code := k.do(ct, 7).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic: error %d", code)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("placed")
	md.Topics = append(md.Topics, mt)
	resp := k.do(md, 12).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != self || resp.Brokers[0].Rack == nil || *resp.Brokers[0].Rack != "rack-a" ||
		resp.Brokers[0].Port != int32(port) || resp.ControllerID != self {
		t.Fatalf("metadata brokers %+v, controller %d", resp.Brokers, resp.ControllerID)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.Leader != self || p.ErrorCode != 0 {
			t.Fatalf("partition %+v", p)
		}
	}

	if err := mgr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	im := b.currentImage()
	if reg := im.Registered[self]; !reg.Fenced || !reg.InControlledShutdown {
		t.Fatalf("after controlled shutdown: %+v", reg)
	}
	for _, p := range im.Topics["placed"].Partitions {
		if p.Leader != -1 || p.LeaderEpoch != 1 {
			t.Fatalf("partition after controlled shutdown: %+v", p)
		}
	}
	resp = k.do(md, 12).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("metadata after shutdown: brokers %+v, partition %+v", resp.Brokers, resp.Topics[0].Partitions[0])
	}
}
