package security

// DeleteAcls (key 31), v0-v3 (KIP-140; v1+ pattern type filters, KIP-290;
// v2+ flexible).
//
// With no authorizer every filter answers SECURITY_DISABLED (54), as
// Kafka's. Otherwise the principal needs ALTER on the CLUSTER resource
// (CLUSTER_AUTHORIZATION_FAILED, 31, per filter). Every binding a filter
// matches (ACLFilter.Matches, as DescribeAcls) is removed, all filters in one metadata
// batch, and listed under the first filter that matched it. A filter with an
// UNKNOWN element answers INVALID_REQUEST (42).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) deleteACLsAPI() wire.API {
	return wire.API{Key: 31, Min: 0, Max: 3, Handle: h.handleDeleteACLs}
}

func (h *handlers) handleDeleteACLs(r *wire.Request) any {
	req := r.Req.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	if code, msg, ok := h.aclAPIRefusal(r, kmsg.ACLOperationAlter); !ok {
		for range req.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = code
			res.ErrorMessage = &msg
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	filters := make([]ACLFilter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = ACLFilter{ResourceType: int8(f.ResourceType), ResourceName: f.ResourceName, PatternType: aclPattern(r.Version, f.ResourcePatternType),
			Principal: f.Principal, Host: f.Host, Operation: int8(f.Operation), Permission: int8(f.PermissionType)}
	}
	return wire.Deferred(func() any {
		matched, errs := h.deleteACLs(filters)
		for i := range filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = wire.ErrCode(errs[i])
			res.ErrorMessage = wire.ErrMessage(errs[i])
			for _, bd := range matched[i] {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType = kmsg.ACLResourceType(bd.ResourceType)
				m.ResourceName = bd.ResourceName
				m.ResourcePatternType = kmsg.ACLResourcePatternType(bd.PatternType)
				m.Principal, m.Host = bd.Principal, bd.Host
				m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	})
}
