package security

// DescribeAcls (key 29), v0-v3 (KIP-140; v1+ pattern type filters, KIP-290;
// v2+ flexible).
//
// With no authorizer the answer is SECURITY_DISABLED (54), as Kafka's.
// Otherwise the principal needs DESCRIBE on the CLUSTER resource
// (CLUSTER_AUTHORIZATION_FAILED, 31). The filter selects bindings as Kafka's
// AclBindingFilter (ACLFilter): ANY matches all, MATCH matches the literal
// name, the literal wildcard and covering prefixes; v0 filters literal
// patterns only. A filter with an UNKNOWN element answers INVALID_REQUEST
// (42). Matching bindings come grouped by resource pattern, sorted.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) describeACLsAPI() wire.API {
	return wire.API{Key: 29, Min: 0, Max: 3, Handle: h.handleDescribeACLs}
}

func (h *handlers) handleDescribeACLs(r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if code, msg, ok := h.aclAPIRefusal(r, kmsg.ACLOperationDescribe); !ok {
		resp.ErrorCode = code
		resp.ErrorMessage = &msg
		return resp
	}
	f := ACLFilter{ResourceType: int8(req.ResourceType), ResourceName: req.ResourceName, PatternType: aclPattern(r.Version, req.ResourcePatternType),
		Principal: req.Principal, Host: req.Host, Operation: int8(req.Operation), Permission: int8(req.PermissionType)}
	if err := f.Validate(); err != nil {
		resp.ErrorCode = wire.ErrCode(err)
		resp.ErrorMessage = wire.ErrMessage(err)
		return resp
	}
	_, bs := h.b.View().ACLs.Filter(f)
	for _, bd := range bs {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(bd.ResourceType) ||
			resp.Resources[n-1].ResourceName != bd.ResourceName || resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(bd.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(bd.ResourceType)
			res.ResourceName = bd.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = bd.Principal, bd.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return resp
}
