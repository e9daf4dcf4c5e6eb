package security

// The authorization checks of the request handlers, in one place, with the
// operations Kafka's KafkaApis checks for each API. Each handler calls one
// of these where Kafka checks. They are methods of *Authorizer that a nil
// Authorizer (authorizer.class.name empty) answers "allowed", so with the
// authorizer off each is one branch.
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

// Permits reports whether r's principal may perform op on the named
// resource: Authorize, true on a nil Authorizer.
func (a *Authorizer) Permits(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a == nil || a.Authorize(r, op, rt, name)
}

// PermitsCluster is Permits on the CLUSTER resource.
func (a *Authorizer) PermitsCluster(r *wire.Request, op kmsg.ACLOperation) bool {
	return a.Permits(r, op, kmsg.ACLResourceTypeCluster, wire.ClusterResource)
}

// PermitsAnyTopic reports whether r's principal may perform op on some
// topic (authorizeAnyOfType); true on a nil Authorizer.
func (a *Authorizer) PermitsAnyTopic(r *wire.Request, op kmsg.ACLOperation) bool {
	return a == nil || a.AuthorizeAny(r, op, kmsg.ACLResourceTypeTopic)
}

// ProduceDenied returns the error code a Produce request's partitions of
// topic get for authorization, or 0: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// without WRITE on a transactional request's id (txnID non-empty),
// TOPIC_AUTHORIZATION_FAILED without WRITE on the topic.
func (a *Authorizer) ProduceDenied(r *wire.Request, txnID *string, topic string) int16 {
	if a == nil {
		return 0
	}
	if txnID != nil && *txnID != "" && !a.Authorize(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *txnID) {
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	if !a.Authorize(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, topic) {
		return kerr.TopicAuthorizationFailed.Code
	}
	return 0
}

// TopicDenied reports whether r's principal lacks op on topic.
func (a *Authorizer) TopicDenied(r *wire.Request, op kmsg.ACLOperation, topic string) bool {
	return !a.Permits(r, op, kmsg.ACLResourceTypeTopic, topic)
}

// GroupDenied reports whether r's principal lacks op on group.
func (a *Authorizer) GroupDenied(r *wire.Request, op kmsg.ACLOperation, group string) bool {
	return !a.Permits(r, op, kmsg.ACLResourceTypeGroup, group)
}

// GroupRefusal is the first check of a request that names a group: an
// empty id is INVALID_GROUP_ID, a principal without op on the group
// GROUP_AUTHORIZATION_FAILED; nil when neither.
func (a *Authorizer) GroupRefusal(r *wire.Request, op kmsg.ACLOperation, group string) *kerr.Error {
	switch {
	case group == "":
		return kerr.InvalidGroupID
	case a.GroupDenied(r, op, group):
		return kerr.GroupAuthorizationFailed
	}
	return nil
}

// ErrTopicAuthz is TOPIC_AUTHORIZATION_FAILED naming the topic and the
// operation.
func ErrTopicAuthz(op kmsg.ACLOperation, topic string) error {
	return fmt.Errorf("%w: the principal is not allowed %s on topic %q", kerr.TopicAuthorizationFailed, op, topic)
}

// TopicAuthzErr returns ErrTopicAuthz when r's principal lacks op on
// topic, else nil.
func (a *Authorizer) TopicAuthzErr(r *wire.Request, op kmsg.ACLOperation, topic string) error {
	if a.TopicDenied(r, op, topic) {
		return ErrTopicAuthz(op, topic)
	}
	return nil
}

// CreateTopicAuthzErr is CreateTopics' and auto-creation's check: CREATE
// on the cluster or on the topic, else ErrTopicAuthz.
func (a *Authorizer) CreateTopicAuthzErr(r *wire.Request, topic string) error {
	if a.PermitsCluster(r, kmsg.ACLOperationCreate) || a.Permits(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, topic) {
		return nil
	}
	return ErrTopicAuthz(kmsg.ACLOperationCreate, topic)
}

// ConfigResourceAuthzErr checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on
// a config resource: the topic, or the cluster for brokers (and broker
// loggers), failing with TOPIC_ or CLUSTER_AUTHORIZATION_FAILED.
func (a *Authorizer) ConfigResourceAuthzErr(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) error {
	if rt == kmsg.ConfigResourceTypeTopic {
		return a.TopicAuthzErr(r, op, name)
	}
	if !a.PermitsCluster(r, op) {
		return fmt.Errorf("%w: the principal is not allowed %s on the cluster", kerr.ClusterAuthorizationFailed, op)
	}
	return nil
}

// MetadataTopicDenied reports whether a Metadata request's named topic
// answers TOPIC_AUTHORIZATION_FAILED: without DESCRIBE on it, or, when the
// request would auto-create it (wouldCreate: a valid name the image lacks,
// with auto-creation on and asked for), without CREATE on the cluster or
// the topic.
func (a *Authorizer) MetadataTopicDenied(r *wire.Request, name string, wouldCreate bool) bool {
	if a == nil {
		return false
	}
	if !a.Authorize(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name) {
		return true
	}
	return wouldCreate && a.CreateTopicAuthzErr(r, name) != nil
}

// FindCoordinatorDenied returns FindCoordinator's authorization error for
// one key, or nil: DESCRIBE on the group (key type 0) or on the
// transactional id (key type 1).
func (a *Authorizer) FindCoordinatorDenied(r *wire.Request, typ int8, key string) *kerr.Error {
	switch {
	case typ == 0 && !a.Permits(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key):
		return kerr.GroupAuthorizationFailed
	case typ == 1 && !a.Permits(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key):
		return kerr.TransactionalIDAuthorizationFailed
	}
	return nil
}

// ClusterAuthorizedOps is DescribeCluster's cluster_authorized_operations:
// all (the bits of every CLUSTER operation Kafka supports) on a nil
// Authorizer, else the bits of those r's principal is allowed (Kafka's
// authorizedOperations).
func (a *Authorizer) ClusterAuthorizedOps(r *wire.Request, all int32) int32 {
	if a == nil {
		return all
	}
	var bits int32
	for op := kmsg.ACLOperation(0); op <= kmsg.ACLOperationDescribeTokens; op++ {
		if all&(1<<op) != 0 && a.PermitsCluster(r, op) {
			bits |= 1 << op
		}
	}
	return bits
}
