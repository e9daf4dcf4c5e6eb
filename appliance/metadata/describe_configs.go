package metadata

// DescribeConfigs (key 32), v0-v4.
//
// Topic resources (type 2) list every topic config we accept
// (Configs.TopicConfigNames) with its effective value. The source
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
// property we know (server.properties merged with our defaults) and the
// dynamic ones, with their source: DYNAMIC_BROKER_CONFIG (2),
// DYNAMIC_DEFAULT_BROKER_CONFIG (3), STATIC_BROKER_CONFIG (4) or
// DEFAULT_CONFIG (5); read-only unless AlterConfigs may change them
// (broker_configs.go); secrets (passwords, JAAS configs) are sensitive and
// have a null value. An empty broker name asks, as in Kafka, for the
// cluster-wide dynamic broker defaults only. A topic config inherited from
// a dynamic broker config names it as its source. Another
// broker id or a name that is not a number answers INVALID_REQUEST (42), as
// does any other resource type.
//
// Group resources (type 32) list the group configs (Host.DescribeGroupConfigs) with
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

func (h *handlers) describeConfigsAPI() wire.API {
	return wire.API{Key: 32, Min: 0, Max: 4, Handle: h.handleDescribeConfigs}
}

func (h *handlers) handleDescribeConfigs(r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := h.h.Image()
	synonyms := r.Version >= 1 && req.IncludeSynonyms
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType = rr.ResourceType
		res.ResourceName = rr.ResourceName
		fail := func(err error) {
			res.ErrorCode = wire.ErrCode(err)
			res.ErrorMessage = wire.ErrMessage(err)
		}
		if err := configResourceAuthzErr(r, kmsg.ACLOperationDescribeConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			fail(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if err := ValidTopicName(rr.ResourceName); err != nil {
				fail(err)
				break
			}
			t := im.Topics[rr.ResourceName]
			if t == nil {
				fail(fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, rr.ResourceName))
				break
			}
			set := h.h.Settings()
			dyn := brokerDynamic{node: im.Brokers[strconv.Itoa(int(set.NodeID))], cluster: im.Brokers[""]}
			res.Configs = describeTopicConfigs(h.h, set.TopicDefaults, set.Props, t.Configs, dyn, rr.ConfigNames, synonyms)
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName == "" {
				res.Configs = DescribeBrokerConfigs(h.h, nil, im.Brokers[""], nil, rr.ConfigNames, synonyms)
				break
			}
			if err := checkBrokerResourceName(rr.ResourceName, h.h.Settings().NodeID); err != nil {
				fail(err)
				break
			}
			res.Configs = DescribeBrokerConfigs(h.h, h.h.Settings().Props, im.Brokers[""], im.Brokers[rr.ResourceName], rr.ConfigNames, synonyms)
		case kmsg.ConfigResourceTypeGroupConfig:
			res.Configs = h.h.DescribeGroupConfigs(im, rr.ResourceName, rr.ConfigNames, synonyms)
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

// topicBrokerSynonyms are the broker properties that set a topic config's
// default, highest precedence first (Kafka's ALL_TOPIC_CONFIG_SYNONYMS,
// limited to the ones ConfigFromProperties reads).
func topicBrokerSynonyms(d TopicConfigDef) []string {
	switch d.Name {
	case "retention.ms":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "segment.ms":
		return []string{"log.roll.ms", "log.roll.hours"}
	}
	return []string{d.BrokerProp}
}

// topicDefaultSynonym is the broker property that holds Kafka's built-in
// default of a topic config, and that default in the property's unit.
func topicDefaultSynonym(d TopicConfigDef) (name, value string) {
	switch d.Name {
	case "retention.ms":
		return "log.retention.hours", "168"
	case "segment.ms":
		return "log.roll.hours", "168"
	}
	return d.BrokerProp, d.Default
}

// explicitBrokerProp returns a broker property that server.properties set.
// Settings.Props merges the broker defaults (Configs.BrokerDefault) in, so
// a property whose value is our built-in default counts as not set.
func explicitBrokerProp(c Configs, props map[string]string, k string) (string, bool) {
	v, ok := props[k]
	if !ok {
		return "", false
	}
	if d, isDefault := c.BrokerDefault(k); isDefault && d == v {
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
// order of precedence: the topic override, this broker's and the
// cluster-wide dynamic broker config, broker properties set in
// server.properties, Kafka's built-in default. The first entry is the
// effective one.
func topicConfigSynonyms(c Configs, d TopicConfigDef, props, overrides map[string]string, dyn brokerDynamic) []configSynonym {
	var out []configSynonym
	if v, ok := overrides[d.Name]; ok {
		out = append(out, configSynonym{d.Name, v, kmsg.ConfigSourceDynamicTopicConfig})
	}
	if v, ok := dyn.node[d.BrokerProp]; ok {
		out = append(out, configSynonym{d.BrokerProp, v, kmsg.ConfigSourceDynamicBrokerConfig})
	}
	if v, ok := dyn.cluster[d.BrokerProp]; ok {
		out = append(out, configSynonym{d.BrokerProp, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig})
	}
	for _, k := range topicBrokerSynonyms(d) {
		if v, ok := explicitBrokerProp(c, props, k); ok {
			out = append(out, configSynonym{k, v, kmsg.ConfigSourceStaticBrokerConfig})
		}
	}
	n, v := topicDefaultSynonym(d)
	return append(out, configSynonym{n, v, kmsg.ConfigSourceDefaultConfig})
}

// DescribeTopicConfigs builds a topic's DescribeConfigs entries from the
// registry c. defaults are the broker-level topic defaults
// (Settings.TopicDefaults), props the broker properties (Settings.Props),
// overrides the topic's own configs.
func DescribeTopicConfigs(c Configs, defaults, props, overrides map[string]string, names []string, withSynonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	return describeTopicConfigs(c, defaults, props, overrides, brokerDynamic{}, names, withSynonyms)
}

// brokerDynamic are the dynamic broker configs a topic's defaults come
// from: this node's (broker resource named with its id) and the cluster's
// (resource "").
type brokerDynamic struct{ node, cluster map[string]string }

func describeTopicConfigs(c Configs, defaults, props, overrides map[string]string, dyn brokerDynamic, names []string, withSynonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range c.TopicConfigNames() {
		if !wantConfig(names, name) {
			continue
		}
		d, _ := c.TopicConfig(name)
		syns := topicConfigSynonyms(c, d, props, overrides, dyn)
		value, ok := overrides[name]
		if !ok {
			value, ok = defaults[name]
			if !ok {
				value = d.Default
			}
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name = name
		e.Value = &value
		e.Source = syns[0].source
		e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
		e.ConfigType = d.Type
		if withSynonyms {
			for _, s := range syns {
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				sy.Name, sy.Source = s.name, s.source
				sy.Value = &s.value
				e.ConfigSynonyms = append(e.ConfigSynonyms, sy)
			}
		}
		out = append(out, e)
	}
	return out
}

// SensitiveBrokerProp reports properties whose values must not be shown
// (Kafka's PASSWORD type, and JAAS configs that embed credentials).
func SensitiveBrokerProp(k string) bool {
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.HasSuffix(k, "jaas.config")
}

// DescribeBrokerConfigs builds a broker's DescribeConfigs entries (with the
// registry c) from its
// static properties (nil when describing the cluster-wide defaults),
// cluster-wide dynamic defaults and per-broker dynamic configs, the
// effective source first as in Kafka: DYNAMIC_BROKER_CONFIG (2),
// DYNAMIC_DEFAULT_BROKER_CONFIG (3), STATIC_BROKER_CONFIG (4),
// DEFAULT_CONFIG (5).
func DescribeBrokerConfigs(c Configs, props, dynDefault, dynBroker map[string]string, names []string, withSynonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
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
			if v, ok := explicitBrokerProp(c, props, k); ok {
				syns = append(syns, configSynonym{k, v, kmsg.ConfigSourceStaticBrokerConfig})
			}
			if v, ok := c.BrokerDefault(k); ok {
				syns = append(syns, configSynonym{k, v, kmsg.ConfigSourceDefaultConfig})
			} else if d, ok := DynamicBrokerProp(c, k); ok {
				syns = append(syns, configSynonym{k, d.Default, kmsg.ConfigSourceDefaultConfig})
			}
		}
		if len(syns) == 0 {
			// Only in props, equal to its default, and not one of ours:
			// cannot happen (explicitBrokerProp only hides our defaults).
			continue
		}
		sensitive := SensitiveBrokerProp(k)
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name = k
		if !sensitive {
			v := syns[0].value
			e.Value = &v
		}
		e.Source = syns[0].source
		e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
		_, dynamic := DynamicBrokerProp(c, k)
		e.ReadOnly = !dynamic && !dynamicCleanerProp(k) // the others answer INVALID_REQUEST to AlterConfigs
		e.IsSensitive = sensitive
		e.ConfigType = c.BrokerPropType(k)
		if withSynonyms {
			for _, s := range syns {
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				sy.Name, sy.Source = s.name, s.source
				if !sensitive {
					v := s.value
					sy.Value = &v
				}
				e.ConfigSynonyms = append(e.ConfigSynonyms, sy)
			}
		}
		out = append(out, e)
	}
	return out
}
