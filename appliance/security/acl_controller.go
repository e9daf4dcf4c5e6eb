package security

// The controller's ACL changes: CreateAcls and DeleteAcls commit
// AccessControlEntryRecord and RemoveAccessControlEntryRecord batches to the
// metadata log through Broker.Change (under the controller's lock, like
// topic changes), which publishes the new image; the authorizer reads the
// bindings from the image.

// createACLs adds bindings in one metadata batch and returns one error per
// binding (nil when created or already present, as Kafka treats a binding
// that exists). Invalid bindings wrap INVALID_REQUEST; a failed commit
// fails every valid binding with the commit's error.
func (h *handlers) createACLs(bindings []ACLBinding) []error {
	errs := make([]error, len(bindings))
	var idx []int
	var after int
	err := h.b.Change(func(cur View) []Record {
		var recs []Record
		seen := map[ACLBinding]bool{}
		for i, bd := range bindings {
			if err := ValidateBinding(bd); err != nil {
				errs[i] = err
				continue
			}
			if _, ok := cur.ACLs.Lookup(bd); ok || seen[bd] {
				continue
			}
			seen[bd] = true
			recs = append(recs, Record{ACL: &AccessControlEntryRecord{ID: NewACLID(), ACLBinding: bd}})
			idx = append(idx, i)
		}
		after = cur.ACLs.Len() + len(recs)
		return recs
	})
	if err != nil {
		for _, i := range idx {
			errs[i] = err
		}
		return errs
	}
	if len(idx) > 0 {
		h.log.Info("created ACLs", "count", len(idx), "acls", after)
	}
	return errs
}

// deleteACLs removes, in one metadata batch, every binding some filter
// matches. It returns per filter the bindings it removed (a binding two
// filters match is listed under the first) and its error: invalid filters
// wrap INVALID_REQUEST; a failed commit fails every filter that matched.
func (h *handlers) deleteACLs(filters []ACLFilter) ([][]ACLBinding, []error) {
	matched := make([][]ACLBinding, len(filters))
	errs := make([]error, len(filters))
	var count, after int
	err := h.b.Change(func(cur View) []Record {
		var recs []Record
		removed := map[ACLID]bool{}
		for i, f := range filters {
			if err := f.Validate(); err != nil {
				errs[i] = err
				continue
			}
			ids, bs := cur.ACLs.Filter(f)
			for j, id := range ids {
				if removed[id] {
					continue
				}
				removed[id] = true
				matched[i] = append(matched[i], bs[j])
				recs = append(recs, Record{RemoveACL: &RemoveAccessControlEntryRecord{ID: id}})
			}
		}
		count, after = len(recs), cur.ACLs.Len()-len(recs)
		return recs
	})
	if err != nil {
		for i := range filters {
			if len(matched[i]) > 0 {
				errs[i] = err
				matched[i] = nil
			}
		}
		return matched, errs
	}
	if count > 0 {
		h.log.Info("deleted ACLs", "count", count, "acls", after)
	}
	return matched, errs
}
