package security

// SCRAM credentials (KIP-554): kept in the metadata log even without a
// SASL listener, as Kafka keeps them. A credential is stored as RFC 5802
// derives it from the salted password the client sends:
//
//	ClientKey = HMAC(SaltedPassword, "Client Key")
//	StoredKey = H(ClientKey)
//	ServerKey = HMAC(SaltedPassword, "Server Key")
//
// with H and HMAC over SHA-256 (SCRAM-SHA-256, mechanism 1) or SHA-512
// (SCRAM-SHA-512, mechanism 2). The salted password itself is never stored.
// A SASL/SCRAM listener looks credentials up with Credentials.Lookup.

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// SCRAM mechanisms (Kafka's ScramMechanism type codes).
const (
	ScramSHA256 int8 = 1
	ScramSHA512 int8 = 2
)

// Iteration bounds of Kafka's ScramMechanism: both mechanisms take at least
// 4096 iterations; AlterUserScramCredentials accepts at most 16384.
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

// ScramMechanismName is Kafka's name of a mechanism, or "" if unknown.
func ScramMechanismName(m int8) string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

func scramHash(m int8) func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// ScramCredential is one user's credential for one mechanism: what a SCRAM
// server needs to verify a client proof (RFC 5802 section 3).
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// NewScramCredential derives the stored credential from the salted
// password (RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")),
// ServerKey = HMAC(SaltedPassword, "Server Key")).
func NewScramCredential(mechanism int8, salt, saltedPassword []byte, iterations int32) ScramCredential {
	h := scramHash(mechanism)
	mac := hmac.New(h, saltedPassword)
	mac.Write([]byte("Client Key"))
	clientKey := mac.Sum(nil)
	sh := h()
	sh.Write(clientKey)
	storedKey := sh.Sum(nil)
	mac = hmac.New(h, saltedPassword)
	mac.Write([]byte("Server Key"))
	serverKey := mac.Sum(nil)
	return ScramCredential{Salt: append([]byte(nil), salt...), StoredKey: storedKey, ServerKey: serverKey, Iterations: iterations}
}

// UserScramCredentialRecord stores a user's credential for one mechanism;
// KRaft's UserScramCredentialRecord.
type UserScramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
	Iterations int32  `json:"iterations"`
}

// RemoveUserScramCredentialRecord deletes a user's credential for one
// mechanism; KRaft's RemoveUserScramCredentialRecord.
type RemoveUserScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

// Credentials are the SCRAM credentials of one metadata image, by user and
// mechanism. A Credentials is immutable once built: Apply returns a new one.
type Credentials map[string]map[int8]ScramCredential

// Apply returns c with one of the two SCRAM records applied (up or rm, the
// other nil), copying the maps it changes; c is unchanged.
func (c Credentials) Apply(up *UserScramCredentialRecord, rm *RemoveUserScramCredentialRecord) (Credentials, error) {
	name, mech := "", int8(0)
	if up != nil {
		name, mech = up.Name, up.Mechanism
	} else {
		name, mech = rm.Name, rm.Mechanism
	}
	if ScramMechanismName(mech) == "" {
		return c, fmt.Errorf("cannot apply SCRAM credential record for user %q: unknown mechanism %d", name, mech)
	}
	next := make(Credentials, len(c)+1)
	for k, v := range c {
		next[k] = v
	}
	creds := make(map[int8]ScramCredential, 2)
	for k, v := range next[name] {
		creds[k] = v
	}
	if up != nil {
		creds[mech] = ScramCredential{Salt: up.Salt, StoredKey: up.StoredKey, ServerKey: up.ServerKey, Iterations: up.Iterations}
	} else {
		if _, ok := creds[mech]; !ok {
			return c, fmt.Errorf("cannot apply RemoveUserScramCredentialRecord: user %q has no %s credential", name, ScramMechanismName(mech))
		}
		delete(creds, mech)
	}
	if len(creds) == 0 {
		delete(next, name)
	} else {
		next[name] = creds
	}
	return next, nil
}

// Lookup returns user's credential for mechanism (1 SCRAM-SHA-256,
// 2 SCRAM-SHA-512) and whether it exists. The result is shared with the
// image: do not modify it.
func (c Credentials) Lookup(user string, mechanism int8) (ScramCredential, bool) {
	cred, ok := c[user][mechanism]
	return cred, ok
}

// Users returns the users with any SCRAM credential, sorted.
func (c Credentials) Users() []string {
	out := make([]string, 0, len(c))
	for u := range c {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// ScramUpsertion is one credential to create or replace; SaltedPassword is
// the client's Hi(password, salt, iterations).
type ScramUpsertion struct {
	User           string
	Mechanism      int8
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// ScramDeletion is one credential to delete.
type ScramDeletion struct {
	User      string
	Mechanism int8
}

// scramOp is one alteration in request order.
type scramOp struct {
	user string
	mech int8
	up   *ScramUpsertion // nil for a deletion
}

// alterScramCredentials applies deletions and upsertions through the
// controller (Broker.Change) and returns one error (nil on success) per distinct user, in
// the order users first appear (deletions first, then upsertions), as
// Kafka's AlterUserScramCredentials answers. A user whose alterations do
// not all validate is left unchanged. Errors wrap kerr codes:
// UNACCEPTABLE_CREDENTIAL (93) for an empty user name or iterations outside
// [4096, 16384], UNSUPPORTED_SASL_MECHANISM (33) for an unknown mechanism,
// DUPLICATE_RESOURCE (92) for a user and mechanism altered twice in one
// request, RESOURCE_NOT_FOUND (91) for deleting a credential that does not
// exist.
func (h *handlers) alterScramCredentials(dels []ScramDeletion, ups []ScramUpsertion) ([]string, []error) {
	var ops []scramOp
	for _, d := range dels {
		ops = append(ops, scramOp{user: d.User, mech: d.Mechanism})
	}
	for i := range ups {
		ops = append(ops, scramOp{user: ups[i].User, mech: ups[i].Mechanism, up: &ups[i]})
	}
	var users []string
	userErr := map[string]error{}
	seen := map[string]bool{}
	pairs := map[scramOp]int{}
	for _, op := range ops {
		if !seen[op.user] {
			seen[op.user] = true
			users = append(users, op.user)
		}
		pairs[scramOp{user: op.user, mech: op.mech}]++
	}
	setErr := func(user string, err error) {
		if userErr[user] == nil {
			userErr[user] = err
		}
	}

	err := h.b.Change(func(cur View) []Record {
		return scramRecords(cur.Scram, ops, pairs, setErr, userErr)
	})
	if err != nil {
		for _, u := range users {
			setErr(u, err)
		}
	}
	errs := make([]error, len(users))
	for i, u := range users {
		errs[i] = userErr[u]
	}
	return users, errs
}

// scramRecords validates ops against the current credentials (errors go
// to setErr, per user) and returns the records of the users whose
// alterations all validate.
func scramRecords(creds Credentials, ops []scramOp, pairs map[scramOp]int, setErr func(string, error), userErr map[string]error) []Record {
	for _, op := range ops {
		switch {
		case op.user == "":
			setErr(op.user, fmt.Errorf("%w: username must not be empty", kerr.UnacceptableCredential))
		case ScramMechanismName(op.mech) == "":
			setErr(op.user, fmt.Errorf("%w: unknown SCRAM mechanism %d", kerr.UnsupportedSaslMechanism, op.mech))
		case pairs[scramOp{user: op.user, mech: op.mech}] > 1:
			setErr(op.user, fmt.Errorf("%w: a user credential cannot be altered twice in the same request", kerr.DuplicateResource))
		case op.up == nil:
			if _, ok := creds.Lookup(op.user, op.mech); !ok {
				setErr(op.user, fmt.Errorf("%w: attempt to delete a user credential that does not exist", kerr.ResourceNotFound))
			}
		case op.up.Iterations < scramMinIterations:
			setErr(op.user, fmt.Errorf("%w: too few iterations: %d is below the minimum %d of %s", kerr.UnacceptableCredential, op.up.Iterations, scramMinIterations, ScramMechanismName(op.mech)))
		case op.up.Iterations > scramMaxIterations:
			setErr(op.user, fmt.Errorf("%w: too many iterations: %d is above the maximum %d", kerr.UnacceptableCredential, op.up.Iterations, scramMaxIterations))
		case len(op.up.Salt) == 0:
			setErr(op.user, fmt.Errorf("%w: the salt must not be empty", kerr.UnacceptableCredential))
		case len(op.up.SaltedPassword) == 0:
			setErr(op.user, fmt.Errorf("%w: the salted password must not be empty", kerr.UnacceptableCredential))
		}
	}
	var recs []Record
	for _, op := range ops {
		if userErr[op.user] != nil {
			continue
		}
		if op.up == nil {
			recs = append(recs, Record{RemoveUserScramCredential: &RemoveUserScramCredentialRecord{Name: op.user, Mechanism: op.mech}})
			continue
		}
		c := NewScramCredential(op.mech, op.up.Salt, op.up.SaltedPassword, op.up.Iterations)
		recs = append(recs, Record{UserScramCredential: &UserScramCredentialRecord{Name: op.user, Mechanism: op.mech,
			Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}})
	}
	return recs
}
