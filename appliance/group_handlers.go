package appliance

// Helpers shared by the group API handlers (find_coordinator.go,
// join_group.go, sync_group.go, heartbeat.go, leave_group.go,
// offset_commit.go, offset_fetch.go, list_groups.go, describe_groups.go,
// delete_groups.go, offset_delete.go): each posts its work to the group's
// coordinator shard and waits for the answer off the shard.

import (
	"net"
	"strings"
)

// groupAsk runs fn with groupID's manager on its shard. fn answers through
// reply, once (later calls are dropped, never blocking the shard). It
// returns nil when the coordinator is not available (starting or closing).
func (b *Broker) groupAsk(groupID string, fn func(m *groupManager, reply func(any))) <-chan any {
	if b.groups == nil {
		return nil
	}
	ch := make(chan any, 1)
	reply := func(v any) {
		select {
		case ch <- v:
		default:
		}
	}
	if !b.groups.run(groupID, func(m *groupManager) { fn(m, reply) }) {
		return nil
	}
	return ch
}

// groupWait waits for an answer from groupAsk; false if groupAsk asked no
// coordinator (nil ch) or the broker closes first.
func (b *Broker) groupWait(ch <-chan any) (any, bool) {
	if ch == nil {
		return nil, false
	}
	select {
	case v := <-ch:
		return v, true
	case <-b.closing:
		return nil, false
	}
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
