// Package security owns authentication and authorization: the ACL
// bindings and their metadata records (AccessControlEntryRecord,
// RemoveAccessControlEntryRecord) with the immutable, indexed ACLSet an
// image holds; the built-in Authorizer (Kafka's StandardAuthorizer rules,
// installed by the broker as the wire.Authorizer of every request) with
// the request handlers' checks (Authorizer.ProduceDenied, TopicDenied,
// GroupRefusal, ConfigResourceAuthzErr..., nil-safe: a nil Authorizer is
// the authorizer turned off); State, the ACL set and SCRAM credentials of
// the metadata image in force, which the broker's metadata listener
// rebuilds from published deltas; the SCRAM credentials (KIP-554) with their records and the Credentials an
// image holds; SASL authentication (PLAIN, SCRAM-SHA-256/512) with its
// handlers SaslHandshake and SaslAuthenticate; and the admin handlers
// CreateAcls, DeleteAcls, DescribeAcls, AlterUserScramCredentials and
// DescribeUserScramCredentials; and TLS connections of SSL and SASL_SSL
// listeners (tls.go: ServerTLS, HandshakeTLS and the mTLS principal, with
// why they run on the goroutine path under both engines).
//
// It imports appliance/wire and appliance/config and nothing of appliance
// or of the other concept packages. What the handlers need of the broker is the Broker
// interface (the current image's View; Change, which proposes records
// under the controller's lock and commits them), implemented in appliance
// by securityBroker and passed to Register with the broker's Authorizer.
// The SASL handlers reach their connection's state through SASLConn,
// which the broker's connections implement (r.Conn).
//
// Goroutines: ACLSet, Credentials and the Authorizer are immutable and safe
// to share; Authorize does not allocate. State is read without locks and
// set by one goroutine at a time (the broker's publisher). A connection's Exchange (and its
// ScramServer) is used by that connection's dispatching goroutine only. The handlers
// run on the dispatching goroutine or loop; the ones that commit wait in
// their Deferred part, on a goroutine of their own.
package security
