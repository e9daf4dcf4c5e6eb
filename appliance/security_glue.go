package appliance

// The broker's side of appliance/security: the type names the image and
// its records use, the concepts' checks the image applies records with,
// the authorizer's ACL set built from the image's bindings, and
// securityBroker, the security handlers' view of the broker.

import (
	"sync/atomic"

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

// buildACLSet indexes an image's ACL bindings for the authorizer (nil:
// none).
func buildACLSet(a *metadata.ACLBindings) *ACLSet {
	if a == nil {
		return nil
	}
	ab := security.NewACLBuilder(nil)
	ids, bs := a.All()
	for i, id := range ids {
		// The image validated every binding when it applied it.
		_ = ab.Add(&security.AccessControlEntryRecord{ID: security.ACLID(id), ACLBinding: security.ACLBinding(bs[i])})
	}
	return ab.Build()
}

// aclCache is the ACL set of the latest image's bindings, rebuilt only
// when the bindings change (images share them otherwise).
type aclCache struct{ last atomic.Pointer[aclCached] }

type aclCached struct {
	src *metadata.ACLBindings
	set *ACLSet
}

// of returns a's ACL set.
func (c *aclCache) of(a *metadata.ACLBindings) *ACLSet {
	if e := c.last.Load(); e != nil && e.src == a {
		return e.set
	}
	set := buildACLSet(a)
	c.last.Store(&aclCached{src: a, set: set})
	return set
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

// scramCredential returns user's credential for mechanism in im and
// whether it exists (shared with the image: do not modify it).
func scramCredential(im *Image, user string, mechanism int8) (ScramCredential, bool) {
	c, ok := im.Scram[user][mechanism]
	return ScramCredential(c), ok
}

// newAuthorizer returns the authorizer cfg turns on (nil when off), reading
// the bindings through acls.
func newAuthorizer(cfg Config, acls func() *ACLSet) *security.Authorizer {
	return security.NewAuthorizer(cfg.AuthorizerClassName, cfg.SuperUsers, cfg.AllowEveryoneIfNoACLFound, acls)
}

// validateAuthorizerClass and parseSuperUsers are security's, for config.go.
func validateAuthorizerClass(name string) error  { return security.ValidateAuthorizerClass(name) }
func parseSuperUsers(s string) ([]string, error) { return security.ParseSuperUsers(s) }

// securityBroker is the broker as the security handlers' security.Broker.
type securityBroker struct{ b *Broker }

func (s securityBroker) View() security.View { return s.b.securityView(s.b.currentImage()) }

// securityView is the security handlers' view of im.
func (b *Broker) securityView(im *Image) security.View {
	return security.View{ACLs: b.ctl.acls.of(im.ACLs), Scram: scramCredentials(im.Scram)}
}

func (s securityBroker) Change(propose func(cur security.View) []security.Record) error {
	b := s.b
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
	recs := propose(b.securityView(im))
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
	next, err := b.ctl.meta.Commit(im, mrecs)
	if err != nil {
		return commitErr(err)
	}
	b.ctl.image.Store(next)
	return nil
}
