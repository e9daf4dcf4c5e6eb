package config

import "github.com/twmb/franz-go/pkg/kmsg"

// KindType maps a topic config's kind (boolean, string, int, long, double, list, class) to Kafka's ConfigType.
func KindType(kind string) kmsg.ConfigType {
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

// BrokerPropTypes are the ConfigTypes of the broker properties we read
// that are not the default of a topic config.
var BrokerPropTypes = map[string]kmsg.ConfigType{
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
