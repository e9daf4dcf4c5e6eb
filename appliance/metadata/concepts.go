package metadata

// The values other concepts keep in the image: ACL bindings (security),
// client quotas (quota) and SCRAM credentials (security). The image holds
// them as plain values in these types; the concept that needs an index
// (the authorizer's ACL set, the quota table) builds it from the image in
// appliance's glue. What only the concept knows (whether a binding or an
// entity is valid) the image asks through Checks.

import (
	"encoding/base64"
	"fmt"
	"sort"
)

// Checks validates the values of other concepts' records as Apply meets
// them; a nil Checks accepts every value. appliance passes the concept
// packages' own rules (security.ValidateBinding, quota.ParseEntity,
// security.ScramMechanismName).
type Checks interface {
	// ACL checks a binding to be added.
	ACL(b ACLBinding) error
	// ClientQuotaEntity checks a quota entity.
	ClientQuotaEntity(parts []ClientQuotaEntityPart) error
	// ScramMechanism returns the name of a SCRAM mechanism, "" when unknown.
	ScramMechanism(m int8) string
}

// ACLID is an ACL binding's 16-byte UUID (KRaft's AccessControlEntryRecord
// id).
type ACLID [16]byte

// String is the URL-safe base64 form without padding.
func (id ACLID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ACLBinding is one ACL binding's values, with Kafka's codes: a resource
// pattern (type, name, pattern type) and an entry (principal, host,
// operation, permission). The same fields as security.ACLBinding.
type ACLBinding struct {
	ResourceType int8   `json:"resourceType"`
	ResourceName string `json:"resourceName"`
	PatternType  int8   `json:"patternType"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permissionType"`
}

// AccessControlEntryRecord adds one ACL binding (KRaft's
// AccessControlEntryRecord). Adding an id that exists is an error.
type AccessControlEntryRecord struct {
	ID ACLID `json:"id"`
	ACLBinding
}

// RemoveAccessControlEntryRecord removes the ACL binding with ID (KRaft's
// RemoveAccessControlEntryRecord).
type RemoveAccessControlEntryRecord struct {
	ID ACLID `json:"id"`
}

// ACLBindings are the ACL bindings of an image by id. Immutable; nil is
// empty. A new image shares its previous image's ACLBindings unless an ACL
// record changed them, so a pointer comparison tells whether they changed.
type ACLBindings struct {
	byID map[ACLID]ACLBinding
}

// Len is the number of bindings.
func (a *ACLBindings) Len() int {
	if a == nil {
		return 0
	}
	return len(a.byID)
}

// Get returns the binding with id.
func (a *ACLBindings) Get(id ACLID) (ACLBinding, bool) {
	if a == nil {
		return ACLBinding{}, false
	}
	b, ok := a.byID[id]
	return b, ok
}

// All returns every binding with its id, sorted by resource (type, pattern
// type, name) and then entry.
func (a *ACLBindings) All() ([]ACLID, []ACLBinding) {
	if a == nil {
		return nil, nil
	}
	ids := make([]ACLID, 0, len(a.byID))
	for id := range a.byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return aclLess(a.byID[ids[i]], a.byID[ids[j]]) })
	bs := make([]ACLBinding, len(ids))
	for i, id := range ids {
		bs[i] = a.byID[id]
	}
	return ids, bs
}

func aclLess(a, b ACLBinding) bool {
	switch {
	case a.ResourceType != b.ResourceType:
		return a.ResourceType < b.ResourceType
	case a.PatternType != b.PatternType:
		return a.PatternType < b.PatternType
	case a.ResourceName != b.ResourceName:
		return a.ResourceName < b.ResourceName
	case a.Principal != b.Principal:
		return a.Principal < b.Principal
	case a.Host != b.Host:
		return a.Host < b.Host
	case a.Operation != b.Operation:
		return a.Operation < b.Operation
	}
	return a.Permission < b.Permission
}

// aclApplier applies ACL records of one Apply to a copy of the bindings.
type aclApplier struct {
	byID map[ACLID]ACLBinding
}

func newACLApplier(a *ACLBindings) *aclApplier {
	ab := &aclApplier{byID: make(map[ACLID]ACLBinding, a.Len()+1)}
	if a != nil {
		for id, b := range a.byID {
			ab.byID[id] = b
		}
	}
	return ab
}

func (ab *aclApplier) add(r *AccessControlEntryRecord, c Checks) error {
	if _, ok := ab.byID[r.ID]; ok {
		return fmt.Errorf("cannot apply AccessControlEntryRecord: id %s exists", r.ID)
	}
	if c != nil {
		if err := c.ACL(r.ACLBinding); err != nil {
			return fmt.Errorf("cannot apply AccessControlEntryRecord %s: %w", r.ID, err)
		}
	}
	ab.byID[r.ID] = r.ACLBinding
	return nil
}

func (ab *aclApplier) remove(r *RemoveAccessControlEntryRecord) error {
	if _, ok := ab.byID[r.ID]; !ok {
		return fmt.Errorf("cannot apply RemoveAccessControlEntryRecord: unknown id %s", r.ID)
	}
	delete(ab.byID, r.ID)
	return nil
}

func (ab *aclApplier) build() *ACLBindings {
	if len(ab.byID) == 0 {
		return nil
	}
	return &ACLBindings{byID: ab.byID}
}

// ClientQuotaRecord sets (Remove false) or removes one quota key of an
// entity (KRaft's ClientQuotaRecord). Entity parts have a type (user,
// client-id, ip) and a name, nil for the default entity of that type.
type ClientQuotaRecord struct {
	Entity []ClientQuotaEntityPart `json:"entity"`
	Key    string                  `json:"key"`
	Value  float64                 `json:"value"`
	Remove bool                    `json:"remove,omitempty"`
}

// ClientQuotaEntityPart is one component of a quota entity.
type ClientQuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// ClientQuotaEntity is one entity's quota values.
type ClientQuotaEntity struct {
	// Parts name the entity, sorted by type.
	Parts []ClientQuotaEntityPart
	// Values are the quota values by key.
	Values map[string]float64
}

// ClientQuotas are the client quota values of an image by entity key (the
// entity's parts, sorted by type). Immutable; nil is empty. A new image
// shares its previous image's ClientQuotas unless a ClientQuotaRecord
// changed them.
type ClientQuotas struct {
	byKey map[string]ClientQuotaEntity
}

// Len is the number of entities with values.
func (q *ClientQuotas) Len() int {
	if q == nil {
		return 0
	}
	return len(q.byKey)
}

// All returns every entity with values, sorted by entity key.
func (q *ClientQuotas) All() []ClientQuotaEntity {
	if q == nil {
		return nil
	}
	keys := make([]string, 0, len(q.byKey))
	for k := range q.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ClientQuotaEntity, len(keys))
	for i, k := range keys {
		out[i] = q.byKey[k]
	}
	return out
}

// entityKey returns parts sorted by type and their key.
func entityKey(parts []ClientQuotaEntityPart) ([]ClientQuotaEntityPart, string) {
	sorted := append([]ClientQuotaEntityPart(nil), parts...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Type < sorted[j].Type })
	key := ""
	for _, p := range sorted {
		key += fmt.Sprintf("%q=", p.Type)
		if p.Name == nil {
			key += "<default>;"
		} else {
			key += fmt.Sprintf("%q;", *p.Name)
		}
	}
	return sorted, key
}

// applyClientQuota returns q with r applied, copy on write.
func applyClientQuota(q *ClientQuotas, r *ClientQuotaRecord, c Checks) (*ClientQuotas, error) {
	if c != nil {
		if err := c.ClientQuotaEntity(r.Entity); err != nil {
			return q, fmt.Errorf("cannot apply ClientQuotaRecord: %v", err)
		}
	}
	parts, key := entityKey(r.Entity)
	next := &ClientQuotas{byKey: make(map[string]ClientQuotaEntity, q.Len()+1)}
	if q != nil {
		for k, e := range q.byKey {
			next.byKey[k] = e
		}
	}
	vals := make(map[string]float64, len(next.byKey[key].Values)+1)
	for k, v := range next.byKey[key].Values {
		vals[k] = v
	}
	if r.Remove {
		delete(vals, r.Key)
	} else {
		vals[r.Key] = r.Value
	}
	if len(vals) == 0 {
		delete(next.byKey, key)
	} else {
		next.byKey[key] = ClientQuotaEntity{Parts: parts, Values: vals}
	}
	if len(next.byKey) == 0 {
		return nil, nil
	}
	return next, nil
}

// ScramCredential is one stored SCRAM credential (RFC 5802); the same
// fields as security.ScramCredential.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// UserScramCredentialRecord stores a user's credential for one mechanism
// (KRaft's UserScramCredentialRecord).
type UserScramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
	Iterations int32  `json:"iterations"`
}

// RemoveUserScramCredentialRecord deletes a user's credential for one
// mechanism (KRaft's RemoveUserScramCredentialRecord).
type RemoveUserScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

// ScramCredentials are the SCRAM credentials of an image by user and
// mechanism. Immutable: Apply copies the maps it changes.
type ScramCredentials map[string]map[int8]ScramCredential

// applyScram returns c with one of the two SCRAM records applied (up or
// rm, the other nil), copy on write.
func applyScram(c ScramCredentials, up *UserScramCredentialRecord, rm *RemoveUserScramCredentialRecord, chk Checks) (ScramCredentials, error) {
	name, mech := "", int8(0)
	if up != nil {
		name, mech = up.Name, up.Mechanism
	} else {
		name, mech = rm.Name, rm.Mechanism
	}
	mechName := fmt.Sprint(mech)
	if chk != nil {
		if mechName = chk.ScramMechanism(mech); mechName == "" {
			return c, fmt.Errorf("cannot apply SCRAM credential record for user %q: unknown mechanism %d", name, mech)
		}
	}
	next := make(ScramCredentials, len(c)+1)
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
			return c, fmt.Errorf("cannot apply RemoveUserScramCredentialRecord: user %q has no %s credential", name, mechName)
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
