package security

// ACL bindings: the metadata records that store them, the immutable set
// the Image holds, and Kafka's filter matching (AclBindingFilter in the
// Admin API, KIP-140; prefixed patterns, KIP-290).
//
// A binding is a resource pattern (resource type, name, pattern type) and an
// access control entry (principal, host, operation, permission). Codes are
// Kafka's wire codes, as in kmsg: resource types TOPIC 2, GROUP 3, CLUSTER 4,
// TRANSACTIONAL_ID 5, DELEGATION_TOKEN 6, USER 7 (UNKNOWN 0 and ANY 1 only in
// filters); pattern types LITERAL 3, PREFIXED 4 (ANY 1 and MATCH 2 only in
// filters); operations ALL 2 .. DESCRIBE_TOKENS 14 (ANY 1 only in filters);
// permissions DENY 2, ALLOW 3 (ANY 1 only in filters).

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL wire codes used below (kmsg's enums, shortened).
const (
	aclResAny      = kmsg.ACLResourceTypeAny
	aclResTopic    = kmsg.ACLResourceTypeTopic
	aclResGroup    = kmsg.ACLResourceTypeGroup
	aclResCluster  = kmsg.ACLResourceTypeCluster
	aclResTxnID    = kmsg.ACLResourceTypeTransactionalId
	aclResMaxCode  = kmsg.ACLResourceTypeUser
	aclPatAny      = kmsg.ACLResourcePatternTypeAny
	aclPatMatch    = kmsg.ACLResourcePatternTypeMatch
	aclPatLiteral  = kmsg.ACLResourcePatternTypeLiteral
	aclPatPrefixed = kmsg.ACLResourcePatternTypePrefixed
	aclPermAny     = kmsg.ACLPermissionTypeAny
	aclPermDeny    = kmsg.ACLPermissionTypeDeny
	aclPermAllow   = kmsg.ACLPermissionTypeAllow
	aclOpAny       = kmsg.ACLOperationAny
	aclOpAll       = kmsg.ACLOperationAll
	aclOpMaxCode   = kmsg.ACLOperationDescribeTokens
)

// clusterResourceName is the only name of the CLUSTER resource.
const clusterResourceName = wire.ClusterResource

// aclWildcard is the literal resource name and the host that match any.
const aclWildcard = "*"

// wildcardPrincipal matches every principal (Kafka's User:*).
const wildcardPrincipal = "User:*"

// ACLID is an ACL binding's 16-byte UUID, as KRaft's
// AccessControlEntryRecord carries it. It does not change for the life of
// the binding.
type ACLID [16]byte

// String is Kafka's textual UUID form: URL-safe base64 without padding.
func (id ACLID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// NewACLID returns a random, non-zero ACLID.
func NewACLID() ACLID {
	for {
		var id ACLID
		if _, err := rand.Read(id[:]); err != nil {
			panic(fmt.Sprintf("cannot read random bytes: %v", err))
		}
		if id != (ACLID{}) {
			return id
		}
	}
}

// ACLBinding is one ACL: a resource pattern and an access control entry,
// with Kafka's codes. It is comparable and used as a set key.
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
// AccessControlEntryRecord). Adding a binding that exists is an error: the
// controller commits only new bindings.
type AccessControlEntryRecord struct {
	ID ACLID `json:"id"`
	ACLBinding
}

// RemoveAccessControlEntryRecord removes the ACL binding with ID (KRaft's
// RemoveAccessControlEntryRecord).
type RemoveAccessControlEntryRecord struct {
	ID ACLID `json:"id"`
}

// aclEntry is what an index keeps of a binding for authorization.
type aclEntry struct {
	principal string
	host      string
	op        int8
	perm      int8
}

// aclTypeIndex holds one resource type's bindings by pattern.
type aclTypeIndex struct {
	literal    map[string][]aclEntry // by exact name, "*" included
	prefixed   map[string][]aclEntry // by prefix
	prefixLens []int                 // distinct prefix lengths, ascending
}

// ACLSet is an immutable set of ACL bindings, keyed by id and indexed by
// resource type and pattern for authorization. The zero value and nil are
// empty.
type ACLSet struct {
	byID      map[ACLID]ACLBinding
	byBinding map[ACLBinding]ACLID
	index     [aclResMaxCode + 1]aclTypeIndex
}

// Len is the number of bindings.
func (s *ACLSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byID)
}

// Lookup returns the id of binding and whether the set holds it.
func (s *ACLSet) Lookup(b ACLBinding) (ACLID, bool) {
	if s == nil {
		return ACLID{}, false
	}
	id, ok := s.byBinding[b]
	return id, ok
}

// Bindings returns every binding with its id, sorted by resource (type,
// pattern type, name) and then entry, so answers are stable.
func (s *ACLSet) Bindings() ([]ACLID, []ACLBinding) {
	if s == nil {
		return nil, nil
	}
	ids := make([]ACLID, 0, len(s.byID))
	for id := range s.byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return aclLess(s.byID[ids[i]], s.byID[ids[j]]) })
	bs := make([]ACLBinding, len(ids))
	for i, id := range ids {
		bs[i] = s.byID[id]
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

// ACLBuilder applies ACL records to a copy of a set; Build indexes it.
type ACLBuilder struct {
	byID map[ACLID]ACLBinding
}

// NewACLBuilder starts from a copy of s (nil: empty).
func NewACLBuilder(s *ACLSet) *ACLBuilder {
	ab := &ACLBuilder{byID: make(map[ACLID]ACLBinding, s.Len()+1)}
	if s != nil {
		for id, b := range s.byID {
			ab.byID[id] = b
		}
	}
	return ab
}

// Add applies an AccessControlEntryRecord. Errors mean a corrupt or
// out-of-order log.
func (ab *ACLBuilder) Add(r *AccessControlEntryRecord) error {
	if _, ok := ab.byID[r.ID]; ok {
		return fmt.Errorf("cannot apply AccessControlEntryRecord: id %s exists", r.ID)
	}
	if err := ValidateBinding(r.ACLBinding); err != nil {
		return fmt.Errorf("cannot apply AccessControlEntryRecord %s: %w", r.ID, err)
	}
	ab.byID[r.ID] = r.ACLBinding
	return nil
}

// Remove applies a RemoveAccessControlEntryRecord. Errors mean a corrupt or
// out-of-order log.
func (ab *ACLBuilder) Remove(r *RemoveAccessControlEntryRecord) error {
	if _, ok := ab.byID[r.ID]; !ok {
		return fmt.Errorf("cannot apply RemoveAccessControlEntryRecord: unknown id %s", r.ID)
	}
	delete(ab.byID, r.ID)
	return nil
}

// Build returns the immutable, indexed set.
func (ab *ACLBuilder) Build() *ACLSet {
	s := &ACLSet{byID: ab.byID, byBinding: make(map[ACLBinding]ACLID, len(ab.byID))}
	for id, b := range ab.byID {
		s.byBinding[b] = id
		ix := &s.index[b.ResourceType]
		e := aclEntry{principal: b.Principal, host: b.Host, op: b.Operation, perm: b.Permission}
		if b.PatternType == int8(aclPatLiteral) {
			if ix.literal == nil {
				ix.literal = map[string][]aclEntry{}
			}
			ix.literal[b.ResourceName] = append(ix.literal[b.ResourceName], e)
			continue
		}
		if ix.prefixed == nil {
			ix.prefixed = map[string][]aclEntry{}
		}
		if _, ok := ix.prefixed[b.ResourceName]; !ok {
			ix.prefixLens = append(ix.prefixLens, len(b.ResourceName))
		}
		ix.prefixed[b.ResourceName] = append(ix.prefixed[b.ResourceName], e)
	}
	for i := range s.index {
		ix := &s.index[i]
		sort.Ints(ix.prefixLens)
		ix.prefixLens = dedupInts(ix.prefixLens)
	}
	return s
}

func dedupInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// ValidateBinding checks a binding to be created, with Kafka's rules
// (AclControlManager.validateNewAcl and the CreateAcls handler): a concrete
// resource type, LITERAL or PREFIXED, a concrete operation and permission, a
// "Type:name" principal, a non-empty name, and "kafka-cluster" as the only
// CLUSTER name. Errors wrap INVALID_REQUEST.
func ValidateBinding(b ACLBinding) error {
	switch {
	case b.ResourceType <= int8(aclResAny) || b.ResourceType > int8(aclResMaxCode):
		return fmt.Errorf("%w: invalid resource type %d", kerr.InvalidRequest, b.ResourceType)
	case b.PatternType != int8(aclPatLiteral) && b.PatternType != int8(aclPatPrefixed):
		return fmt.Errorf("%w: invalid pattern type %d", kerr.InvalidRequest, b.PatternType)
	case b.Operation <= int8(aclOpAny) || b.Operation > int8(aclOpMaxCode):
		return fmt.Errorf("%w: invalid operation %d", kerr.InvalidRequest, b.Operation)
	case b.Permission != int8(aclPermAllow) && b.Permission != int8(aclPermDeny):
		return fmt.Errorf("%w: invalid permission type %d", kerr.InvalidRequest, b.Permission)
	case b.ResourceName == "":
		return fmt.Errorf("%w: invalid empty resource name", kerr.InvalidRequest)
	case b.ResourceType == int8(aclResCluster) && b.ResourceName != clusterResourceName:
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", kerr.InvalidRequest, clusterResourceName)
	}
	if i := strings.IndexByte(b.Principal, ':'); i <= 0 || i == len(b.Principal)-1 {
		return fmt.Errorf("%w: principal %q is not of the form Type:name", kerr.InvalidRequest, b.Principal)
	}
	return nil
}

// ACLFilter selects bindings, as Kafka's AclBindingFilter: ANY (and a nil
// name, principal or host) matches everything; pattern type MATCH matches
// the literal name, the literal wildcard "*" and prefixed patterns that
// cover the name; any other pattern type matches that type and name exactly.
type ACLFilter struct {
	ResourceType int8
	ResourceName *string
	PatternType  int8
	Principal    *string
	Host         *string
	Operation    int8
	Permission   int8
}

// Validate rejects filters with UNKNOWN (0) or out-of-range codes, as
// Kafka's AclControlManager.validateFilter does. Errors wrap INVALID_REQUEST.
func (f ACLFilter) Validate() error {
	switch {
	case f.ResourceType <= 0 || f.ResourceType > int8(aclResMaxCode):
		return fmt.Errorf("%w: unknown resource type %d in the filter", kerr.InvalidRequest, f.ResourceType)
	case f.PatternType <= 0 || f.PatternType > int8(aclPatPrefixed):
		return fmt.Errorf("%w: unknown pattern type %d in the filter", kerr.InvalidRequest, f.PatternType)
	case f.Operation <= 0 || f.Operation > int8(aclOpMaxCode):
		return fmt.Errorf("%w: unknown operation %d in the filter", kerr.InvalidRequest, f.Operation)
	case f.Permission <= 0 || f.Permission > int8(aclPermAllow):
		return fmt.Errorf("%w: unknown permission type %d in the filter", kerr.InvalidRequest, f.Permission)
	}
	return nil
}

// Matches reports whether the filter selects b.
func (f ACLFilter) Matches(b ACLBinding) bool {
	if f.ResourceType != int8(aclResAny) && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != int8(aclPatAny) && f.PatternType != int8(aclPatMatch) && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		if f.PatternType == int8(aclPatMatch) {
			switch b.PatternType {
			case int8(aclPatLiteral):
				if b.ResourceName != name && b.ResourceName != aclWildcard {
					return false
				}
			case int8(aclPatPrefixed):
				if !strings.HasPrefix(name, b.ResourceName) {
					return false
				}
			default:
				return false
			}
		} else if b.ResourceName != name {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != int8(aclOpAny) && f.Operation != b.Operation {
		return false
	}
	return f.Permission == int8(aclPermAny) || f.Permission == b.Permission
}

// Filter returns the ids and bindings f selects, in Bindings order.
func (s *ACLSet) Filter(f ACLFilter) ([]ACLID, []ACLBinding) {
	ids, bs := s.Bindings()
	n := 0
	for i := range bs {
		if f.Matches(bs[i]) {
			ids[n], bs[n] = ids[i], bs[i]
			n++
		}
	}
	return ids[:n], bs[:n]
}
