package appliance

import (
	"net"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
)

// TestQuorumOneVoterInProcess: a node whose controller.quorum.voters names
// itself alone runs its metadata through the quorum (no metadata.Log):
// the internal topics and a created topic are committed, applied and
// published, its partitions open; after a restart the image comes back
// from the quorum's storage, and the topic is served again.
func TestQuorumOneVoterInProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctl := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cid, err := nvme.RandomUUID()
	if err != nil {
		t.Fatal(err)
	}
	if err := nvme.WriteMetaProperties(dir, nvme.MetaProperties{Version: 1, ClusterID: cid.String(), NodeID: 1, DirectoryID: cid}); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.quorum.voters": "1@" + ctl,
		"controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ctl,
		"log.dirs": dir, "metrics.listener": "none", "transaction.state.log.num.partitions": "2"}
	b := startTestBroker(t, props)
	if b.ctl.quorum == nil || b.ctl.meta != nil {
		t.Fatalf("quorum %v, metadata log %v: want the quorum alone", b.ctl.quorum, b.ctl.meta)
	}
	ti, err := b.createTopic(TopicSpec{Name: "q", Partitions: 3, ReplicationFactor: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	im := b.currentImage()
	if im.Topics["q"] != ti || im.Topics[offsetsTopic] == nil || b.ctl.quorum.Image() != im {
		t.Fatalf("image after create: topics %v", im.SortedTopicNames())
	}
	for p := range int32(3) {
		if _, _, ok := b.ctl.lm.placed(ti.ID, p); !ok {
			t.Fatalf("partition q-%d not opened", p)
		}
	}
	// With a quorum, the broker's own creates (internal topics,
	// auto-creation) take an existing topic as created: several nodes
	// ask for the same one at start.
	if again, err := b.createTopic(TopicSpec{Name: "q", Partitions: 1, ReplicationFactor: 1}, false); err != nil || again.ID != ti.ID || len(again.Partitions) != 3 {
		t.Fatalf("second create of q: %+v, %v; want the existing topic", again, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := startTestBroker(t, props)
	got := b2.currentImage().Topics["q"]
	if got == nil || got.ID != ti.ID || len(got.Partitions) != 3 {
		t.Fatalf("after restart q = %+v, want id %v with 3 partitions", got, ti.ID)
	}
}
