package appliance

// The ConfigTypes DescribeConfigs reports (appliance/metadata's handlers
// ask them through metadata.Configs, configRegistry below), and the
// config_names filter the group configs' DescribeConfigs shares.

import (
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configKindType maps a topicConfigDef kind to Kafka's ConfigType.
func configKindType(kind string) kmsg.ConfigType {
	switch kind {
	case "boolean":
		return kmsg.ConfigTypeBoolean
	case "string":
		return kmsg.ConfigTypeString
	case "int":
		return kmsg.ConfigTypeInt
	case "long":
		return kmsg.ConfigTypeLong
	case "double":
		return kmsg.ConfigTypeDouble
	case "list":
		return kmsg.ConfigTypeList
	case "class":
		return kmsg.ConfigTypeClass
	}
	return kmsg.ConfigTypeUnknown
}

// wantConfig reports whether a config name passes a request's config_names
// filter (null or empty: every config).
func wantConfig(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// brokerPropTypes are the ConfigTypes of the broker properties we read
// that are not the default of a topic config.
var brokerPropTypes = map[string]kmsg.ConfigType{
	"node.id":                          kmsg.ConfigTypeInt,
	"broker.id":                        kmsg.ConfigTypeInt,
	"listeners":                        kmsg.ConfigTypeString,
	"advertised.listeners":             kmsg.ConfigTypeString,
	"log.dirs":                         kmsg.ConfigTypeString,
	"log.dir":                          kmsg.ConfigTypeString,
	"num.partitions":                   kmsg.ConfigTypeInt,
	"default.replication.factor":       kmsg.ConfigTypeInt,
	"auto.create.topics.enable":        kmsg.ConfigTypeBoolean,
	"delete.topic.enable":              kmsg.ConfigTypeBoolean,
	"socket.request.max.bytes":         kmsg.ConfigTypeInt,
	"fetch.max.bytes":                  kmsg.ConfigTypeInt,
	"log.retention.check.interval.ms":  kmsg.ConfigTypeLong,
	"connections.max.idle.ms":          kmsg.ConfigTypeLong,
	"max.connections":                  kmsg.ConfigTypeInt,
	"max.connections.per.ip":           kmsg.ConfigTypeInt,
	"max.connections.per.ip.overrides": kmsg.ConfigTypeString,
	"offsets.topic.num.partitions":     kmsg.ConfigTypeInt,
	"offsets.topic.replication.factor": kmsg.ConfigTypeShort,
	"log.retention.minutes":            kmsg.ConfigTypeInt,
	"log.retention.hours":              kmsg.ConfigTypeInt,
	"log.roll.hours":                   kmsg.ConfigTypeInt,
	"cluster.id":                       kmsg.ConfigTypeString,
	"shards":                           kmsg.ConfigTypeInt,
	"io.engine":                        kmsg.ConfigTypeString,
	"log.io.mode":                      kmsg.ConfigTypeString,
	"log.io.cache.bytes":               kmsg.ConfigTypeLong,
	"log.io.cache.prefault":            kmsg.ConfigTypeBoolean,
	"log.io.preallocate.chunk.bytes":   kmsg.ConfigTypeLong,
	"log.io.preallocate.zero":          kmsg.ConfigTypeBoolean,
}

// brokerPropType is the ConfigType of broker property k.
func brokerPropType(k string) kmsg.ConfigType {
	if t, ok := brokerPropTypes[k]; ok {
		return t
	}
	for _, d := range topicConfigDefs {
		if d.brokerProp == k {
			return configKindType(d.kind)
		}
	}
	if metadata.SensitiveBrokerProp(k) {
		return kmsg.ConfigTypePassword
	}
	return kmsg.ConfigTypeUnknown
}

// configRegistry is the topic config registry (topicConfigDefs,
// brokerDefaults) as appliance/metadata's handlers see it.
type configRegistry struct{}

func (configRegistry) TopicConfig(name string) (metadata.TopicConfigDef, bool) {
	d, ok := topicConfigDefFor(name)
	if !ok {
		return metadata.TopicConfigDef{}, false
	}
	return metadata.TopicConfigDef{Name: d.name, BrokerProp: d.brokerProp, Default: d.def, Kind: d.kind, Type: configKindType(d.kind)}, true
}

func (configRegistry) TopicConfigNames() []string { return topicConfigNames() }

func (configRegistry) ValidateTopicConfig(name, value string) error {
	return ValidateTopicConfig(name, value)
}

func (configRegistry) BrokerDefault(prop string) (string, bool) {
	v, ok := brokerDefaults[prop]
	return v, ok
}

func (configRegistry) BrokerPropType(prop string) kmsg.ConfigType { return brokerPropType(prop) }
