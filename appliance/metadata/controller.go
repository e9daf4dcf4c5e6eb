package metadata

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller: the one place that proposes metadata changes. Each
// request is checked against the image in force and turned into records,
// committed to the metadata log as one batch and applied to a new image,
// which the Host publishes (Publisher.Publish): the listeners, not this
// code, open, reconfigure and drop partitions. The Host's lock (the
// broker's controller mutex) serialises it.

// Host is what the controller and the topic, config and cluster handlers
// (Register) need of the node. appliance implements it over the Broker.
type Host interface {
	// Lock and Unlock hold the controller mutex: metadata changes are
	// proposed, committed and published one at a time.
	sync.Locker
	// Image is the image in force.
	Image() *Image
	// Commit appends recs to the metadata log as one batch on top of im
	// (the image in force) and returns the next image, not yet published.
	Commit(im *Image, recs []Record) (*Image, error)
	// DeferUndo asks the metadata log to write recs, the undo of the batch
	// ending at offset after, before its next batch (Log.DeferUndo).
	DeferUndo(after int64, recs []Record)
	// Publish makes next the image in force and hands the delta from prev
	// to the listeners; the error is the partitions that did not open.
	Publish(prev, next *Image) error
	// Settings are the node's facts the controller decides with.
	Settings() Settings
	// Logger is the node's logger.
	Logger() *slog.Logger
	// PartitionDir is the directory of partition p of topic.
	PartitionDir(topic string, p int32) string
	// InternalTopic reports the node's own topics, which may not be deleted.
	InternalTopic(name string) bool
	// EffectiveTopicConfigs is t's configs: the broker's topic defaults
	// with t's overrides on top.
	EffectiveTopicConfigs(t *TopicImage) map[string]string
	// Configs is the registry of topic configs and broker properties.
	Configs
	// Advertised is the host and port this node advertises on the
	// listener r came in on.
	Advertised(r *wire.Request) (host string, port int32)
	// AlterGroupConfigs applies IncrementalAlterConfigs operations to a
	// group resource (type 32).
	AlterGroupConfigs(group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error
	// DescribeGroupConfigs is DescribeConfigs' answer for a group resource.
	DescribeGroupConfigs(im *Image, group string, names []string, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig
}

// Settings are the broker properties the controller decides with.
type Settings struct {
	NodeID                   int32
	ClusterID                string
	NumPartitions            int32 // num.partitions: a topic's partitions when not given
	DefaultReplicationFactor int16 // default.replication.factor
	DeleteTopicEnable        bool  // delete.topic.enable
	// TopicDefaults are the broker-level defaults of topic configs, Props
	// the broker properties (server.properties merged with the defaults).
	TopicDefaults map[string]string
	Props         map[string]string
}

// TopicConfigDef is one topic-level config as the registry defines it.
type TopicConfigDef struct {
	Name       string
	BrokerProp string // the broker property that sets its default
	Default    string // Kafka's default
	Kind       string // long, int, string, boolean, double, list, class
	Type       kmsg.ConfigType
}

// Configs is the node's registry of topic configs and broker properties.
type Configs interface {
	// TopicConfig returns the definition of topic config name.
	TopicConfig(name string) (TopicConfigDef, bool)
	// TopicConfigNames lists the topic configs, sorted by name.
	TopicConfigNames() []string
	// ValidateTopicConfig checks one topic config name and value.
	ValidateTopicConfig(name, value string) error
	// BrokerDefault is the node's built-in default of a broker property.
	BrokerDefault(prop string) (string, bool)
	// BrokerPropType is the ConfigType of a broker property.
	BrokerPropType(prop string) kmsg.ConfigType
}

// Controller proposes the metadata changes of admin requests through its
// Host. It holds no state: the Host's image and log are the state.
type Controller struct{ h Host }

// NewController returns the controller of h.
func NewController(h Host) Controller { return Controller{h} }

// ValidTopicName applies Kafka's rules: 1-249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func ValidTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("%w: topic name %q is illegal", kerr.InvalidTopicException, name)
	}
	if len(name) > 249 {
		return fmt.Errorf("%w: topic name is longer than 249 characters", kerr.InvalidTopicException)
	}
	for _, c := range name { // runes, so that the message names a character, not its first byte
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q contains %q; legal characters are ASCII letters, digits, '.', '_' and '-'", kerr.InvalidTopicException, name, c)
		}
	}
	return nil
}

// CommitError gives a failed commit its Kafka error code:
// KAFKA_STORAGE_ERROR when the metadata log's storage failed, else
// UNKNOWN_SERVER_ERROR.
func CommitError(err error) error {
	if errors.Is(err, ErrStorage) {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
}

// TopicSpec is what CreateTopics, auto-creation and tests ask for.
type TopicSpec struct {
	Name              string
	Partitions        int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	Configs           map[string]string
}

// CreateTopic validates spec, and unless validateOnly commits and
// publishes the topic. It returns the created topic image (the would-be
// image when validating only). Errors wrap kerr codes.
func (c Controller) CreateTopic(spec TopicSpec, validateOnly bool) (*TopicImage, error) {
	if err := ValidTopicName(spec.Name); err != nil {
		return nil, err
	}
	set := c.h.Settings()
	if spec.Partitions == -1 {
		spec.Partitions = set.NumPartitions
	}
	if spec.Partitions <= 0 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", kerr.InvalidPartitions)
	}
	if spec.Partitions > 100000 {
		return nil, fmt.Errorf("%w: %d partitions is more than this broker allows (100000)", kerr.InvalidPartitions, spec.Partitions)
	}
	if spec.ReplicationFactor == -1 {
		spec.ReplicationFactor = set.DefaultReplicationFactor
	}
	if spec.ReplicationFactor <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", kerr.InvalidReplicationFactor)
	}
	if spec.ReplicationFactor > 1 {
		// Until replication exists, every partition has one replica; with
		// registered brokers it is placed on one of them (PlacePartitions).
		return nil, fmt.Errorf("%w: replication factor %d is larger than the 1 available broker", kerr.InvalidReplicationFactor, spec.ReplicationFactor)
	}
	for k, v := range spec.Configs {
		if err := c.h.ValidateTopicConfig(k, v); err != nil {
			return nil, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
	}
	c.h.Lock()
	defer c.h.Unlock()
	im := c.h.Image()
	if _, ok := im.Topics[spec.Name]; ok {
		return nil, fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, spec.Name)
	}
	if err := CheckPartitionBudget(im, int(spec.Partitions)); err != nil {
		return nil, err
	}
	if colliding := im.CollidingTopic(spec.Name); colliding != "" {
		return nil, fmt.Errorf("%w: topic %q collides with existing topic %q ('.' and '_' collide in metric names)", kerr.InvalidTopicException, spec.Name, colliding)
	}
	id := NewTopicID()
	parts, err := PlacePartitions(im, id, 0, spec.Partitions, int32(spec.ReplicationFactor), set.NodeID)
	if err != nil {
		return nil, err
	}
	recs := append([]Record{{Topic: &TopicRecord{Name: spec.Name, ID: id}}}, parts...)
	for k, v := range spec.Configs {
		recs = append(recs, Record{Config: &ConfigRecord{ResourceType: 2, Name: spec.Name, Key: k, Value: &v}})
	}
	local := localPartitions(parts, set.NodeID)
	if validateOnly {
		next, err := im.Apply(im.Offset+1, recs)
		if err != nil {
			return nil, err
		}
		return next.Topics[spec.Name], nil
	}
	// The partition directories first: on a full disk the create fails
	// here, before the metadata names the topic.
	if err := c.makePartitionDirs(spec.Name, local); err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	next, err := c.h.Commit(im, recs)
	if err != nil {
		c.removePartitionDirs(spec.Name, local)
		return nil, CommitError(err)
	}
	t := next.Topics[spec.Name]
	log := c.h.Logger()
	if err := c.h.Publish(im, next); err != nil {
		// Roll the topic back so the metadata never names partitions that
		// are not served: the removal, published, drops what did open.
		log.Error("cannot open partitions of new topic, removing it", "topic", spec.Name, "err", err)
		undo := []Record{{RemoveTopic: &RemoveTopicRecord{ID: t.ID}}}
		if back, cerr := c.h.Commit(next, undo); cerr == nil {
			_ = c.h.Publish(next, back)
		} else {
			// The metadata in force goes back to before the topic. The
			// metadata log still holds its creation: the removal is
			// written first when the log takes writes again, and a start
			// before that creates the topic (as Kafka's controller would
			// have, its commit done).
			log.Error("cannot remove the half-created topic from the metadata log; it is not served, and its removal is written when the metadata log takes writes again", "topic", spec.Name, "err", cerr)
			c.h.DeferUndo(next.Offset, undo)
			_ = c.h.Publish(next, im)
		}
		return nil, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	log.Info("created topic", "topic", spec.Name, "id", id.String(), "partitions", spec.Partitions)
	return t, nil
}

// makePartitionDirs creates the directories of new partitions parts of
// topic (those placed on this node); on an error it removes those it
// created.
func (c Controller) makePartitionDirs(topic string, parts []int32) error {
	for i, p := range parts {
		if err := os.Mkdir(c.h.PartitionDir(topic, p), 0o755); err != nil && !os.IsExist(err) {
			c.removePartitionDirs(topic, parts[:i])
			return fmt.Errorf("cannot create partition directory: %w", err)
		}
	}
	return nil
}

// removePartitionDirs removes the empty directories of partitions parts
// of topic (a directory that holds files is left alone).
func (c Controller) removePartitionDirs(topic string, parts []int32) {
	for _, p := range parts {
		_ = os.Remove(c.h.PartitionDir(topic, p))
	}
}

// DeleteTopic removes a topic, named by id when id is not zero, else by
// name, from the metadata; the publisher's listeners drop its partitions
// (their directories renamed "<topic>-<p>.<id>-delete" first, as Kafka
// does) and its committed offsets.
func (c Controller) DeleteTopic(name string, id TopicID) (*TopicImage, error) {
	if !c.h.Settings().DeleteTopicEnable {
		return nil, fmt.Errorf("%w: delete.topic.enable is false", kerr.TopicDeletionDisabled)
	}
	c.h.Lock()
	defer c.h.Unlock()
	im := c.h.Image()
	var t *TopicImage
	if id != (TopicID{}) {
		t = im.TopicsByID[id]
		if t == nil {
			return nil, kerr.UnknownTopicID
		}
	} else {
		t = im.Topics[name]
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
	}
	if c.h.InternalTopic(t.Name) {
		return nil, fmt.Errorf("%w: internal topic %q cannot be deleted", kerr.InvalidTopicException, t.Name)
	}
	next, err := c.h.Commit(im, []Record{{RemoveTopic: &RemoveTopicRecord{ID: t.ID}}})
	if err != nil {
		return nil, CommitError(err)
	}
	_ = c.h.Publish(im, next) // drops the partitions and the topic's committed offsets
	c.h.Logger().Info("deleted topic", "topic", t.Name, "id", t.ID.String())
	return t, nil
}

// CreatePartitions grows a topic to count partitions.
func (c Controller) CreatePartitions(name string, count int32, validateOnly bool) error {
	c.h.Lock()
	defer c.h.Unlock()
	im := c.h.Image()
	t := im.Topics[name]
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	have := int32(len(t.Partitions))
	if count < have {
		return fmt.Errorf("%w: topic %q has %d partitions, which is more than %d", kerr.InvalidPartitions, name, have, count)
	}
	if count == have {
		return fmt.Errorf("%w: topic %q already has %d partitions", kerr.InvalidPartitions, name, have)
	}
	if count > 100000 {
		return fmt.Errorf("%w: %d partitions is more than this broker allows (100000)", kerr.InvalidPartitions, count)
	}
	if err := CheckPartitionBudget(im, int(count-have)); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	node := c.h.Settings().NodeID
	rf := int32(1) // the topic's replication factor
	if have > 0 {
		rf = int32(max(1, len(t.Partitions[0].Replicas)))
	}
	recs, err := PlacePartitions(im, t.ID, have, count, rf, node)
	if err != nil {
		return err
	}
	local := localPartitions(recs, node)
	// The directories first, as CreateTopic does: on a full disk the
	// change fails here, before the metadata names the partitions.
	if err := c.makePartitionDirs(name, local); err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	next, err := c.h.Commit(im, recs)
	if err != nil {
		c.removePartitionDirs(name, local)
		return CommitError(err)
	}
	if err := c.h.Publish(im, next); err != nil {
		// Partitions cannot be taken back out of the metadata: those that
		// did not open are offline (Metadata: LEADER_NOT_AVAILABLE, leader
		// -1) until a restart opens them, like a partition after an I/O
		// error.
		c.h.Logger().Error("cannot open added partitions; they are offline until the broker restarts", "topic", name, "err", err)
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	return nil
}

// ConfigChange is one config set (Value != nil) or removal (Value == nil).
type ConfigChange struct {
	Key   string
	Value *string
}

// AlterTopicConfigs applies changes to a topic's overrides. With replace
// (legacy AlterConfigs) every override not named is removed.
func (c Controller) AlterTopicConfigs(name string, changes []ConfigChange, replace, validateOnly bool) error {
	return c.alterTopicConfigsWith(name, func(*TopicImage) ([]ConfigChange, error) { return changes, nil }, replace, validateOnly)
}

// alterTopicConfigsWith is AlterTopicConfigs with the changes computed by
// compute from the topic as it is under the controller lock, so changes
// that depend on current values (APPEND/SUBTRACT) are not lost to a
// concurrent alteration committed in between.
func (c Controller) alterTopicConfigsWith(name string, compute func(*TopicImage) ([]ConfigChange, error), replace, validateOnly bool) error {
	c.h.Lock()
	defer c.h.Unlock()
	im := c.h.Image()
	t := im.Topics[name]
	if t == nil {
		return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, name)
	}
	changes, err := compute(t)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		if ch.Value != nil {
			if err := c.h.ValidateTopicConfig(ch.Key, *ch.Value); err != nil {
				return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
			}
		} else if _, ok := c.h.TopicConfig(ch.Key); !ok {
			return fmt.Errorf("%w: unknown topic config %q", kerr.InvalidConfig, ch.Key)
		}
	}
	// The log manager gives the open partitions the new configs.
	return c.commitConfigs(im, 2, name, changes, t.Configs, replace, validateOnly)
}

// commitConfigs commits and publishes the ConfigRecords of changes to
// resource name of resourceType (2 topic, 4 broker); with replace (the
// legacy AlterConfigs), the keys of cur that changes do not name are
// removed too.
func (c Controller) commitConfigs(im *Image, resourceType int8, name string, changes []ConfigChange, cur map[string]string, replace, validateOnly bool) error {
	var recs []Record
	named := map[string]bool{}
	for _, ch := range changes {
		named[ch.Key] = true
		recs = append(recs, Record{Config: &ConfigRecord{ResourceType: resourceType, Name: name, Key: ch.Key, Value: ch.Value}})
	}
	if replace {
		for k := range cur {
			if !named[k] {
				recs = append(recs, Record{Config: &ConfigRecord{ResourceType: resourceType, Name: name, Key: k}})
			}
		}
	}
	if validateOnly || len(recs) == 0 {
		return nil
	}
	next, err := c.h.Commit(im, recs)
	if err != nil {
		return CommitError(err)
	}
	_ = c.h.Publish(im, next)
	return nil
}
