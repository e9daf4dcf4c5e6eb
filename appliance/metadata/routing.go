package metadata

// Routing: what clients are told of the brokers and of partition leaders.
// With no registered brokers (a single node) the node is the one broker,
// advertised on the listener the request came in on, its own controller,
// and leads every partition. Once brokers register, Metadata and
// DescribeCluster list every unfenced one with its rack and its endpoint on
// the request's listener name (Kafka's per-listener answer), the
// controller id is a live broker's (the answering node's when it is live:
// clients cannot reach the controllers, as KRaft brokers report, and a
// client sends admin requests where it is told; a dead broker that is not
// fenced yet would hold them until its session times out), a partition whose leader is
// fenced has none (LEADER_NOT_AVAILABLE), and Produce and Fetch for a
// partition another broker leads answer NOT_LEADER_OR_FOLLOWER with the
// KIP-951 hints: the current leader and epoch (Produce v10+, Fetch v12+)
// and the leader's endpoint (Produce v10+ and Fetch v16+ NodeEndpoints,
// kmsg's Brokers).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listenerOf is the name of the listener r came in on, "" when unknown.
func listenerOf(r *wire.Request) string {
	if r == nil || r.Conn == nil {
		return ""
	}
	return r.Conn.Listener()
}

// ClientBroker is one broker as Metadata and DescribeCluster list it.
type ClientBroker struct {
	ID   int32
	Host string
	Port int32
	Rack *string
}

// ClientBrokers returns the brokers clients are told of and the controller
// id they see. Without registered brokers it is self at the address
// advertised returns for r, and self as controller. Otherwise it is every
// live broker that has an endpoint on r's listener name (any endpoint when
// the listener is unknown), by id, and as controller this node when it is
// live (it forwards admin requests to the active controller, and the
// client reached it), else the lowest live id (-1 when none is live).
func ClientBrokers(im *Image, r *wire.Request, self int32, advertised func(*wire.Request) (string, int32)) ([]ClientBroker, int32) {
	if len(im.Registered) == 0 {
		host, port := advertised(r)
		return []ClientBroker{{ID: self, Host: host, Port: port}}, self
	}
	name := listenerOf(r)
	var out []ClientBroker
	controller := int32(-1)
	for _, b := range im.LiveBrokers() {
		if controller < 0 || b.ID == self {
			controller = b.ID
		}
		if e, ok := b.Endpoint(name); ok {
			out = append(out, ClientBroker{ID: b.ID, Host: e.Host, Port: int32(e.Port), Rack: b.Rack})
		}
	}
	return out, controller
}

// MetadataBrokers is ClientBrokers as Metadata's brokers and controller
// id.
func MetadataBrokers(im *Image, r *wire.Request, self int32, advertised func(*wire.Request) (string, int32)) ([]kmsg.MetadataResponseBroker, int32) {
	bs, ctl := ClientBrokers(im, r, self, advertised)
	out := make([]kmsg.MetadataResponseBroker, len(bs))
	for i, b := range bs {
		out[i] = kmsg.MetadataResponseBroker{NodeID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack}
	}
	return out, ctl
}

// ClientLeader returns p's leader as Metadata reports it and the
// partition's error code: LEADER_NOT_AVAILABLE when it has no live leader.
func (im *Image) ClientLeader(p *PartitionImage) (int32, int16) {
	l := im.LeaderOf(p)
	if l < 0 {
		return -1, kerr.LeaderNotAvailable.Code
	}
	return l, 0
}

// NotLeader reports whether partition p of t exists and is led by another
// broker than self (or by none) while brokers are registered: Produce and
// Fetch answer it NOT_LEADER_OR_FOLLOWER. A single node leads everything.
func (im *Image) NotLeader(t *TopicImage, p int32, self int32) bool {
	if len(im.Registered) == 0 || t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return false
	}
	return im.LeaderOf(&t.Partitions[p]) != self
}

// Hosts reports whether partition p lives on node: always without
// registered brokers, else when node is one of its replicas (the log
// manager opens only those).
func (im *Image) Hosts(p *PartitionImage, node int32) bool {
	if len(im.Registered) == 0 {
		return true
	}
	for _, id := range p.Replicas {
		if id == node {
			return true
		}
	}
	return false
}

// leaderHint returns the current leader and leader epoch of partition p of
// t for a KIP-951 hint (-1, -1 when it has no live leader), and the
// leader's endpoint on r's listener.
func leaderHint(im *Image, r *wire.Request, t *TopicImage, p int32) (id, epoch int32, ep ClientBroker, hasEP bool) {
	pi := &t.Partitions[p]
	id = im.LeaderOf(pi)
	if id < 0 {
		return -1, -1, ep, false
	}
	b := im.Registered[id]
	e, ok := b.Endpoint(listenerOf(r))
	if !ok {
		return id, pi.LeaderEpoch, ep, false
	}
	return id, pi.LeaderEpoch, ClientBroker{ID: id, Host: e.Host, Port: int32(e.Port), Rack: b.Rack}, true
}

// ProduceNotLeader answers partition p of t, which this broker does not
// lead (Image.NotLeader), in rp: NOT_LEADER_OR_FOLLOWER, and from v10 the
// current leader in rp and its endpoint in resp's brokers (once each).
func ProduceNotLeader(resp *kmsg.ProduceResponse, rp *kmsg.ProduceResponseTopicPartition, im *Image, r *wire.Request, t *TopicImage, p int32) {
	rp.ErrorCode = kerr.NotLeaderForPartition.Code
	if r.Version < 10 {
		return
	}
	id, epoch, ep, ok := leaderHint(im, r, t, p)
	rp.CurrentLeader = kmsg.ProduceResponseTopicPartitionCurrentLeader{LeaderID: id, LeaderEpoch: epoch}
	if !ok {
		return
	}
	for _, b := range resp.Brokers {
		if b.NodeID == id {
			return
		}
	}
	resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: id, Host: ep.Host, Port: ep.Port, Rack: ep.Rack})
}

// FetchNotLeader returns the KIP-951 hint for partition p of t, which this
// broker does not lead: the current leader and epoch (-1, -1 when none),
// and dst with the leader's endpoint appended (once) for Fetch v16+.
func FetchNotLeader(dst []kmsg.FetchResponseBroker, im *Image, r *wire.Request, t *TopicImage, p int32) (id, epoch int32, brokers []kmsg.FetchResponseBroker) {
	id, epoch, ep, ok := leaderHint(im, r, t, p)
	if !ok || r.Version < 16 {
		return id, epoch, dst
	}
	for _, b := range dst {
		if b.NodeID == id {
			return id, epoch, dst
		}
	}
	return id, epoch, append(dst, kmsg.FetchResponseBroker{NodeID: id, Host: ep.Host, Port: ep.Port, Rack: ep.Rack})
}
