package appliance

// The authorization checks of the request handlers, in one place, with the
// operations Kafka's KafkaApis checks for each API. Each handler calls one
// of these where Kafka checks; with the authorizer off each is one branch.
// The handlers of concept packages ask wire.Request.Allowed themselves: the
// topic, config and cluster admin APIs' checks (CreateTopics through
// ListPartitionReassignments below) are appliance/metadata's
// (createTopicAuthzErr, configResourceAuthzErr there).
//
//	Produce               WRITE on TRANSACTIONAL_ID (transactional), WRITE on TOPIC
//	Fetch                 READ on TOPIC
//	ListOffsets, OffsetForLeaderEpoch   DESCRIBE on TOPIC
//	Metadata              DESCRIBE on TOPIC; auto-creation: CREATE on CLUSTER or TOPIC
//	CreateTopics          CREATE on CLUSTER or TOPIC
//	DeleteTopics          DELETE on TOPIC;  CreatePartitions: ALTER on TOPIC
//	DescribeConfigs       DESCRIBE_CONFIGS on TOPIC or CLUSTER (brokers)
//	(Incremental)AlterConfigs  ALTER_CONFIGS on TOPIC or CLUSTER (brokers)
//	DeleteRecords         DELETE on TOPIC
//	Join/Sync/Heartbeat/LeaveGroup, OffsetCommit   READ on GROUP (and READ on TOPIC)
//	OffsetFetch, DescribeGroups, FindCoordinator   DESCRIBE on GROUP (TRANSACTIONAL_ID)
//	DeleteGroups, OffsetDelete   DELETE on GROUP;  ListGroups: DESCRIBE on CLUSTER or each GROUP
//	InitProducerId        WRITE on TRANSACTIONAL_ID, or IDEMPOTENT_WRITE on CLUSTER / WRITE on any TOPIC
//	AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit   WRITE on TRANSACTIONAL_ID (+ TOPIC / GROUP)
//	ElectLeaders, AlterPartitionReassignments, CreateAcls, DeleteAcls   ALTER on CLUSTER
//	ListPartitionReassignments, DescribeLogDirs, DescribeAcls           DESCRIBE on CLUSTER

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceDenied returns the error code a produce request's partitions of
// topic get for authorization, or 0: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// without WRITE on a transactional request's id, TOPIC_AUTHORIZATION_FAILED
// without WRITE on the topic.
func (b *Broker) produceDenied(r *wire.Request, req *kmsg.ProduceRequest, topic string) int16 {
	if b.authz == nil {
		return 0
	}
	if req.TransactionID != nil && *req.TransactionID != "" && !b.authorize(r, kmsg.ACLOperationWrite, aclResTxnID, *req.TransactionID) {
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	if !b.authorize(r, kmsg.ACLOperationWrite, aclResTopic, topic) {
		return kerr.TopicAuthorizationFailed.Code
	}
	return 0
}

// topicDenied reports whether the principal lacks op on topic.
func (b *Broker) topicDenied(r *wire.Request, op kmsg.ACLOperation, topic string) bool {
	return b.authz != nil && !b.authorize(r, op, aclResTopic, topic)
}

// groupDenied reports whether the principal lacks op on group.
func (b *Broker) groupDenied(r *wire.Request, op kmsg.ACLOperation, group string) bool {
	return b.authz != nil && !b.authorize(r, op, aclResGroup, group)
}

// groupRefusal is the first check of a request that names a group: an
// empty id is INVALID_GROUP_ID, a principal without op on the group
// GROUP_AUTHORIZATION_FAILED; nil when neither.
func (b *Broker) groupRefusal(r *wire.Request, op kmsg.ACLOperation, group string) *kerr.Error {
	switch {
	case group == "":
		return kerr.InvalidGroupID
	case b.groupDenied(r, op, group):
		return kerr.GroupAuthorizationFailed
	}
	return nil
}

// errTopicAuthz is TOPIC_AUTHORIZATION_FAILED with the topic and operation.
func errTopicAuthz(op kmsg.ACLOperation, topic string) error {
	return fmt.Errorf("%w: the principal is not allowed %s on topic %q", kerr.TopicAuthorizationFailed, op, topic)
}

// createTopicAuthzErr is CreateTopics' and auto-creation's check: CREATE on
// the cluster or on the topic.
func (b *Broker) createTopicAuthzErr(r *wire.Request, topic string) error {
	if b.authz == nil || b.authorizeCluster(r, kmsg.ACLOperationCreate) || b.authorize(r, kmsg.ACLOperationCreate, aclResTopic, topic) {
		return nil
	}
	return errTopicAuthz(kmsg.ACLOperationCreate, topic)
}

// metadataTopicDenied reports whether a Metadata request's named topic
// answers TOPIC_AUTHORIZATION_FAILED: without DESCRIBE on it, or, for a
// topic the request would auto-create, without CREATE on the cluster or the
// topic.
func (b *Broker) metadataTopicDenied(r *wire.Request, req *kmsg.MetadataRequest, name string, exists bool) bool {
	if b.authz == nil {
		return false
	}
	if !b.authorize(r, kmsg.ACLOperationDescribe, aclResTopic, name) {
		return true
	}
	autoCreate := b.cfg.AutoCreateTopics && (r.Version < 4 || req.AllowAutoTopicCreation)
	return !exists && autoCreate && validTopicName(name) == nil && b.createTopicAuthzErr(r, name) != nil
}

// findCoordinatorDenied returns FindCoordinator's authorization error for
// one key, or nil: DESCRIBE on the group (type 0) or on the transactional
// id (type 1).
func (b *Broker) findCoordinatorDenied(r *wire.Request, typ int8, key string) *kerr.Error {
	if b.authz == nil {
		return nil
	}
	switch typ {
	case 0:
		if !b.authorize(r, kmsg.ACLOperationDescribe, aclResGroup, key) {
			return kerr.GroupAuthorizationFailed
		}
	case 1:
		if !b.authorize(r, kmsg.ACLOperationDescribe, aclResTxnID, key) {
			return kerr.TransactionalIDAuthorizationFailed
		}
	}
	return nil
}

// listGroupsFilter returns whether the principal may see group in
// ListGroups: DESCRIBE on the cluster shows all, else DESCRIBE on each.
func (b *Broker) listGroupsFilter(r *wire.Request) func(group string) bool {
	if b.authz == nil || b.authorizeCluster(r, kmsg.ACLOperationDescribe) {
		return func(string) bool { return true }
	}
	return func(g string) bool { return b.authorize(r, kmsg.ACLOperationDescribe, aclResGroup, g) }
}

// offsetFetchGroupDenied answers an OffsetFetch v0-v7 whose principal may
// not DESCRIBE the group: GROUP_AUTHORIZATION_FAILED at the top (v2+) and on
// every requested partition, as Kafka's getErrorResponse.
func offsetFetchGroupDenied(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) kmsg.Response {
	resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
