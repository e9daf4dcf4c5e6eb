// Package security owns authentication and authorization: the ACL
// bindings and their metadata records (AccessControlEntryRecord,
// RemoveAccessControlEntryRecord) with the immutable, indexed ACLSet an
// image holds; the built-in Authorizer (Kafka's StandardAuthorizer rules,
// installed by the broker as the wire.Authorizer of every request); the
// SCRAM credentials (KIP-554) with their records and the Credentials an
// image holds; the SASL mechanisms' server side (PLAIN, SCRAM-SHA-256/512);
// and the admin handlers CreateAcls, DeleteAcls, DescribeAcls,
// AlterUserScramCredentials and DescribeUserScramCredentials.
//
// It imports appliance/wire and nothing of appliance or of the other
// concept packages. What the handlers need of the broker is the Broker
// interface (the current image's View; Change, which proposes records
// under the controller's lock and commits them), implemented in appliance
// by securityBroker and passed to Register with the broker's Authorizer.
// The connection-level SASL handlers (SaslHandshake, SaslAuthenticate)
// still live in appliance next to the connection state they change, and
// call VerifyPlain and ScramServer from here.
//
// Goroutines: ACLSet, Credentials and the Authorizer are immutable and safe
// to share; Authorize does not allocate. A ScramServer belongs to one
// connection and is used by its dispatching goroutine only. The handlers
// run on the dispatching goroutine or loop; the ones that commit wait in
// their Deferred part, on a goroutine of their own.
package security
