package security

// CreateAcls (key 30), v0-v3 (KIP-140; v1+ pattern types, KIP-290; v2+
// flexible).
//
// With no authorizer (authorizer.class.name empty) every creation answers
// SECURITY_DISABLED (54), as Kafka does. Otherwise the principal needs ALTER
// on the CLUSTER resource (CLUSTER_AUTHORIZATION_FAILED, 31, per creation).
// Each creation is checked as Kafka's controller checks it: a concrete
// resource type, LITERAL or PREFIXED pattern (v0 carries none: LITERAL), a
// concrete operation, ALLOW or DENY, a "Type:name" principal, a non-empty
// name and "kafka-cluster" as the only CLUSTER name; otherwise
// INVALID_REQUEST (42) with a message. Valid bindings are committed as one
// metadata batch; a binding that exists already succeeds unchanged.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) createACLsAPI() wire.API {
	return wire.API{Key: 30, Min: 0, Max: 3, Handle: h.handleCreateACLs}
}

// errSecurityDisabledMsg is Kafka's message for SECURITY_DISABLED.
const errSecurityDisabledMsg = "No Authorizer is configured."

// aclAPIRefusal is what every result of an ACL request answers when the
// authorizer is off (SECURITY_DISABLED) or the principal may not perform op
// on the cluster (CLUSTER_AUTHORIZATION_FAILED); ok when neither applies.
func (h *handlers) aclAPIRefusal(r *wire.Request, op kmsg.ACLOperation) (code int16, msg string, ok bool) {
	if h.authz == nil {
		return kerr.SecurityDisabled.Code, errSecurityDisabledMsg, false
	}
	if !h.authz.Authorize(r, op, aclResCluster, clusterResourceName) {
		return kerr.ClusterAuthorizationFailed.Code, "the principal is not allowed " + op.String() + " on the cluster", false
	}
	return 0, "", true
}

// aclPattern is a request's pattern type: v0 of the ACL APIs has no field
// and means LITERAL (KIP-290).
func aclPattern(version int16, pt kmsg.ACLResourcePatternType) int8 {
	if version == 0 {
		pt = aclPatLiteral
	}
	return int8(pt)
}

func (h *handlers) handleCreateACLs(r *wire.Request) any {
	req := r.Req.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	if code, msg, ok := h.aclAPIRefusal(r, kmsg.ACLOperationAlter); !ok {
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = code
			res.ErrorMessage = &msg
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	bindings := make([]ACLBinding, len(req.Creations))
	for i, c := range req.Creations {
		bindings[i] = ACLBinding{ResourceType: int8(c.ResourceType), ResourceName: c.ResourceName, PatternType: aclPattern(r.Version, c.ResourcePatternType),
			Principal: c.Principal, Host: c.Host, Operation: int8(c.Operation), Permission: int8(c.PermissionType)}
	}
	return wire.Deferred(func() any {
		for _, err := range h.createACLs(bindings) {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = wire.ErrCode(err)
			res.ErrorMessage = wire.ErrMessage(err)
			resp.Results = append(resp.Results, res)
		}
		return resp
	})
}
