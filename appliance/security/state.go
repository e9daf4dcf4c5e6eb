package security

// The security state of the metadata image in force, as the broker's
// readers need it: the ACL set the Authorizer decides with, and the SCRAM
// credentials SASL logins and the SCRAM handlers read. It is rebuilt when
// the broker's metadata publisher hands on a delta that changes the
// bindings or the credentials (the broker's listener calls SetACLs and
// SetScram), never when it is read: whether the change was proposed here,
// replayed at start or replicated, the same publish rebuilds it.

import (
	"fmt"
	"sync/atomic"
)

// State holds the indexed security values of the metadata image in force.
// The zero State is empty (no bindings, no credentials). Readers load it
// without locking; SetACLs and SetScram are called one at a time, in
// metadata log order (the publisher is serialised).
type State struct {
	cur atomic.Pointer[View]
}

// View returns the current ACL set and credentials.
func (s *State) View() View {
	if v := s.cur.Load(); v != nil {
		return *v
	}
	return View{}
}

// ACLs returns the current ACL set (nil: no bindings); the Authorizer's
// source of bindings.
func (s *State) ACLs() *ACLSet {
	if v := s.cur.Load(); v != nil {
		return v.ACLs
	}
	return nil
}

// SetACLs replaces the ACL set with one built from recs, the bindings of
// the image in force. A binding the set refuses (a duplicate id, or one
// ValidateBinding rejects: the image validated it when it applied it, so
// this is a broken invariant) is left out, and the first such is the
// error; the others are installed.
func (s *State) SetACLs(recs []AccessControlEntryRecord) error {
	var first error
	var set *ACLSet
	if len(recs) > 0 {
		ab := NewACLBuilder(nil)
		for i := range recs {
			if err := ab.Add(&recs[i]); err != nil && first == nil {
				first = fmt.Errorf("cannot index ACL binding %s: %w", recs[i].ID, err)
			}
		}
		set = ab.Build()
	}
	v := s.View()
	v.ACLs = set
	s.cur.Store(&v)
	return first
}

// SetScram replaces the SCRAM credentials with c (not modified later).
func (s *State) SetScram(c Credentials) {
	v := s.View()
	v.Scram = c
	s.cur.Store(&v)
}
