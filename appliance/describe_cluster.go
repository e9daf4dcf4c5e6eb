package appliance

// DescribeCluster (key 60), v0-v1 (KIP-700, KIP-919).
//
// Answers the cluster id and this broker as the only broker, with its
// advertised host and port on the listener the request came in on, and no
// rack. The controller id is this broker's
// node id: it is its own controller. v1 carries an endpoint type; this
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

var describeClusterAPI = apiDef{key: 60, min: 0, max: 1, handle: handleDescribeCluster}

// clusterAuthorizedOps is the bitfield of the ACL operations Kafka supports
// on the CLUSTER resource: CREATE (5), ALTER (7), DESCRIBE (8),
// CLUSTER_ACTION (9), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11),
// IDEMPOTENT_WRITE (12).
const clusterAuthorizedOps int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12

func handleDescribeCluster(b *Broker, r *wire.Request) any {
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
	resp.EndpointType = 1
	resp.ClusterID = b.cfg.ClusterID
	resp.ControllerID = b.cfg.NodeID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterAuthorizedOps(r) // security.Authorizer.ClusterAuthorizedOps
	}
	br := kmsg.NewDescribeClusterResponseBroker()
	br.NodeID = b.cfg.NodeID
	br.Host, br.Port = b.advertisedFor(r) // listeners.go
	resp.Brokers = append(resp.Brokers, br)
	return resp
}
