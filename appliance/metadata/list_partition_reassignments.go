package metadata

// ListPartitionReassignments (key 46), v0 (KIP-455).
//
// A single node never moves replicas (handleAlterPartitionReassignments
// answers every reassignment at once, as a no-op), so no reassignment is
// ever in progress: the answer lists no topics, for named topics and for
// a null list (all) alike, as Kafka's does when none is ongoing. With the
// authorizer on, the principal needs DESCRIBE on the cluster
// (CLUSTER_AUTHORIZATION_FAILED, 31).

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) listPartitionReassignmentsAPI() wire.API {
	return wire.API{Key: 46, Min: 0, Max: 0, Handle: h.handleListPartitionReassignments}
}

func (h *handlers) handleListPartitionReassignments(r *wire.Request) any {
	req := r.Req.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !r.AllowedCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}
	return resp
}
