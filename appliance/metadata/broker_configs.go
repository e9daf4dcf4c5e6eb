package metadata

// Dynamic broker configs (issue 43, item 3): AlterConfigs and
// IncrementalAlterConfigs on a BROKER resource (type 4), named "" for the
// cluster-wide default or with this node's id for this broker, as Kafka's
// DynamicBrokerConfig does for the configs it can change without a
// restart. The ones this node applies are the broker properties that set
// topic defaults (Kafka's DynamicLogConfig: the synonyms of topic configs,
// log.retention.ms, log.retention.bytes, log.segment.bytes, message.max.bytes,
// compression.type, log.cleanup.policy, log.flush.interval.ms, ...): they are
// committed as ConfigRecords (resource type 4) in the metadata log, so they
// survive a restart, and every partition that does not override the topic
// config takes the new value when the image is published
// (TopicDefaultsWith, Delta.BrokerConfigs). The hours and minutes forms
// (log.retention.hours, log.roll.hours, ...) are refused dynamically:
// their ms forms are the ones to set. log.cleaner.backoff.ms and
// log.cleaner.io.max.bytes.per.second reach the cleaner
// (config.CleanerDynamic; the broker calls cleaner.Cleaner.Reconfigure). Any other property answers
// INVALID_REQUEST naming it, as Kafka answers for its read-only configs
// ("Cannot update these configs dynamically"), including those Kafka can
// change but this broker applies only at start (num.io.threads,
// log.cleaner.threads, log.cleaner.dedupe.buffer.size, ...). A value the topic config's validation refuses
// answers INVALID_CONFIG.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DynamicBrokerProp returns the topic config whose default the broker
// property prop sets, when prop may be changed without a restart.
func DynamicBrokerProp(c Configs, prop string) (TopicConfigDef, bool) {
	if strings.HasSuffix(prop, ".hours") || strings.HasSuffix(prop, ".minutes") {
		return TopicConfigDef{}, false
	}
	for _, name := range c.TopicConfigNames() {
		if d, ok := c.TopicConfig(name); ok && d.BrokerProp == prop {
			return d, true
		}
	}
	return TopicConfigDef{}, false
}

// TopicDefaultsWith is the node's topic defaults with the image's dynamic
// broker configs on top: static (the defaults server.properties gives),
// then the cluster-wide dynamic defaults (broker resource ""), then this
// node's own (its id), each broker property mapped onto the topic config
// it sets. It returns static itself when the image has none.
func TopicDefaultsWith(c Configs, static map[string]string, im *Image, nodeID int32) map[string]string {
	cluster, node := im.Brokers[""], im.Brokers[strconv.Itoa(int(nodeID))]
	if len(cluster) == 0 && len(node) == 0 {
		return static
	}
	out := maps.Clone(static)
	for _, m := range []map[string]string{cluster, node} {
		for prop, v := range m {
			if d, ok := DynamicBrokerProp(c, prop); ok {
				out[d.Name] = v
			}
		}
	}
	return out
}

// checkBrokerAlterName accepts the cluster default ("") or this node's id.
func checkBrokerAlterName(name string, nodeID int32) error {
	if name == "" {
		return nil
	}
	return checkBrokerResourceName(name, nodeID)
}

// dynamicCleanerProp reports the log.cleaner.* properties the cleaner
// takes without a restart (config.CleanerDynamic).
func dynamicCleanerProp(prop string) bool { return slices.Contains(config.CleanerDynamic, prop) }

// DynamicProps are the dynamic broker configs in force on node nodeID:
// the cluster-wide defaults with the node's own on top.
func DynamicProps(im *Image, nodeID int32) map[string]string {
	out := maps.Clone(im.Brokers[""])
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, im.Brokers[strconv.Itoa(int(nodeID))])
	return out
}

// checkDynamicBrokerChange checks one change of a broker resource.
func checkDynamicBrokerChange(c Configs, ch ConfigChange) error {
	if dynamicCleanerProp(ch.Key) {
		if ch.Value != nil {
			if _, err := config.CleanerFromProps(map[string]string{ch.Key: *ch.Value}); err != nil {
				return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
			}
		}
		return nil
	}
	d, ok := DynamicBrokerProp(c, ch.Key)
	if !ok {
		return fmt.Errorf("%w: cannot update these configs dynamically: %s", kerr.InvalidRequest, ch.Key)
	}
	if ch.Value != nil {
		if err := c.ValidateTopicConfig(d.Name, *ch.Value); err != nil {
			return fmt.Errorf("%w: invalid value %q for configuration %s: %v", kerr.InvalidConfig, *ch.Value, ch.Key, err)
		}
	}
	return nil
}

// alterBrokerConfigsWith applies changes, computed by compute from the
// resource's dynamic configs and its effective values under the
// controller lock, to broker resource name: one metadata batch of
// ConfigRecords (resource type 4). With replace (legacy AlterConfigs)
// every dynamic config of the resource not named is removed.
func (c Controller) alterBrokerConfigsWith(name string, compute func(effective func(prop string) string) ([]ConfigChange, error), replace, validateOnly bool) error {
	set := c.h.Settings()
	if err := checkBrokerAlterName(name, set.NodeID); err != nil {
		return err
	}
	c.h.Lock()
	defer c.h.Unlock()
	im := c.h.Image()
	cur := im.Brokers[name]
	effective := func(prop string) string {
		for _, m := range []map[string]string{im.Brokers[strconv.Itoa(int(set.NodeID))], im.Brokers[""]} {
			if v, ok := m[prop]; ok {
				return v
			}
		}
		if d, ok := DynamicBrokerProp(c.h, prop); ok {
			if v, ok := set.TopicDefaults[d.Name]; ok {
				return v
			}
			return d.Default
		}
		return set.Props[prop]
	}
	changes, err := compute(effective)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		if err := checkDynamicBrokerChange(c.h, ch); err != nil {
			return err
		}
	}
	// The log manager gives the open partitions the new defaults.
	return c.commitConfigs(im, 4, name, changes, cur, replace, validateOnly)
}

// incrementalBrokerChanges turns IncrementalAlterConfigs operations on a
// broker resource into ConfigChanges; APPEND and SUBTRACT work on LIST
// configs (log.cleanup.policy) against the effective value.
func incrementalBrokerChanges(c Configs, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, effective func(string) string) ([]ConfigChange, error) {
	changes := make([]ConfigChange, 0, len(ops))
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			changes = append(changes, ConfigChange{Key: op.Name, Value: op.Value})
		case kmsg.IncrementalAlterConfigOpDelete:
			changes = append(changes, ConfigChange{Key: op.Name})
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			d, ok := DynamicBrokerProp(c, op.Name)
			if !ok {
				return nil, fmt.Errorf("%w: cannot update these configs dynamically: %s", kerr.InvalidRequest, op.Name)
			}
			d.Name = op.Name // ApplyListOp's message names the broker property
			v, err := ApplyListOp(d, op.Op, effective(op.Name), *op.Value)
			if err != nil {
				return nil, err
			}
			changes = append(changes, ConfigChange{Key: op.Name, Value: &v})
		default:
			return nil, fmt.Errorf("%w: unknown operation %d for config %q", kerr.InvalidRequest, op.Op, op.Name)
		}
	}
	return changes, nil
}

// DynamicDefaults holds a node's topic defaults with the dynamic broker
// configs on top (TopicDefaultsWith), swapped whole when a published
// image changes them, so produce, fetch and the log manager read them
// without a lock. The zero value holds none: Get returns the static
// defaults until the first Update.
type DynamicDefaults struct {
	p atomic.Pointer[map[string]string]
}

// Update recomputes the defaults from the static ones and im's dynamic
// broker configs; the publisher's Preparer calls it before the
// partitions are reconfigured with them.
func (d *DynamicDefaults) Update(c Configs, static map[string]string, im *Image, nodeID int32) {
	m := TopicDefaultsWith(c, static, im, nodeID)
	d.p.Store(&m)
}

// Get returns the defaults in force, static before any Update.
func (d *DynamicDefaults) Get(static map[string]string) map[string]string {
	if m := d.p.Load(); m != nil {
		return *m
	}
	return static
}

// CleanerWith is the cleaner's configuration on node nodeID: static with
// the dynamic log.cleaner.* configs of im on top (config.CleanerWith).
func CleanerWith(static config.Cleaner, im *Image, nodeID int32) config.Cleaner {
	return config.CleanerWith(static, DynamicProps(im, nodeID))
}
