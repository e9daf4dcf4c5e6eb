package appliance

// The ConfigTypes DescribeConfigs reports (appliance/metadata's handlers
// ask them through metadata.Configs, configRegistry below), and the
// config_names filter the group configs' DescribeConfigs shares.

import (
	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configKindType is config.KindType; brokerPropTypes config.BrokerPropTypes.
var configKindType, brokerPropTypes = config.KindType, config.BrokerPropTypes

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
