package security

// The built-in authorizer: Kafka's StandardAuthorizer rules over the ACL
// bindings in the metadata image (KIP-801; KIP-290 for prefixed patterns).
//
// authorizer.class.name empty turns it off: every operation is allowed and
// the ACL APIs answer SECURITY_DISABLED (54). Naming Kafka's
// org.apache.kafka.metadata.authorizer.StandardAuthorizer or
// kafka.security.authorizer.AclAuthorizer turns it on; any other class is a
// config error. When on, a request is allowed for a principal and host when:
//  1. the principal is one of super.users; else
//  2. no DENY binding matches (resource pattern covers the name, principal is
//     the principal or User:*, host is the host or *, operation is the
//     operation or ALL); and an ALLOW binding matches, where ALLOW READ,
//     WRITE, DELETE or ALTER also allow DESCRIBE and ALLOW ALTER_CONFIGS
//     allows DESCRIBE_CONFIGS; else
//  3. no binding at all names the resource (any principal, host or
//     operation) and allow.everyone.if.no.acl.found is true.
//
// A connection's principal is User:<name> once it authenticated on a
// SASL_PLAINTEXT listener (SaslAuthenticate), User:ANONYMOUS otherwise; the
// broker's connection (wire.Conn.Principal) is the one place that says so.

import (
	"fmt"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer class names that turn the built-in authorizer on.
const (
	standardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	aclAuthorizerClass      = "kafka.security.authorizer.AclAuthorizer"
)

// AnonymousPrincipal is the principal of an unauthenticated connection.
const AnonymousPrincipal = "User:ANONYMOUS"

// ValidateAuthorizerClass accepts "" (off) and Kafka's standard authorizers.
func ValidateAuthorizerClass(name string) error {
	switch name {
	case "", standardAuthorizerClass, aclAuthorizerClass:
		return nil
	}
	return fmt.Errorf("authorizer.class.name=%q is not supported: use %s or %s (the built-in ACL authorizer), or leave it empty",
		name, standardAuthorizerClass, aclAuthorizerClass)
}

// ParseSuperUsers splits super.users ("User:a;User:b") into principals.
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if i := strings.IndexByte(p, ':'); i <= 0 || i == len(p)-1 {
			return nil, fmt.Errorf("super.users entry %q is not a principal of the form Type:name", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Authorizer is the built-in authorizer: its settings, and where the
// current bindings come from (the broker's metadata image). It is
// immutable and safe for concurrent use; as a wire.Authorizer it answers
// requests' Allowed questions.
type Authorizer struct {
	superUsers    map[string]bool
	allowEveryone bool
	acls          func() *ACLSet
}

// NewAuthorizer returns the authorizer that className (authorizer.class.name,
// checked by ValidateAuthorizerClass) turns on, or nil when it is empty:
// superUsers are allowed everything, allowEveryone is
// allow.everyone.if.no.acl.found, and acls returns the current bindings.
func NewAuthorizer(className string, superUsers []string, allowEveryone bool, acls func() *ACLSet) *Authorizer {
	if className == "" {
		return nil
	}
	a := &Authorizer{superUsers: map[string]bool{}, allowEveryone: allowEveryone, acls: acls}
	for _, p := range superUsers {
		a.superUsers[p] = true
	}
	return a
}

// requestPrincipal is r's principal and peer host (User:ANONYMOUS and ""
// for requests without a connection).
func requestPrincipal(r *wire.Request) (principal, host string) {
	if r == nil || r.Conn == nil {
		return AnonymousPrincipal, ""
	}
	return r.Conn.Principal(), r.Conn.PeerHost()
}

// Authorize is the wire.Authorizer question: whether r's principal may
// perform op on the named resource, under the current bindings. It does
// not allocate.
func (a *Authorizer) Authorize(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	principal, host := requestPrincipal(r)
	return a.authorize(a.acls(), principal, host, op, rt, name)
}

// AuthorizeAny is the wire.Authorizer question whether r's principal may
// perform op on some resource of type rt (authorizeAnyOfType).
func (a *Authorizer) AuthorizeAny(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	principal, host := requestPrincipal(r)
	return a.authorizeAnyOfType(a.acls(), principal, host, op, rt)
}

// aclImplies reports whether a binding for operation have grants or denies
// op: ALL covers every operation; an ALLOW of READ, WRITE, DELETE or ALTER
// also allows DESCRIBE, and ALLOW ALTER_CONFIGS allows DESCRIBE_CONFIGS.
func aclImplies(have, perm int8, op kmsg.ACLOperation) bool {
	if have == int8(op) || have == int8(aclOpAll) {
		return true
	}
	if perm != int8(aclPermAllow) {
		return false
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch kmsg.ACLOperation(have) {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return have == int8(kmsg.ACLOperationAlterConfigs)
	}
	return false
}

// scan folds entries into the decision so far: deny when one matching entry
// denies, allow when one allows.
func scanACLEntries(es []aclEntry, principal, host string, op kmsg.ACLOperation, deny, allow *bool) {
	for i := range es {
		e := &es[i]
		if e.principal != principal && e.principal != wildcardPrincipal {
			continue
		}
		if e.host != host && e.host != aclWildcard {
			continue
		}
		if !aclImplies(e.op, e.perm, op) {
			continue
		}
		if e.perm == int8(aclPermDeny) {
			*deny = true
		} else {
			*allow = true
		}
	}
}

// authorize decides whether principal ("Type:name") from host (an IP
// address) may perform op on the resource of type rt named name, under the
// bindings in acls. It does not allocate.
func (a *Authorizer) authorize(acls *ACLSet, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	if acls == nil || rt <= aclResAny || rt > aclResMaxCode {
		return a.allowEveryone
	}
	ix := &acls.index[rt]
	var deny, allow, found bool
	if es, ok := ix.literal[name]; ok {
		found = true
		scanACLEntries(es, principal, host, op, &deny, &allow)
	}
	if name != aclWildcard {
		if es, ok := ix.literal[aclWildcard]; ok {
			found = true
			scanACLEntries(es, principal, host, op, &deny, &allow)
		}
	}
	for _, n := range ix.prefixLens {
		if n > len(name) {
			break
		}
		if es, ok := ix.prefixed[name[:n]]; ok {
			found = true
			scanACLEntries(es, principal, host, op, &deny, &allow)
		}
	}
	switch {
	case deny:
		return false
	case allow:
		return true
	case found:
		return false
	}
	return a.allowEveryone
}

// authorizeAnyOfType is Kafka's authorizeByResourceType (KIP-679), used
// where a request needs op on some resource of type rt (an idempotent
// producer's InitProducerId needs WRITE on any topic): super users are
// allowed; a matching DENY on the literal wildcard denies; a matching ALLOW
// on a pattern that no matching DENY covers allows; with no binding on the
// wildcard, allow.everyone.if.no.acl.found decides, as for a resource with
// no ACLs.
func (a *Authorizer) authorizeAnyOfType(acls *ACLSet, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a.superUsers[principal] {
		return true
	}
	if acls == nil || rt <= aclResAny || rt > aclResMaxCode {
		return a.allowEveryone
	}
	ix := &acls.index[rt]
	var deny, allow bool
	scanACLEntries(ix.literal[aclWildcard], principal, host, op, &deny, &allow)
	if deny {
		return false
	}
	if allow {
		return true
	}
	// An allowed pattern not denied by a broader or equal pattern.
	denied := func(name string, prefixed bool) bool {
		var d, al bool
		if !prefixed {
			scanACLEntries(ix.literal[name], principal, host, op, &d, &al)
		}
		for _, n := range ix.prefixLens {
			if n > len(name) {
				break
			}
			scanACLEntries(ix.prefixed[name[:n]], principal, host, op, &d, &al)
		}
		return d
	}
	for name, es := range ix.literal {
		var d, al bool
		scanACLEntries(es, principal, host, op, &d, &al)
		if al && !denied(name, false) {
			return true
		}
	}
	for name, es := range ix.prefixed {
		var d, al bool
		scanACLEntries(es, principal, host, op, &d, &al)
		if al && !denied(name, true) {
			return true
		}
	}
	_, wildcardNamed := ix.literal[aclWildcard]
	return a.allowEveryone && !wildcardNamed
}

// Allowed is authorize for a principal and host given directly, under the
// bindings acls (not the current ones): what a test or a tool asks.
func (a *Authorizer) Allowed(acls *ACLSet, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a.authorize(acls, principal, host, op, rt, name)
}
