package appliance

import (
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL wire codes the tests use (kmsg's enums, shortened).
const (
	aclResTopic   = kmsg.ACLResourceTypeTopic
	aclResGroup   = kmsg.ACLResourceTypeGroup
	aclResCluster = kmsg.ACLResourceTypeCluster
	aclResTxnID   = kmsg.ACLResourceTypeTransactionalId
)

// buildACLSet indexes an image's ACL bindings as securityListener does
// (nil: none).
func buildACLSet(a *metadata.ACLBindings) *ACLSet {
	var s security.State
	_ = s.SetACLs(aclRecords(a))
	return s.ACLs()
}

// quotaTable is the quota table quotaListener builds from an image.
type quotaTable struct {
	vals  quota.Values
	kinds uint8
}

// buildQuotaTable converts an image's client quotas as quotaListener does.
func buildQuotaTable(q *metadata.ClientQuotas) quotaTable {
	v := quotaValues(q)
	return quotaTable{vals: v, kinds: v.Kinds()}
}

// scramCredential returns user's credential for mechanism in im and
// whether it exists.
func scramCredential(im *Image, user string, mechanism int8) (ScramCredential, bool) {
	c, ok := im.Scram[user][mechanism]
	return ScramCredential(c), ok
}
