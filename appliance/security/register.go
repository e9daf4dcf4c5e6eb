package security

import (
	"crypto/rand"
	"log/slog"

	"github.com/ringbroker/ringbroker/appliance/wire"
)

// View is what the security handlers read of the current metadata image.
type View struct {
	ACLs  *ACLSet     // the ACL bindings; nil when there are none
	Scram Credentials // the SCRAM credentials
}

// Record is one security metadata record to commit; exactly one field is
// set.
type Record struct {
	ACL                       *AccessControlEntryRecord
	RemoveACL                 *RemoveAccessControlEntryRecord
	UserScramCredential       *UserScramCredentialRecord
	RemoveUserScramCredential *RemoveUserScramCredentialRecord
}

// Broker is what the security handlers need of the broker that registers
// them.
type Broker interface {
	// View returns the security state of the current metadata image.
	View() View
	// Change runs propose with the current image's security state under
	// the controller's lock, so nothing changes it meanwhile, appends the
	// records propose returns to the metadata log as one batch and
	// publishes the image they make. No records: nothing is committed.
	// Its errors wrap a Kafka error (kerr.KafkaStorageError,
	// kerr.UnknownServerError) for the answer.
	Change(propose func(cur View) []Record) error
}

// handlers answers the security APIs.
type handlers struct {
	b     Broker
	authz *Authorizer // nil: the authorizer is off (SECURITY_DISABLED)
	log   *slog.Logger
	// scramFakeKey derives the salts of SCRAM exchanges for unknown
	// users; random per broker.
	scramFakeKey []byte
}

// Register adds the SASL APIs (SaslHandshake, SaslAuthenticate: their
// requests' connections must implement SASLConn), the ACL APIs
// (CreateAcls, DeleteAcls, DescribeAcls) and the SCRAM APIs
// (AlterUserScramCredentials, DescribeUserScramCredentials) to t, answered
// with b. authz is the broker's authorizer, nil when off; log receives a
// line per ACL change.
func Register(t *wire.Table, b Broker, authz *Authorizer, log *slog.Logger) {
	h := &handlers{b: b, authz: authz, log: log, scramFakeKey: make([]byte, 32)}
	_, _ = rand.Read(h.scramFakeKey) // crypto/rand.Read never fails
	t.Register(h.saslHandshakeAPI())
	t.Register(h.saslAuthenticateAPI())
	t.Register(h.createACLsAPI())
	t.Register(h.deleteACLsAPI())
	t.Register(h.describeACLsAPI())
	t.Register(h.alterUserScramCredentialsAPI())
	t.Register(h.describeUserScramCredentialsAPI())
}
