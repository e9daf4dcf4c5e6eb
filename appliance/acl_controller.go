package appliance

// The controller's ACL changes: CreateAcls and DeleteAcls commit
// AccessControlEntryRecord and RemoveAccessControlEntryRecord batches to the
// metadata log under ctrlMu, like topic changes, and publish the new image;
// the authorizer reads the bindings from the image.

import ()

// createACLs adds bindings in one metadata batch and returns one error per
// binding (nil when created or already present, as Kafka treats a binding
// that exists). Invalid bindings wrap INVALID_REQUEST; a failed commit
// fails every valid binding with UNKNOWN_SERVER_ERROR.
func (b *Broker) createACLs(bindings []ACLBinding) []error {
	errs := make([]error, len(bindings))
	b.ctrlMu.Lock()
	defer b.ctrlMu.Unlock()
	im := b.currentImage()
	var recs []MetadataRecord
	var idx []int
	seen := map[ACLBinding]bool{}
	for i, bd := range bindings {
		if err := validateACLBinding(bd); err != nil {
			errs[i] = err
			continue
		}
		if _, ok := im.ACLs.Lookup(bd); ok || seen[bd] {
			continue
		}
		seen[bd] = true
		recs = append(recs, MetadataRecord{ACL: &AccessControlEntryRecord{ID: newACLID(), ACLBinding: bd}})
		idx = append(idx, i)
	}
	if len(recs) == 0 {
		return errs
	}
	next, err := b.meta.commit(im, recs)
	if err != nil {
		for _, i := range idx {
			errs[i] = commitErr(err)
		}
		return errs
	}
	b.image.Store(next)
	b.log.Info("created ACLs", "count", len(recs), "acls", next.ACLs.Len())
	return errs
}

// deleteACLs removes, in one metadata batch, every binding some filter
// matches. It returns per filter the bindings it removed (a binding two
// filters match is listed under the first) and its error: invalid filters
// wrap INVALID_REQUEST; a failed commit fails every filter that matched.
func (b *Broker) deleteACLs(filters []ACLFilter) ([][]ACLBinding, []error) {
	matched := make([][]ACLBinding, len(filters))
	errs := make([]error, len(filters))
	b.ctrlMu.Lock()
	defer b.ctrlMu.Unlock()
	im := b.currentImage()
	var recs []MetadataRecord
	removed := map[ACLID]bool{}
	for i, f := range filters {
		if err := f.validate(); err != nil {
			errs[i] = err
			continue
		}
		ids, bs := im.ACLs.Filter(f)
		for j, id := range ids {
			if removed[id] {
				continue
			}
			removed[id] = true
			matched[i] = append(matched[i], bs[j])
			recs = append(recs, MetadataRecord{RemoveACL: &RemoveAccessControlEntryRecord{ID: id}})
		}
	}
	if len(recs) == 0 {
		return matched, errs
	}
	next, err := b.meta.commit(im, recs)
	if err != nil {
		for i := range filters {
			if len(matched[i]) > 0 {
				errs[i] = commitErr(err)
				matched[i] = nil
			}
		}
		return matched, errs
	}
	b.image.Store(next)
	b.log.Info("deleted ACLs", "count", len(recs), "acls", next.ACLs.Len())
	return matched, errs
}
