package appliance

// The broker's side of appliance/security: the type names the image and
// its records use (metadata_image.go), the image's ACL and SCRAM replay,
// and securityBroker, the security handlers' view of the broker.

import (
	"github.com/ringbroker/ringbroker/appliance/security"
)

// The security record and value types, as the image and its records name
// them.
type (
	ACLID                           = security.ACLID
	ACLBinding                      = security.ACLBinding
	ACLFilter                       = security.ACLFilter
	ACLSet                          = security.ACLSet
	AccessControlEntryRecord        = security.AccessControlEntryRecord
	RemoveAccessControlEntryRecord  = security.RemoveAccessControlEntryRecord
	ScramCredential                 = security.ScramCredential
	UserScramCredentialRecord       = security.UserScramCredentialRecord
	RemoveUserScramCredentialRecord = security.RemoveUserScramCredentialRecord
)

// aclBuilder replays ACL records into a new ACLSet for Image.Apply.
type aclBuilder struct{ *security.ACLBuilder }

func newACLBuilder(s *ACLSet) *aclBuilder { return &aclBuilder{security.NewACLBuilder(s)} }

// apply applies r's AccessControlEntryRecord or
// RemoveAccessControlEntryRecord.
func (ab *aclBuilder) apply(r MetadataRecord) error {
	switch {
	case r.ACL != nil:
		return ab.Add(r.ACL)
	case r.RemoveACL != nil:
		return ab.Remove(r.RemoveACL)
	}
	return nil
}

func (ab *aclBuilder) build() *ACLSet { return ab.Build() }

// applyScram applies one of the two SCRAM records to im (a new image being
// built by Apply), copy on write.
func (im *Image) applyScram(up *UserScramCredentialRecord, rm *RemoveUserScramCredentialRecord) error {
	next, err := security.Credentials(im.scram).Apply(up, rm)
	if err != nil {
		return err
	}
	im.scram = next
	return nil
}

// scramCredential returns user's credential for mechanism and whether it
// exists (shared with the image: do not modify it).
func (im *Image) scramCredential(user string, mechanism int8) (ScramCredential, bool) {
	return security.Credentials(im.scram).Lookup(user, mechanism)
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

func (s securityBroker) View() security.View {
	im := s.b.currentImage()
	return security.View{ACLs: im.ACLs, Scram: im.scram}
}

func (s securityBroker) Change(propose func(cur security.View) []security.Record) error {
	b := s.b
	b.ctrlMu.Lock()
	defer b.ctrlMu.Unlock()
	im := b.currentImage()
	recs := propose(security.View{ACLs: im.ACLs, Scram: im.scram})
	if len(recs) == 0 {
		return nil
	}
	mrecs := make([]MetadataRecord, len(recs))
	for i, r := range recs {
		mrecs[i] = MetadataRecord{ACL: r.ACL, RemoveACL: r.RemoveACL, UserScramCredential: r.UserScramCredential,
			RemoveUserScramCredential: r.RemoveUserScramCredential}
	}
	next, err := b.meta.commit(im, mrecs)
	if err != nil {
		return commitErr(err)
	}
	b.image.Store(next)
	return nil
}
