package appliance

// DescribeConfigs (key 32), v0-v4.
//
// Topic resources (type 2) list every topic config we accept
// (topicConfigDefs, sorted by name) with its effective value. The source
// (v1+) is DYNAMIC_TOPIC_CONFIG (1) for a topic override,
// STATIC_BROKER_CONFIG (4) when server.properties set one of the broker
// properties behind the config (log.retention.ms, log.retention.minutes,
// log.retention.hours for retention.ms, ...), DEFAULT_CONFIG (5) otherwise;
// v0 reports the same through IsDefault. With include_synonyms (v1+) each
// entry lists, in order of precedence, the topic override, the broker
// properties set in server.properties, and the broker default, as Kafka
// does. An unknown topic answers UNKNOWN_TOPIC_OR_PARTITION (3), an illegal
// name INVALID_TOPIC_EXCEPTION (17).
//
// Broker resources (type 4) named with our node id list every broker
// property we know (server.properties merged with our defaults) as
// STATIC_BROKER_CONFIG or DEFAULT_CONFIG, read-only; secrets (passwords,
// JAAS configs) are sensitive and have a null value. An empty broker name
// asks, as in Kafka, for the cluster-wide dynamic broker defaults only,
// which this broker does not have: the answer is an empty list. Another
// broker id or a name that is not a number answers INVALID_REQUEST (42), as
// does any other resource type.
//
// Group resources (type 32) list the group configs (share.Config.Describe) with
// their effective values, for any group id.
//
// config_names filters the entries; null or empty asks for all, an unknown
// name is skipped. ConfigType (v3+) comes from each config's kind;
// documentation is always null.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var describeConfigsAPI = apiDef{key: 32, min: 0, max: 4, handle: handleDescribeConfigs}

func handleDescribeConfigs(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := b.currentImage()
	synonyms := r.Version >= 1 && req.IncludeSynonyms
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType = rr.ResourceType
		res.ResourceName = rr.ResourceName
		fail := func(err error) {
			res.ErrorCode = wire.ErrCode(err)
			res.ErrorMessage = wire.ErrMessage(err)
		}
		if err := b.configResourceAuthzErr(r, kmsg.ACLOperationDescribeConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			fail(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if err := validTopicName(rr.ResourceName); err != nil {
				fail(err)
				break
			}
			t := im.Topics[rr.ResourceName]
			if t == nil {
				fail(fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, rr.ResourceName))
				break
			}
			res.Configs = describeTopicConfigs(b.cfg.TopicDefaults, b.cfg.Props, t.Configs, rr.ConfigNames, synonyms)
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName == "" {
				res.Configs = describeBrokerConfigs(nil, im.Brokers[""], nil, rr.ConfigNames, synonyms)
				break
			}
			if err := checkBrokerResourceName(rr.ResourceName, b.cfg.NodeID); err != nil {
				fail(err)
				break
			}
			res.Configs = describeBrokerConfigs(b.cfg.Props, im.Brokers[""], im.Brokers[rr.ResourceName], rr.ConfigNames, synonyms)
		case kmsg.ConfigResourceTypeGroupConfig: // share.Config.Describe
			res.Configs = b.shareConfig().Describe(im.GroupConfigs[rr.ResourceName], rr.ConfigNames, synonyms)
		default:
			fail(fmt.Errorf("%w: resource type %d is not supported (2 topic, 4 broker, 32 group)", kerr.InvalidRequest, rr.ResourceType))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

// checkBrokerResourceName accepts a broker resource named with our node id.
func checkBrokerResourceName(name string, nodeID int32) error {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return fmt.Errorf("%w: broker resource name %q is not a broker id", kerr.InvalidRequest, name)
	}
	if int32(id) != nodeID {
		return fmt.Errorf("%w: unexpected broker id, expected %d or empty string, but received %s", kerr.InvalidRequest, nodeID, name)
	}
	return nil
}

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

// topicBrokerSynonyms are the broker properties that set a topic config's
// default, highest precedence first (Kafka's ALL_TOPIC_CONFIG_SYNONYMS,
// limited to the ones ConfigFromProperties reads).
func topicBrokerSynonyms(d topicConfigDef) []string {
	switch d.name {
	case "retention.ms":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "segment.ms":
		return []string{"log.roll.ms", "log.roll.hours"}
	}
	return []string{d.brokerProp}
}

// topicDefaultSynonym is the broker property that holds Kafka's built-in
// default of a topic config, and that default in the property's unit.
func topicDefaultSynonym(d topicConfigDef) (name, value string) {
	switch d.name {
	case "retention.ms":
		return "log.retention.hours", "168"
	case "segment.ms":
		return "log.roll.hours", "168"
	}
	return d.brokerProp, d.def
}

// explicitBrokerProp returns a broker property that server.properties set.
// Config.Props merges brokerDefaults in, so a property whose value is our
// built-in default counts as not set.
func explicitBrokerProp(props map[string]string, k string) (string, bool) {
	v, ok := props[k]
	if !ok {
		return "", false
	}
	if d, isDefault := brokerDefaults[k]; isDefault && d == v {
		return "", false
	}
	return v, true
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

type configSynonym struct {
	name   string
	value  string
	source kmsg.ConfigSource
}

// topicConfigSynonyms lists where a topic config's value may come from, in
// order of precedence: the topic override, broker properties set in
// server.properties, Kafka's built-in default. The first entry is the
// effective one.
func topicConfigSynonyms(d topicConfigDef, props, overrides map[string]string) []configSynonym {
	var out []configSynonym
	if v, ok := overrides[d.name]; ok {
		out = append(out, configSynonym{d.name, v, kmsg.ConfigSourceDynamicTopicConfig})
	}
	for _, k := range topicBrokerSynonyms(d) {
		if v, ok := explicitBrokerProp(props, k); ok {
			out = append(out, configSynonym{k, v, kmsg.ConfigSourceStaticBrokerConfig})
		}
	}
	n, v := topicDefaultSynonym(d)
	return append(out, configSynonym{n, v, kmsg.ConfigSourceDefaultConfig})
}

// describeTopicConfigs builds a topic's DescribeConfigs entries. defaults
// are the broker-level topic defaults (Config.TopicDefaults), props the
// broker properties (Config.Props), overrides the topic's own configs.
func describeTopicConfigs(defaults, props, overrides map[string]string, names []string, withSynonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range topicConfigNames() {
		if !wantConfig(names, name) {
			continue
		}
		d, _ := topicConfigDefFor(name)
		syns := topicConfigSynonyms(d, props, overrides)
		value, ok := overrides[name]
		if !ok {
			value, ok = defaults[name]
			if !ok {
				value = d.def
			}
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = name
		c.Value = &value
		c.Source = syns[0].source
		c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
		c.ConfigType = configKindType(d.kind)
		if withSynonyms {
			for _, s := range syns {
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				sy.Name, sy.Source = s.name, s.source
				sy.Value = &s.value
				c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
			}
		}
		out = append(out, c)
	}
	return out
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

func brokerPropType(k string) kmsg.ConfigType {
	if t, ok := brokerPropTypes[k]; ok {
		return t
	}
	for _, d := range topicConfigDefs {
		if d.brokerProp == k {
			return configKindType(d.kind)
		}
	}
	if sensitiveBrokerProp(k) {
		return kmsg.ConfigTypePassword
	}
	return kmsg.ConfigTypeUnknown
}

// sensitiveBrokerProp reports properties whose values must not be shown
// (Kafka's PASSWORD type, and JAAS configs that embed credentials).
func sensitiveBrokerProp(k string) bool {
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.HasSuffix(k, "jaas.config")
}

// describeBrokerConfigs builds a broker's DescribeConfigs entries from its
// static properties (nil when describing the cluster-wide defaults),
// cluster-wide dynamic defaults and per-broker dynamic configs, the
// effective source first as in Kafka: DYNAMIC_BROKER_CONFIG (2),
// DYNAMIC_DEFAULT_BROKER_CONFIG (3), STATIC_BROKER_CONFIG (4),
// DEFAULT_CONFIG (5).
func describeBrokerConfigs(props, dynDefault, dynBroker map[string]string, names []string, withSynonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	keys := map[string]bool{}
	for _, m := range []map[string]string{props, dynDefault, dynBroker} {
		for k := range m {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		if wantConfig(names, k) {
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range sorted {
		var syns []configSynonym
		if v, ok := dynBroker[k]; ok {
			syns = append(syns, configSynonym{k, v, kmsg.ConfigSourceDynamicBrokerConfig})
		}
		if v, ok := dynDefault[k]; ok {
			syns = append(syns, configSynonym{k, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig})
		}
		if props != nil {
			if v, ok := explicitBrokerProp(props, k); ok {
				syns = append(syns, configSynonym{k, v, kmsg.ConfigSourceStaticBrokerConfig})
			}
			if v, ok := brokerDefaults[k]; ok {
				syns = append(syns, configSynonym{k, v, kmsg.ConfigSourceDefaultConfig})
			}
		}
		if len(syns) == 0 {
			// Only in props, equal to its default, and not one of ours:
			// cannot happen (explicitBrokerProp only hides our defaults).
			continue
		}
		sensitive := sensitiveBrokerProp(k)
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = k
		if !sensitive {
			v := syns[0].value
			c.Value = &v
		}
		c.Source = syns[0].source
		c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
		c.ReadOnly = true // broker configs are static: AlterConfigs refuses them
		c.IsSensitive = sensitive
		c.ConfigType = brokerPropType(k)
		if withSynonyms {
			for _, s := range syns {
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				sy.Name, sy.Source = s.name, s.source
				if !sensitive {
					v := s.value
					sy.Value = &v
				}
				c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
			}
		}
		out = append(out, c)
	}
	return out
}
