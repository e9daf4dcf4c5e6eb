package appliance

// The connection's side of authorization: the principal and peer host a
// *conn reports as a wire.Conn, and the Broker's checks over the ACL
// authorizer (security.Authorizer), used by the handlers still in this
// package.

import (
	"strings"

	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// The Broker's authorization checks are one-line wrappers of
// security.Authorizer's (b.authz; nil when the authorizer is off, which
// they answer "allowed"), kept under the names the handlers in this
// package call; the security package's checks list the operations Kafka
// checks per API.

func (b *Broker) authorize(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return b.authz.Permits(r, op, rt, name)
}

func (b *Broker) authorizeCluster(r *wire.Request, op kmsg.ACLOperation) bool {
	return b.authz.PermitsCluster(r, op)
}

func (b *Broker) authorizeAnyTopic(r *wire.Request, op kmsg.ACLOperation) bool {
	return b.authz.PermitsAnyTopic(r, op)
}

func (b *Broker) produceDenied(r *wire.Request, req *kmsg.ProduceRequest, topic string) int16 {
	return b.authz.ProduceDenied(r, req.TransactionID, topic)
}

func (b *Broker) topicDenied(r *wire.Request, op kmsg.ACLOperation, topic string) bool {
	return b.authz.TopicDenied(r, op, topic)
}

func (b *Broker) groupDenied(r *wire.Request, op kmsg.ACLOperation, group string) bool {
	return b.authz.GroupDenied(r, op, group)
}

func (b *Broker) groupRefusal(r *wire.Request, op kmsg.ACLOperation, group string) *kerr.Error {
	return b.authz.GroupRefusal(r, op, group)
}

func (b *Broker) topicAuthzErr(r *wire.Request, op kmsg.ACLOperation, topic string) error {
	return b.authz.TopicAuthzErr(r, op, topic)
}

func (b *Broker) createTopicAuthzErr(r *wire.Request, topic string) error {
	return b.authz.CreateTopicAuthzErr(r, topic)
}

func (b *Broker) configResourceAuthzErr(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) error {
	return b.authz.ConfigResourceAuthzErr(r, op, rt, name)
}

func (b *Broker) findCoordinatorDenied(r *wire.Request, typ int8, key string) *kerr.Error {
	return b.authz.FindCoordinatorDenied(r, typ, key)
}

// deleteTopicAuthzErr checks DELETE on a topic named by name or id (an
// unknown id is left to the deletion to answer).
func (b *Broker) deleteTopicAuthzErr(r *wire.Request, name *string, id TopicID) error {
	if b.authz == nil {
		return nil
	}
	if name != nil {
		return b.authz.TopicAuthzErr(r, kmsg.ACLOperationDelete, *name)
	}
	if t := b.currentImage().TopicsByID[id]; t != nil {
		return b.authz.TopicAuthzErr(r, kmsg.ACLOperationDelete, t.Name)
	}
	return nil
}

// metadataTopicDenied is Authorizer.MetadataTopicDenied for a Metadata
// request's named topic (exists: in the image), which the request would
// auto-create when auto.create.topics.enable is on, the request asks for
// it (v4+) and the name is valid.
func (b *Broker) metadataTopicDenied(r *wire.Request, req *kmsg.MetadataRequest, name string, exists bool) bool {
	if b.authz == nil {
		return false
	}
	create := !exists && b.cfg.AutoCreateTopics && (r.Version < 4 || req.AllowAutoTopicCreation) && validTopicName(name) == nil
	return b.authz.MetadataTopicDenied(r, name, create)
}
