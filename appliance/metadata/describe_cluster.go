package metadata

// DescribeCluster (key 60), v0-v1 (KIP-700, KIP-919).
//
// Answers the cluster id and the brokers as ClientBrokers lists them: on a
// single node, this broker as the only one, with its advertised host and
// port on the listener the request came in on, no rack, and its own node
// id as controller id; with registered brokers, every unfenced one with
// its rack and its endpoint on the request's listener name, and a live
// broker's id as controller id (routing.go). v1 carries an endpoint type; this
// broker serves the brokers endpoint (1) only. As in Kafka's
// computeDescribeClusterResponse, the controllers type (2) answers
// MISMATCHED_ENDPOINT_TYPE (114) and any other type
// UNSUPPORTED_ENDPOINT_TYPE (115), with a message. Without an authorizer
// every operation is allowed, so include_cluster_authorized_operations gets
// the bitfield of every operation on the CLUSTER resource, as Kafka answers
// without an authorizer; with one, the bits of the operations the principal
// is allowed; otherwise the field keeps its default -2147483648.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) describeClusterAPI() wire.API {
	return wire.API{Key: 60, Min: 0, Max: 1, Handle: h.handleDescribeCluster}
}

// ClusterAuthorizedOps is the bitfield of the ACL operations Kafka supports
// on the CLUSTER resource: CREATE (5), ALTER (7), DESCRIBE (8),
// CLUSTER_ACTION (9), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11),
// IDEMPOTENT_WRITE (12).
const ClusterAuthorizedOps int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12

func (h *handlers) handleDescribeCluster(r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if r.Version >= 1 && req.EndpointType != 1 {
		var err error
		if req.EndpointType == 2 {
			err = fmt.Errorf("%w: the request was sent to an endpoint of type brokers, but we wanted an endpoint of type controllers", kerr.MismatchedEndpointType)
		} else {
			err = fmt.Errorf("%w: unsupported endpoint type %d", kerr.UnsupportedEndpointType, req.EndpointType)
		}
		resp.ErrorCode = wire.ErrCode(err)
		resp.ErrorMessage = wire.ErrMessage(err)
		return resp
	}
	set := h.h.Settings()
	resp.EndpointType = 1
	resp.ClusterID = set.ClusterID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterAuthorizedOpsOf(r)
	}
	var brokers []ClientBroker
	brokers, resp.ControllerID = ClientBrokers(h.h.Image(), r, set.NodeID, h.h.Advertised)
	for _, b := range brokers {
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID, br.Host, br.Port, br.Rack = b.ID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, br)
	}
	return resp
}

// clusterAuthorizedOpsOf is DescribeCluster's cluster_authorized_operations:
// every CLUSTER operation without an authorizer, else the bits of those the
// principal is allowed (Kafka's authorizedOperations).
func clusterAuthorizedOpsOf(r *wire.Request) int32 {
	if r.Authz == nil {
		return ClusterAuthorizedOps
	}
	var bits int32
	for op := kmsg.ACLOperation(0); op <= kmsg.ACLOperationDescribeTokens; op++ {
		if ClusterAuthorizedOps&(1<<op) != 0 && r.AllowedCluster(op) {
			bits |= 1 << op
		}
	}
	return bits
}
