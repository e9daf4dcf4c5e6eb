package share

import (
	"net"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlers answers the share group APIs with its host.
type handlers struct{ host Host }

// Register adds ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
// ShareAcknowledge, DescribeShareGroupOffsets, AlterShareGroupOffsets and
// DeleteShareGroupOffsets to t, answered with host (and its Store, once the
// group coordinator runs).
func Register(t *wire.Table, host Host) {
	h := &handlers{host: host}
	t.Register(h.shareGroupHeartbeatAPI())
	t.Register(h.shareGroupDescribeAPI())
	t.Register(h.shareFetchAPI())
	t.Register(h.shareAcknowledgeAPI())
	t.Register(h.describeShareGroupOffsetsAPI())
	t.Register(h.alterShareGroupOffsetsAPI())
	t.Register(h.deleteShareGroupOffsetsAPI())
}

// topicDenied reports whether r's principal lacks op on topic.
func (h *handlers) topicDenied(r *wire.Request, op kmsg.ACLOperation, topic string) bool {
	return !h.host.Authorize(r, op, kmsg.ACLResourceTypeTopic, topic)
}

// groupDenied reports whether r's principal lacks op on group.
func (h *handlers) groupDenied(r *wire.Request, op kmsg.ACLOperation, group string) bool {
	return !h.host.Authorize(r, op, kmsg.ACLResourceTypeGroup, group)
}

// groupRefusal is the first check of a request that names a group: an
// empty id is INVALID_GROUP_ID, a principal without op on the group
// GROUP_AUTHORIZATION_FAILED; nil when neither.
func (h *handlers) groupRefusal(r *wire.Request, op kmsg.ACLOperation, group string) *kerr.Error {
	switch {
	case group == "":
		return kerr.InvalidGroupID
	case h.groupDenied(r, op, group):
		return kerr.GroupAuthorizationFailed
	}
	return nil
}

// clientHost is the client's address as Kafka reports it ("/127.0.0.1").
func clientHost(r *wire.Request) string {
	if r.Conn == nil {
		return "/"
	}
	remote := r.Conn.PeerAddr()
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	return "/" + strings.Trim(host, "[]")
}

// connClosed is closed when r's connection closes; nil (never) for
// requests without one.
func connClosed(r *wire.Request) <-chan struct{} {
	if r.Conn == nil {
		return nil
	}
	return r.Conn.Closed()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
