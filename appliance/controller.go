package appliance

import (
	"fmt"
	"os"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sys/unix"
)

// This file is the controller: the one place that proposes metadata
// changes. Each request is checked against the current image and turned
// into records, committed to the metadata log as one batch and applied to
// a new image, which is published (publish.go): the listeners, not this
// code, open, reconfigure and drop partitions. ctl.mu serialises it.

// validTopicName applies Kafka's rules: 1-249 characters of [a-zA-Z0-9._-],
// not "." or "..".
func validTopicName(name string) error {
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

// TopicSpec is what CreateTopics, auto-creation and tests ask for.
type TopicSpec struct {
	Name              string
	Partitions        int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	Configs           map[string]string
}

// createTopic validates spec, and unless validateOnly commits and opens the
// topic. It returns the created topic image (the would-be image when
// validating only). Errors wrap kerr codes.
func (b *Broker) createTopic(spec TopicSpec, validateOnly bool) (*TopicImage, error) {
	if err := validTopicName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Partitions == -1 {
		spec.Partitions = b.cfg.NumPartitions
	}
	if spec.Partitions <= 0 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", kerr.InvalidPartitions)
	}
	if spec.Partitions > 100000 {
		return nil, fmt.Errorf("%w: %d partitions is more than this broker allows (100000)", kerr.InvalidPartitions, spec.Partitions)
	}
	if spec.ReplicationFactor == -1 {
		spec.ReplicationFactor = b.cfg.DefaultReplicationFactor
	}
	if spec.ReplicationFactor <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", kerr.InvalidReplicationFactor)
	}
	if spec.ReplicationFactor > 1 {
		return nil, fmt.Errorf("%w: replication factor %d is larger than the 1 available broker", kerr.InvalidReplicationFactor, spec.ReplicationFactor)
	}
	for k, v := range spec.Configs {
		if err := ValidateTopicConfig(k, v); err != nil {
			return nil, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
	}
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
	if _, ok := im.Topics[spec.Name]; ok {
		return nil, fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, spec.Name)
	}
	if err := b.checkPartitionBudget(im, int(spec.Partitions)); err != nil {
		return nil, err
	}
	if colliding := im.CollidingTopic(spec.Name); colliding != "" {
		return nil, fmt.Errorf("%w: topic %q collides with existing topic %q ('.' and '_' collide in metric names)", kerr.InvalidTopicException, spec.Name, colliding)
	}
	id := newTopicID()
	recs := metadata.CreateTopicRecords(spec.Name, id, spec.Partitions, b.cfg.NodeID, spec.Configs)
	if validateOnly {
		next, err := im.Apply(im.Offset+1, recs)
		if err != nil {
			return nil, err
		}
		return next.Topics[spec.Name], nil
	}
	// The partition directories first: on a full disk the create fails
	// here, before the metadata names the topic.
	if err := b.makePartitionDirs(spec.Name, 0, spec.Partitions); err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	next, err := b.ctl.meta.Commit(im, recs)
	if err != nil {
		b.removePartitionDirs(spec.Name, 0, spec.Partitions)
		return nil, commitErr(err)
	}
	t := next.Topics[spec.Name]
	if err := b.publish(im, next); err != nil {
		// Roll the topic back so the metadata never names partitions that
		// are not served: the removal, published, drops what did open.
		b.log.Error("cannot open partitions of new topic, removing it", "topic", spec.Name, "err", err)
		undo := []MetadataRecord{{RemoveTopic: &RemoveTopicRecord{ID: t.ID}}}
		if back, cerr := b.ctl.meta.Commit(next, undo); cerr == nil {
			_ = b.publish(next, back)
		} else {
			// The metadata in force goes back to before the topic. The
			// metadata log still holds its creation: the removal is
			// written first when the log takes writes again, and a start
			// before that creates the topic (as Kafka's controller would
			// have, its commit done).
			b.log.Error("cannot remove the half-created topic from the metadata log; it is not served, and its removal is written when the metadata log takes writes again", "topic", spec.Name, "err", cerr)
			b.ctl.meta.DeferUndo(next.Offset, undo)
			_ = b.publish(next, im)
		}
		return nil, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	b.log.Info("created topic", "topic", spec.Name, "id", id.String(), "partitions", spec.Partitions)
	return t, nil
}

// makePartitionDirs creates the directories of new partitions [from, to)
// of topic; on an error it removes those it created.
func (b *Broker) makePartitionDirs(topic string, from, to int32) error {
	for p := from; p < to; p++ {
		if err := os.Mkdir(b.partitionDir(topic, p), 0o755); err != nil && !os.IsExist(err) {
			b.removePartitionDirs(topic, from, p)
			return fmt.Errorf("cannot create partition directory: %w", err)
		}
	}
	return nil
}

// removePartitionDirs removes the empty directories of partitions
// [from, to) of topic (a directory that holds files is left alone).
func (b *Broker) removePartitionDirs(topic string, from, to int32) {
	for p := from; p < to; p++ {
		_ = os.Remove(b.partitionDir(topic, p))
	}
}

// deleteTopic removes a topic from the metadata and deletes its partitions'
// directories (renamed "<topic>-<p>.<id>-delete" first, as Kafka does).
func (b *Broker) deleteTopic(name string, id TopicID) (*TopicImage, error) {
	if !b.cfg.DeleteTopicEnable {
		return nil, fmt.Errorf("%w: delete.topic.enable is false", kerr.TopicDeletionDisabled)
	}
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
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
	if isInternalTopic(t.Name) {
		return nil, fmt.Errorf("%w: internal topic %q cannot be deleted", kerr.InvalidTopicException, t.Name)
	}
	next, err := b.ctl.meta.Commit(im, []MetadataRecord{{RemoveTopic: &RemoveTopicRecord{ID: t.ID}}})
	if err != nil {
		return nil, commitErr(err)
	}
	_ = b.publish(im, next) // drops the partitions and the topic's committed offsets
	b.log.Info("deleted topic", "topic", t.Name, "id", t.ID.String())
	return t, nil
}

// createPartitions grows a topic to count partitions.
func (b *Broker) createPartitions(name string, count int32, validateOnly bool) error {
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
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
	if err := b.checkPartitionBudget(im, int(count-have)); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	recs := metadata.AddPartitionRecords(t.ID, have, count, b.cfg.NodeID)
	// The directories first, as createTopic does: on a full disk the
	// change fails here, before the metadata names the partitions.
	if err := b.makePartitionDirs(name, have, count); err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	next, err := b.ctl.meta.Commit(im, recs)
	if err != nil {
		b.removePartitionDirs(name, have, count)
		return commitErr(err)
	}
	if err := b.publish(im, next); err != nil {
		// Partitions cannot be taken back out of the metadata: those that
		// did not open are offline (Metadata: LEADER_NOT_AVAILABLE, leader
		// -1) until a restart opens them, like a partition after an I/O
		// error.
		b.log.Error("cannot open added partitions; they are offline until the broker restarts", "topic", name, "err", err)
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	return nil
}

// ConfigChange is one config set (Value != nil) or removal (Value == nil).
type ConfigChange struct {
	Key   string
	Value *string
}

// alterTopicConfigs applies changes to a topic's overrides. With replace
// (legacy AlterConfigs) every override not named is removed.
func (b *Broker) alterTopicConfigs(name string, changes []ConfigChange, replace, validateOnly bool) error {
	return b.alterTopicConfigsWith(name, func(*TopicImage) ([]ConfigChange, error) { return changes, nil }, replace, validateOnly)
}

// alterTopicConfigsWith is alterTopicConfigs with the changes computed by
// compute from the topic as it is under the controller lock, so changes
// that depend on current values (APPEND/SUBTRACT) are not lost to a
// concurrent alteration committed in between.
func (b *Broker) alterTopicConfigsWith(name string, compute func(*TopicImage) ([]ConfigChange, error), replace, validateOnly bool) error {
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	im := b.currentImage()
	t := im.Topics[name]
	if t == nil {
		return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, name)
	}
	changes, err := compute(t)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if c.Value != nil {
			if err := ValidateTopicConfig(c.Key, *c.Value); err != nil {
				return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
			}
		} else if _, ok := topicConfigDefFor(c.Key); !ok {
			return fmt.Errorf("%w: unknown topic config %q", kerr.InvalidConfig, c.Key)
		}
	}
	var recs []MetadataRecord
	named := map[string]bool{}
	for _, c := range changes {
		named[c.Key] = true
		recs = append(recs, MetadataRecord{Config: &ConfigRecord{ResourceType: 2, Name: name, Key: c.Key, Value: c.Value}})
	}
	if replace {
		for k := range t.Configs {
			if !named[k] {
				recs = append(recs, MetadataRecord{Config: &ConfigRecord{ResourceType: 2, Name: name, Key: k}})
			}
		}
	}
	if validateOnly || len(recs) == 0 {
		return nil
	}
	next, err := b.ctl.meta.Commit(im, recs)
	if err != nil {
		return commitErr(err)
	}
	_ = b.publish(im, next) // the log manager gives the open partitions the new configs
	return nil
}

// fdsPerPartition is what a new partition holds: the active segment's
// .log, .index and .timeindex. Each closed segment keeps its .log open
// too (as Kafka does), which checkPartitionBudget counts in the
// descriptors open now.
const fdsPerPartition = 3

// openDescriptors is the number of descriptors the process holds, or -1.
func openDescriptors() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// descriptorHint says what to do when opening partitions runs out of
// descriptors.
func descriptorHint() string {
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	return fmt.Sprintf("the process may open %d files (RLIMIT_NOFILE) and each partition holds one descriptor per segment plus two: raise LimitNOFILE / ulimit -n", lim.Cur)
}

// checkPartitionBudget refuses a change that would leave the broker with
// more open partitions than its file descriptor limit allows, instead of
// committing a topic whose partitions then cannot be opened.
func (b *Broker) checkPartitionBudget(im *Image, add int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return nil
	}
	total := add
	for _, t := range im.Topics {
		total += len(t.Partitions)
	}
	const reserve = 1024 // connections, metadata log, checkpoints
	// The partitions open now hold their segments' descriptors (counted
	// in what is open); without /proc, fdsPerPartition each.
	base := uint64(total-add) * fdsPerPartition
	if n := openDescriptors(); n >= 0 {
		base = uint64(n)
	}
	need := base + uint64(add)*fdsPerPartition + reserve
	if need > lim.Cur {
		return fmt.Errorf("%w: %d new partitions (%d in total) would need about %d open files with the %d open now, but the limit (RLIMIT_NOFILE) is %d; raise LimitNOFILE / ulimit -n or create fewer partitions",
			kerr.PolicyViolation, add, total, need, base, lim.Cur)
	}
	return nil
}

// maxFileNameBytes is the longest file name Linux file systems take
// (NAME_MAX).
const maxFileNameBytes = 255

// deletedPartitionDirName is "<topic>-<p>.<id>-delete", with the topic cut
// short when the whole would exceed NAME_MAX (a 249-byte topic name fits a
// live directory but not the suffix), as Kafka does.
func deletedPartitionDirName(topic string, partition int32, id TopicID) string {
	suffix := fmt.Sprintf("-%d.%s-delete", partition, id.String())
	if len(topic)+len(suffix) > maxFileNameBytes {
		topic = topic[:maxFileNameBytes-len(suffix)]
	}
	return topic + suffix
}
