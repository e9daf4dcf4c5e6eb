package metadata

import (
	"fmt"
	"maps"
	"sort"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// Record is one entry of the __cluster_metadata log. Exactly one of
// the pointer fields is set. It plays the role of KRaft's TopicRecord,
// PartitionRecord, ConfigRecord and RemoveTopicRecord. The log stores each
// as a cluster/records binary record (ToBinary, Converter); the JSON
// tags are the format of logs written before, read once by the upgrade
// (Log.upgradeMetadataLog).
type Record struct {
	Topic       *TopicRecord       `json:"topic,omitempty"`
	Partition   *PartitionRecord   `json:"partition,omitempty"`
	Config      *ConfigRecord      `json:"config,omitempty"`
	RemoveTopic *RemoveTopicRecord `json:"removeTopic,omitempty"`
	ProducerIDs *ProducerIDsRecord `json:"producerIds,omitempty"`
	// ACL and RemoveACL add and remove ACL bindings (AccessControlEntryRecord, ACLBindings).
	ACL       *AccessControlEntryRecord       `json:"acl,omitempty"`
	RemoveACL *RemoveAccessControlEntryRecord `json:"removeAcl,omitempty"`
	// ClientQuota sets or removes a client quota (ClientQuotaRecord, ClientQuotas).
	ClientQuota *ClientQuotaRecord `json:"clientQuota,omitempty"`
	// UserScramCredential and RemoveUserScramCredential store and delete
	// SCRAM credentials (UserScramCredentialRecord, ScramCredentials).
	UserScramCredential       *UserScramCredentialRecord       `json:"userScramCredential,omitempty"`
	RemoveUserScramCredential *RemoveUserScramCredentialRecord `json:"removeUserScramCredential,omitempty"`
	// RegisterBroker, UnregisterBroker and BrokerChange register, remove
	// and change a broker of the cluster (Registered). Logs of JSON
	// records never hold them.
	RegisterBroker   *records.RegisterBrokerRecord           `json:"-"`
	UnregisterBroker *records.UnregisterBrokerRecord         `json:"-"`
	BrokerChange     *records.BrokerRegistrationChangeRecord `json:"-"`
}

// ProducerIDsRecord hands a block of producer ids to a broker (KRaft's
// ProducerIdsRecord): ids below NextProducerID are taken.
type ProducerIDsRecord struct {
	BrokerID       int32 `json:"brokerId"`
	NextProducerID int64 `json:"nextProducerId"`
}

// TopicRecord creates a topic.
type TopicRecord struct {
	Name string  `json:"name"`
	ID   TopicID `json:"id"`
}

// PartitionRecord creates or changes one partition.
type PartitionRecord struct {
	TopicID     TopicID `json:"topicId"`
	Partition   int32   `json:"partition"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leaderEpoch"`
	// PartitionEpoch counts the partition's changes (Kafka's partition
	// epoch): every PartitionChangeRecord bumps it.
	PartitionEpoch int32 `json:"partitionEpoch,omitempty"`
	// Logs written before the publisher also hold "shard", the owner shard
	// the proposing node chose. It is ignored: placement is each node's own
	// choice when it opens the partition (appliance's logManager.open), not metadata.
}

// ConfigRecord sets (Value != nil) or removes (Value == nil) one config of a
// resource. ResourceType uses Kafka's codes: 2 topic, 4 broker, 32 group
// (KIP-848/KIP-932 group configs, share.Config).
type ConfigRecord struct {
	ResourceType int8    `json:"resourceType"`
	Name         string  `json:"name"`
	Key          string  `json:"key"`
	Value        *string `json:"value"`
}

// RemoveTopicRecord deletes a topic and its partitions.
type RemoveTopicRecord struct {
	ID TopicID `json:"id"`
}

// Image is an immutable snapshot of the cluster metadata: the result of
// applying every record up to Offset. Readers load it from an atomic pointer
// and never lock.
type Image struct {
	Offset     int64 // offset of the last applied record, -1 when empty
	Topics     map[string]*TopicImage
	TopicsByID map[TopicID]*TopicImage
	Brokers    map[string]map[string]string // broker config overrides by node id
	// GroupConfigs are the GROUP config resources' values by group id
	// (share.Config checks and describes them); nil when there are none.
	GroupConfigs map[string]map[string]string
	// NextProducerID is the first producer id not yet handed out in a block.
	NextProducerID int64
	// ACLs are the ACL bindings; nil when there are none.
	ACLs *ACLBindings
	// ClientQuotas are the client quota values; nil when there are none.
	ClientQuotas *ClientQuotas
	// Scram are the SCRAM credentials by user and mechanism.
	Scram ScramCredentials
	// Registered are the brokers registered with the controller quorum
	// (BrokerRegistration), by node id; nil when none is, as on a single
	// node, where the node itself is the one broker.
	Registered map[int32]*BrokerImage

	checks Checks // the concepts' validation of their records; nil: none
}

// NewImage returns the empty image (Offset -1) whose Apply, and that of
// every image derived from it, validates other concepts' records with c.
func NewImage(c Checks) *Image {
	return &Image{Offset: -1, Topics: map[string]*TopicImage{}, TopicsByID: map[TopicID]*TopicImage{}, Brokers: map[string]map[string]string{}, checks: c}
}

// Checks returns the validation the image was built with.
func (im *Image) Checks() Checks { return im.checks }

// SortedTopicNames returns the image's topic names in sorted order.
func (im *Image) SortedTopicNames() []string {
	names := make([]string, 0, len(im.Topics))
	for n := range im.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Apply returns a new image with recs applied; im is unchanged. Records
// that refer to unknown topics are errors (a corrupt or out-of-order log).
func (im *Image) Apply(offset int64, recs []Record) (*Image, error) {
	next := &Image{
		Offset:     offset,
		Topics:     make(map[string]*TopicImage, len(im.Topics)+1),
		TopicsByID: make(map[TopicID]*TopicImage, len(im.Topics)+1),
		Brokers:    im.Brokers,

		GroupConfigs:   im.GroupConfigs,
		NextProducerID: im.NextProducerID,
		ACLs:           im.ACLs,

		ClientQuotas: im.ClientQuotas,
		Scram:        im.Scram,
		Registered:   im.Registered,
		checks:       im.checks,
	}
	regCopied := false   // next.Registered is a copy of im's, changed freely
	var acls *aclApplier // copied from im.ACLs on the first ACL record
	for k, v := range im.Topics {
		next.Topics[k] = v
		next.TopicsByID[v.ID] = v
	}
	// Topics touched in this apply are copied once, then mutated freely.
	copied := map[TopicID]bool{}
	mut := func(id TopicID) (*TopicImage, error) {
		t, ok := next.TopicsByID[id]
		if !ok {
			return nil, fmt.Errorf("cannot apply metadata record: unknown topic id %s", id)
		}
		if copied[id] {
			return t, nil
		}
		c := &TopicImage{Name: t.Name, ID: t.ID, Partitions: append([]PartitionImage(nil), t.Partitions...), Configs: make(map[string]string, len(t.Configs))}
		for k, v := range t.Configs {
			c.Configs[k] = v
		}
		next.Topics[c.Name] = c
		next.TopicsByID[c.ID] = c
		copied[id] = true
		return c, nil
	}
	for _, r := range recs {
		switch {
		case r.Topic != nil:
			if _, ok := next.Topics[r.Topic.Name]; ok {
				return nil, fmt.Errorf("cannot apply TopicRecord: topic %q exists", r.Topic.Name)
			}
			t := &TopicImage{Name: r.Topic.Name, ID: r.Topic.ID, Configs: map[string]string{}}
			next.Topics[t.Name] = t
			next.TopicsByID[t.ID] = t
			copied[t.ID] = true
		case r.Partition != nil:
			t, err := mut(r.Partition.TopicID)
			if err != nil {
				return nil, err
			}
			p := PartitionImage{Partition: r.Partition.Partition, Replicas: r.Partition.Replicas, ISR: r.Partition.ISR,
				Leader: r.Partition.Leader, LeaderEpoch: r.Partition.LeaderEpoch, PartitionEpoch: r.Partition.PartitionEpoch}
			switch idx := int(p.Partition); {
			case idx < len(t.Partitions):
				t.Partitions[idx] = p
			case idx == len(t.Partitions):
				t.Partitions = append(t.Partitions, p)
			default:
				return nil, fmt.Errorf("cannot apply PartitionRecord: topic %q partition %d after %d partitions", t.Name, idx, len(t.Partitions))
			}
		case r.Config != nil:
			switch r.Config.ResourceType {
			case 2:
				t, ok := next.Topics[r.Config.Name]
				if !ok {
					return nil, fmt.Errorf("cannot apply ConfigRecord: unknown topic %q", r.Config.Name)
				}
				t, _ = mut(t.ID)
				if r.Config.Value == nil {
					delete(t.Configs, r.Config.Key)
				} else {
					t.Configs[r.Config.Key] = *r.Config.Value
				}
			case 4:
				b := map[string]map[string]string{}
				for k, v := range next.Brokers {
					b[k] = v
				}
				m := map[string]string{}
				for k, v := range b[r.Config.Name] {
					m[k] = v
				}
				if r.Config.Value == nil {
					delete(m, r.Config.Key)
				} else {
					m[r.Config.Key] = *r.Config.Value
				}
				b[r.Config.Name] = m
				next.Brokers = b
			case 32:
				next.GroupConfigs = applyGroupConfig(next.GroupConfigs, r.Config)
			default:
				return nil, fmt.Errorf("cannot apply ConfigRecord: resource type %d", r.Config.ResourceType)
			}
		case r.ProducerIDs != nil:
			if r.ProducerIDs.NextProducerID < next.NextProducerID {
				return nil, fmt.Errorf("cannot apply ProducerIdsRecord: next id %d below %d", r.ProducerIDs.NextProducerID, next.NextProducerID)
			}
			next.NextProducerID = r.ProducerIDs.NextProducerID
		case r.ACL != nil || r.RemoveACL != nil:
			if acls == nil {
				acls = newACLApplier(im.ACLs)
			}
			var err error
			if r.ACL != nil {
				err = acls.add(r.ACL, im.checks)
			} else {
				err = acls.remove(r.RemoveACL)
			}
			if err != nil {
				return nil, err
			}
		case r.ClientQuota != nil:
			q, err := applyClientQuota(next.ClientQuotas, r.ClientQuota, im.checks)
			if err != nil {
				return nil, err
			}
			next.ClientQuotas = q
		case r.UserScramCredential != nil || r.RemoveUserScramCredential != nil:
			c, err := applyScram(next.Scram, r.UserScramCredential, r.RemoveUserScramCredential, im.checks)
			if err != nil {
				return nil, err
			}
			next.Scram = c
		case r.RegisterBroker != nil || r.UnregisterBroker != nil || r.BrokerChange != nil:
			if !regCopied {
				next.Registered = maps.Clone(next.Registered)
				if next.Registered == nil {
					next.Registered = map[int32]*BrokerImage{}
				}
				regCopied = true
			}
			if err := applyBroker(next.Registered, r); err != nil {
				return nil, err
			}
		case r.RemoveTopic != nil:
			t, ok := next.TopicsByID[r.RemoveTopic.ID]
			if !ok {
				return nil, fmt.Errorf("cannot apply RemoveTopicRecord: unknown topic id %s", r.RemoveTopic.ID)
			}
			delete(next.Topics, t.Name)
			delete(next.TopicsByID, t.ID)
		default:
			return nil, fmt.Errorf("cannot apply an empty metadata record")
		}
	}
	if acls != nil {
		next.ACLs = acls.build()
	}
	if regCopied && len(next.Registered) == 0 {
		next.Registered = nil
	}
	return next, nil
}

// applyGroupConfig returns m with rec applied, copying what changes (the
// image is immutable).
func applyGroupConfig(m map[string]map[string]string, rec *ConfigRecord) map[string]map[string]string {
	out := make(map[string]map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	g := make(map[string]string, len(out[rec.Name])+1)
	for k, v := range out[rec.Name] {
		g[k] = v
	}
	if rec.Value == nil {
		delete(g, rec.Key)
	} else {
		g[rec.Key] = *rec.Value
	}
	if len(g) == 0 {
		delete(out, rec.Name)
	} else {
		out[rec.Name] = g
	}
	return out
}
