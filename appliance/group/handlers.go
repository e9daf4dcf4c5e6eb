package group

// What the group API handlers (handleJoinGroup, handleSyncGroup,
// handleHeartbeat, handleLeaveGroup, handleOffsetCommit, handleOffsetFetch,
// handleOffsetDelete, handleListGroups, handleDescribeGroups,
// handleDeleteGroups, handleConsumerGroupHeartbeat,
// handleConsumerGroupDescribe; Register puts them in the table) share: each
// posts its work to the group's coordinator shard (ask) and waits for the
// answer off the shard.

import (
	"net"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker is what the group API handlers need of the broker.
type Broker interface {
	// Coordinator is the loaded group coordinator; nil until the broker
	// has replayed __consumer_offsets (answered COORDINATOR_NOT_AVAILABLE).
	Coordinator() *Coordinator
	// Image is the current metadata image.
	Image() Image
}

// apiDef is one API key of this package: each handler file declares its
// own next to its behaviour comment; Register binds them to a broker.
type apiDef struct {
	key      int16
	min, max int16
	handle   func(h *handlers, r *wire.Request) any
}

// handlers runs the group APIs with one broker.
type handlers struct{ b Broker }

// Register registers the group APIs (classic groups, offsets, KIP-848
// consumer groups) into t, answered with b. ConsumerGroupHeartbeat and
// ConsumerGroupDescribe are registered even when the consumer protocol is
// off; ApiVersions leaves them out then (ConsumerProtocolEnabled).
func Register(t *wire.Table, b Broker) {
	h := &handlers{b: b}
	for _, d := range []apiDef{
		joinGroupAPI, syncGroupAPI, heartbeatAPI, leaveGroupAPI, listGroupsAPI,
		describeGroupsAPI, deleteGroupsAPI, offsetCommitAPI, offsetFetchAPI, offsetDeleteAPI,
		consumerGroupHeartbeatAPI, consumerGroupDescribeAPI,
	} {
		handle := d.handle
		t.Register(wire.API{Key: d.key, Min: d.min, Max: d.max, Handle: func(r *wire.Request) any { return handle(h, r) }})
	}
}

// coord is the loaded coordinator, nil before.
func (h *handlers) coord() *Coordinator { return h.b.Coordinator() }

// image is the current metadata image.
func (h *handlers) image() Image { return h.b.Image() }

// ask runs fn with groupID's Manager on its coordinator shard (Ask). The
// Reply is the zero one when the coordinator is not loaded.
func ask[T any](h *handlers, groupID string, fn func(m *Manager, reply func(T))) wire.Reply[T] {
	c := h.coord()
	if c == nil {
		return wire.Reply[T]{}
	}
	return Ask(c, groupID, fn)
}

// groupDenied reports whether the principal lacks op on group.
func (h *handlers) groupDenied(r *wire.Request, op kmsg.ACLOperation, group string) bool {
	return !r.Allowed(op, kmsg.ACLResourceTypeGroup, group)
}

// topicDenied reports whether the principal lacks op on topic.
func (h *handlers) topicDenied(r *wire.Request, op kmsg.ACLOperation, topic string) bool {
	return !r.Allowed(op, kmsg.ACLResourceTypeTopic, topic)
}

// listGroupsFilter is ListGroups' visibility check: every group with
// DESCRIBE on the CLUSTER, else the groups with DESCRIBE on each.
func (h *handlers) listGroupsFilter(r *wire.Request) func(group string) bool {
	if r.AllowedCluster(kmsg.ACLOperationDescribe) {
		return func(string) bool { return true }
	}
	return func(g string) bool { return r.Allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g) }
}

// clientHost is the client's address as Kafka reports it ("/127.0.0.1").
func clientHost(r *wire.Request) string {
	remote := r.Conn.PeerAddr()
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	return "/" + strings.Trim(host, "[]")
}

func strPtr(s string) *string { return &s }
