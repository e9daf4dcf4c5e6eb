package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// Request is what a handler receives: the request header, the decoded body
// and what handlers may know of the connection. The broker fills it in
// storage it reuses (produce and fetch allocate nothing per request), so a
// handler must not keep r after its answer is complete; what it needs
// later it copies.
//
// A handler returns one of:
//   - a kmsg.Response: the answer, written in request order;
//   - Deferred: a part that waits (coordinator replies, metadata changes),
//     run on a goroutine of its own; it returns one of these results too;
//   - AnswerLater: the handler (or something it started) completes the
//     request itself through the broker's own owner state;
//   - RespondAndClose: write a response, then close the connection;
//   - Close: close the connection after the answers before this one;
//   - *FixedVersion: a response encoded at a version of its own;
//   - a response type of the broker's own, passed through unchanged.
type Request struct {
	// Key and Version are the API key and version of the request header;
	// CorrID its correlation id and ClientID its client id.
	Key, Version int16
	CorrID       int32
	ClientID     string
	// Req is the decoded body (*kmsg.ProduceRequest for key 0, ...).
	Req kmsg.Request
	// Conn is the connection the request came on; nil for requests that
	// tests build without one.
	Conn Conn
	// Authz answers the authorization questions of Allowed; nil when the
	// broker runs without an authorizer (everything is allowed).
	Authz Authorizer
	// Owner is the broker's own per-request state (its request storage),
	// opaque to wire and to concept packages. It holds a pointer, so
	// setting and reading it allocates nothing.
	Owner any
}

// Conn is what handlers may know of a request's connection. Every method
// is safe from the request's handler and its Deferred part.
type Conn interface {
	// Principal is the authenticated principal, "User:<name>", or
	// "User:ANONYMOUS" where no SASL authentication took place.
	Principal() string
	// PeerAddr is the peer's address, "host:port".
	PeerAddr() string
	// PeerHost is the peer's IP address without the port, as ACL hosts
	// name it.
	PeerHost() string
	// Listener is the name of the listener that accepted the connection
	// ("PLAINTEXT", "SASL_PLAINTEXT", ...); "" when unknown.
	Listener() string
	// Closed is closed once the connection is closed; a waiting handler
	// gives up on it.
	Closed() <-chan struct{}
}

// Deferred is a handler's waiting part; the broker runs it on a goroutine
// of its own and treats what it returns as the handler's result.
type Deferred func() any

// AnswerLater is returned by a handler that completes the request itself
// (from a shard, or a goroutine of its own).
type AnswerLater struct{}

// RespondAndClose is returned by a handler to write Resp and then close
// the connection, logging Reason (Kafka's answer to a failed SASL
// handshake or authentication).
type RespondAndClose struct {
	Resp   kmsg.Response
	Reason string
}

// FixedVersion is a response encoded at Version instead of the request's
// (ApiVersions and SaslHandshake answering an unsupported version in v0).
type FixedVersion struct {
	Resp    kmsg.Response
	Version int16
}

// Close is returned by a handler to close the connection once the answers
// before it are written, logging Reason.
type Close struct{ Reason string }

// Authorizer decides whether a request's principal may perform an
// operation on a resource. The broker installs its ACL authorizer as one;
// concept packages ask through Request.Allowed without importing it.
type Authorizer interface {
	// Authorize reports whether r's principal (from r.Conn) may perform op
	// on the resource of type rt named name.
	Authorize(r *Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
	// AuthorizeAny reports whether r's principal may perform op on some
	// resource of type rt (Kafka's authorizeByResourceType).
	AuthorizeAny(r *Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool
}

// Allowed reports whether r may perform op on the resource rt/name: true
// when the broker runs without an authorizer.
func (r *Request) Allowed(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return r.Authz == nil || r.Authz.Authorize(r, op, rt, name)
}

// AllowedAny reports whether r may perform op on some resource of type rt:
// true when the broker runs without an authorizer.
func (r *Request) AllowedAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	return r.Authz == nil || r.Authz.AuthorizeAny(r, op, rt)
}

// ClusterResource is the name of the CLUSTER resource ACLs bind to.
const ClusterResource = "kafka-cluster"

// AllowedCluster is Allowed on the CLUSTER resource.
func (r *Request) AllowedCluster(op kmsg.ACLOperation) bool {
	return r.Allowed(op, kmsg.ACLResourceTypeCluster, ClusterResource)
}
