package appliance

// The broker as appliance/metadata's controller and admin handlers see it
// (metadata.Host): the controller mutex, the image in force, the metadata
// log and the publisher, the broker's settings and the config registry.

import (
	"log/slog"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicSpec is what CreateTopics, auto-creation and tests ask for.
type TopicSpec = metadata.TopicSpec

// ctlHost is the broker as a metadata.Host.
type ctlHost struct {
	configRegistry
	b *Broker
}

func (h ctlHost) Lock()         { h.b.ctl.mu.Lock() }
func (h ctlHost) Unlock()       { h.b.ctl.mu.Unlock() }
func (h ctlHost) Image() *Image { return h.b.currentImage() }

func (h ctlHost) Commit(im *Image, recs []MetadataRecord) (*Image, error) {
	return h.b.ctl.commit(im, recs)
}

func (h ctlHost) DeferUndo(after int64, recs []MetadataRecord) {
	if h.b.ctl.meta != nil { // the quorum has no undo: its commits are final
		h.b.ctl.meta.DeferUndo(after, recs)
	}
}
func (h ctlHost) Publish(prev, next *Image) error           { return h.b.publish(prev, next) }
func (h ctlHost) Logger() *slog.Logger                      { return h.b.log }
func (h ctlHost) PartitionDir(topic string, p int32) string { return h.b.partitionDir(topic, p) }
func (h ctlHost) InternalTopic(name string) bool            { return isInternalTopic(name) }

func (h ctlHost) Settings() metadata.Settings {
	c := h.b.cfg
	return metadata.Settings{NodeID: c.NodeID, ClusterID: c.ClusterID, NumPartitions: c.NumPartitions,
		DefaultReplicationFactor: c.DefaultReplicationFactor, DeleteTopicEnable: c.DeleteTopicEnable,
		TopicDefaults: h.b.ctl.defaults.Get(c.TopicDefaults), Props: c.Props}
}

func (h ctlHost) EffectiveTopicConfigs(t *TopicImage) map[string]string {
	return h.b.effectiveTopicConfigs(t)
}

func (h ctlHost) Advertised(r *wire.Request) (string, int32) { return h.b.advertisedFor(r) }

func (h ctlHost) AlterGroupConfigs(group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	return h.b.alterGroupConfigs(group, ops, validateOnly)
}

func (h ctlHost) DescribeGroupConfigs(im *Image, group string, names []string, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	return h.b.describeGroupConfigs(im, group, names, synonyms)
}

// controller is b's metadata controller.
func (b *Broker) controller() metadata.Controller { return metadata.NewController(ctlHost{b: b}) }

// createTopic is the controller's CreateTopic: auto-creation and the
// coordinators' internal topics.
func (b *Broker) createTopic(spec TopicSpec, validateOnly bool) (*TopicImage, error) {
	if q := b.ctl.quorum; q != nil && !validateOnly {
		return q.CreateTopic(spec, 0, b.controller().CreateTopic, b.currentImage)
	}
	return b.controller().CreateTopic(spec, validateOnly)
}

// validTopicName is metadata.ValidTopicName.
func validTopicName(name string) error { return metadata.ValidTopicName(name) }
