package metadata

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlers answers the topic, config and cluster admin APIs with the
// controller of its Host.
type handlers struct {
	h   Host
	ctl Controller
}

// Register adds the topic, config and cluster admin APIs to t: CreateTopics,
// DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs, ElectLeaders, AlterPartitionReassignments,
// ListPartitionReassignments and DescribeCluster.
func Register(t *wire.Table, h Host) {
	hs := &handlers{h: h, ctl: NewController(h)}
	for _, a := range []wire.API{
		hs.createTopicsAPI(), hs.deleteTopicsAPI(), hs.createPartitionsAPI(),
		hs.describeConfigsAPI(), hs.alterConfigsAPI(), hs.incrementalAlterConfigsAPI(),
		hs.electLeadersAPI(), hs.alterPartitionReassignmentsAPI(), hs.listPartitionReassignmentsAPI(),
		hs.describeClusterAPI(),
	} {
		t.Register(a)
	}
}

// The authorization checks of these APIs, as Kafka's KafkaApis makes them:
// CreateTopics CREATE on the cluster or the topic; DeleteTopics DELETE on
// the topic; CreatePartitions ALTER on the topic; DescribeConfigs and
// (Incremental)AlterConfigs DESCRIBE_CONFIGS or ALTER_CONFIGS on the topic,
// or on the cluster for brokers; ElectLeaders and
// AlterPartitionReassignments ALTER on the cluster;
// ListPartitionReassignments DESCRIBE on the cluster. Without an authorizer
// (r.Authz nil) each allows.

// errTopicAuthz is TOPIC_AUTHORIZATION_FAILED with the topic and operation.
func errTopicAuthz(op kmsg.ACLOperation, topic string) error {
	return fmt.Errorf("%w: the principal is not allowed %s on topic %q", kerr.TopicAuthorizationFailed, op, topic)
}

// topicAuthzErr returns errTopicAuthz when the principal lacks op on topic.
func topicAuthzErr(r *wire.Request, op kmsg.ACLOperation, topic string) error {
	if !r.Allowed(op, kmsg.ACLResourceTypeTopic, topic) {
		return errTopicAuthz(op, topic)
	}
	return nil
}

// createTopicAuthzErr is CreateTopics' check: CREATE on the cluster or on
// the topic.
func createTopicAuthzErr(r *wire.Request, topic string) error {
	if r.AllowedCluster(kmsg.ACLOperationCreate) || r.Allowed(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, topic) {
		return nil
	}
	return errTopicAuthz(kmsg.ACLOperationCreate, topic)
}

// deleteTopicAuthzErr checks DELETE on a topic named by name or id (an
// unknown id is left to the deletion to answer).
func (h *handlers) deleteTopicAuthzErr(r *wire.Request, name *string, id TopicID) error {
	if r.Authz == nil {
		return nil
	}
	n := ""
	if name != nil {
		n = *name
	} else if t := h.h.Image().TopicsByID[id]; t != nil {
		n = t.Name
	} else {
		return nil
	}
	return topicAuthzErr(r, kmsg.ACLOperationDelete, n)
}

// configResourceAuthzErr checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a
// config resource: the topic, or the cluster for brokers (and broker
// loggers), failing with TOPIC_ or CLUSTER_AUTHORIZATION_FAILED.
func configResourceAuthzErr(r *wire.Request, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) error {
	if rt == kmsg.ConfigResourceTypeTopic {
		return topicAuthzErr(r, op, name)
	}
	if !r.AllowedCluster(op) {
		return fmt.Errorf("%w: the principal is not allowed %s on the cluster", kerr.ClusterAuthorizationFailed, op)
	}
	return nil
}
