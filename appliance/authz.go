package appliance

// The connection's side of authorization: the principal and peer host a
// *conn reports as a wire.Conn, and the Broker's checks over the ACL
// authorizer (appliance/security), used by the handlers still in this
// package (authorizer_checks.go lists them per API).

import (
	"strings"

	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL wire codes used by the checks (kmsg's enums, shortened).
const (
	aclResTopic   = kmsg.ACLResourceTypeTopic
	aclResGroup   = kmsg.ACLResourceTypeGroup
	aclResCluster = kmsg.ACLResourceTypeCluster
	aclResTxnID   = kmsg.ACLResourceTypeTransactionalId
	aclOpMaxCode  = kmsg.ACLOperationDescribeTokens
)

// Principal is the connection's authenticated principal: User:<name>
// after a successful SASL authentication (conn.Authenticated), else
// User:ANONYMOUS (PLAINTEXT listeners, and a nil conn).
func (c *conn) Principal() string {
	if c == nil || c.user == "" {
		return security.AnonymousPrincipal
	}
	return c.user
}

// PeerHost is the IP address of the connection's peer, without the port, as
// ACL hosts name it.
func (c *conn) PeerHost() string {
	if c == nil {
		return ""
	}
	h := c.remote
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h[i+1:], ']') < 0 {
		h = h[:i]
	}
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	return h
}

// PeerAddr is the peer's address, host:port.
func (c *conn) PeerAddr() string { return c.remote }

// Listener is the name of the listener that accepted the connection; ""
// for connections tests build by hand.
func (c *conn) Listener() string {
	if c.lis == nil {
		return ""
	}
	return c.lis.Name
}

// Closed is closed once the connection is.
func (c *conn) Closed() <-chan struct{} { return c.closed }

// authorize reports whether the request's principal may perform op on the
// named resource. With the authorizer off it is one branch and true.
func (b *Broker) authorize(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return b.authz == nil || b.authz.Authorize(r, op, rt, name)
}

// authorizeCluster is authorize on the CLUSTER resource.
func (b *Broker) authorizeCluster(r *wire.Request, op kmsg.ACLOperation) bool {
	return b.authorize(r, op, aclResCluster, wire.ClusterResource)
}

// authorizeAnyTopic reports whether the principal may perform op on some
// topic (authorizeAnyOfType).
func (b *Broker) authorizeAnyTopic(r *wire.Request, op kmsg.ACLOperation) bool {
	return b.authz == nil || b.authz.AuthorizeAny(r, op, aclResTopic)
}
