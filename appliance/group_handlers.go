package appliance

// Helpers shared by the group API handlers (find_coordinator.go,
// join_group.go, sync_group.go, heartbeat.go, leave_group.go,
// offset_commit.go, offset_fetch.go, list_groups.go, describe_groups.go,
// delete_groups.go, offset_delete.go): each posts its work to the group's
// coordinator shard and waits for the answer off the shard.

import (
	"net"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
)

// askGroup runs fn with groupID's manager on its coordinator shard
// (wire.Ask): fn answers through reply, once. The Reply is the zero one
// when the coordinator is not available (not started, or closing).
func askGroup[T any](b *Broker, groupID string, fn func(m *groupManager, reply func(T))) wire.Reply[T] {
	gc := b.groups
	if gc == nil {
		return wire.Reply[T]{}
	}
	op := gc.partitionOf(groupID)
	return wire.Ask(b.closing, op.st.loop.Post, func(reply func(T)) { fn(op.mgr, reply) })
}

// clientHost is the client's address as Kafka reports it ("/127.0.0.1").
func clientHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	return "/" + strings.Trim(host, "[]")
}

func strPtr(s string) *string { return &s }
