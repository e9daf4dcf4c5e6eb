package appliance

// The broker's side of appliance/security: the type names the image and
// its records use, the concepts' checks the image applies records with,
// securityListener, which rebuilds the broker's security.State from
// published deltas, and securityBroker, the security handlers' view of
// the broker.

import (
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/security"
)

// The security record types, as the image and its records name them
// (appliance/metadata's plain values), and the security package's own
// types appliance uses.
type (
	ACLID                           = metadata.ACLID
	ACLBinding                      = metadata.ACLBinding
	AccessControlEntryRecord        = metadata.AccessControlEntryRecord
	RemoveAccessControlEntryRecord  = metadata.RemoveAccessControlEntryRecord
	UserScramCredentialRecord       = metadata.UserScramCredentialRecord
	RemoveUserScramCredentialRecord = metadata.RemoveUserScramCredentialRecord
	ACLFilter                       = security.ACLFilter
	ACLSet                          = security.ACLSet
	ScramCredential                 = security.ScramCredential
)

// imageChecks is metadata.Checks with the concept packages' rules: the
// image's Apply rejects what they would reject.
type imageChecks struct{}

func (imageChecks) ACL(b metadata.ACLBinding) error {
	return security.ValidateBinding(security.ACLBinding(b))
}

func (imageChecks) ClientQuotaEntity(parts []metadata.ClientQuotaEntityPart) error {
	_, err := quota.ParseEntity(toQuotaParts(parts))
	return err
}

func (imageChecks) ScramMechanism(m int8) string { return security.ScramMechanismName(m) }

// aclRecords converts the image's ACL bindings to security's records.
func aclRecords(a *metadata.ACLBindings) []security.AccessControlEntryRecord {
	ids, bs := a.All()
	out := make([]security.AccessControlEntryRecord, len(ids))
	for i, id := range ids {
		out[i] = security.AccessControlEntryRecord{ID: security.ACLID(id), ACLBinding: security.ACLBinding(bs[i])}
	}
	return out
}

// scramCredentials converts the image's SCRAM credentials to security's.
func scramCredentials(c metadata.ScramCredentials) security.Credentials {
	out := make(security.Credentials, len(c))
	for user, mechs := range c {
		m := make(map[int8]ScramCredential, len(mechs))
		for k, v := range mechs {
			m[k] = ScramCredential(v)
		}
		out[user] = m
	}
	return out
}

// securityListener rebuilds the broker's security.State (the authorizer's
// ACL set, the SCRAM credentials) from a published delta that changes
// the bindings or the credentials.
type securityListener struct{ s *security.State }

func (l securityListener) Publish(_, next *Image, d *metadata.Delta) error {
	if d.Scram {
		l.s.SetScram(scramCredentials(next.Scram))
	}
	if d.ACLs {
		return l.s.SetACLs(aclRecords(next.ACLs))
	}
	return nil
}

// newAuthorizer returns the authorizer cfg turns on (nil when off), reading
// the bindings through acls.
func newAuthorizer(cfg Config, acls func() *ACLSet) *security.Authorizer {
	return security.NewAuthorizer(cfg.AuthorizerClassName, cfg.SuperUsers, cfg.AllowEveryoneIfNoACLFound, acls)
}

// validateAuthorizerClass and parseSuperUsers are security's, for ConfigFromProperties and Config.Validate.
func validateAuthorizerClass(name string) error  { return security.ValidateAuthorizerClass(name) }
func parseSuperUsers(s string) ([]string, error) { return security.ParseSuperUsers(s) }

// securityBroker is the broker as the security handlers' security.Broker.
type securityBroker struct{ b *Broker }

func (s securityBroker) View() security.View { return s.b.ctl.sec.View() }

func (s securityBroker) Change(propose func(cur security.View) []security.Record) error {
	b := s.b
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
	recs := propose(b.ctl.sec.View()) // im's: publish sets it under b.ctl.mu
	if len(recs) == 0 {
		return nil
	}
	mrecs := make([]MetadataRecord, len(recs))
	for i, r := range recs {
		switch {
		case r.ACL != nil:
			mrecs[i].ACL = &AccessControlEntryRecord{ID: ACLID(r.ACL.ID), ACLBinding: ACLBinding(r.ACL.ACLBinding)}
		case r.RemoveACL != nil:
			mrecs[i].RemoveACL = &RemoveAccessControlEntryRecord{ID: ACLID(r.RemoveACL.ID)}
		case r.UserScramCredential != nil:
			c := UserScramCredentialRecord(*r.UserScramCredential)
			mrecs[i].UserScramCredential = &c
		case r.RemoveUserScramCredential != nil:
			c := RemoveUserScramCredentialRecord(*r.RemoveUserScramCredential)
			mrecs[i].RemoveUserScramCredential = &c
		}
	}
	if _, err := b.commitLocked(im, mrecs); err != nil {
		return commitErr(err)
	}
	return nil
}
