package appliance

// The registry of configuration keys lives in package config (config.Keys,
// config.UnknownKeys); appliance adds the GROUP configs' keys, whose
// definitions are the share groups' (share.ConfigDefs).

import (
	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/share"
)

// ConfigKey describes one broker property (config.Key).
type ConfigKey = config.Key

// UnknownConfigKey is a property that ringbroker neither reads nor
// deliberately ignores, with the closest known name (config.UnknownKey).
type UnknownConfigKey = config.UnknownKey

// ConfigKeys returns every broker property ringbroker knows, sorted by
// name: config.Keys with the defaults and bounds of the GROUP configs.
func ConfigKeys() []ConfigKey { return config.Keys(groupConfigKeys()...) }

// UnknownConfigKeys returns the keys of props that ConfigKeys and the key
// families do not name, sorted, each with the closest known name
// (config.UnknownKeys).
func UnknownConfigKeys(props map[string]string) []UnknownConfigKey {
	return config.UnknownKeys(props, groupConfigKeys()...)
}

// groupConfigKeys are the broker properties of the GROUP configs
// (share.ConfigDefs): each config's default, and its bounds.
func groupConfigKeys() []ConfigKey {
	var out []ConfigKey
	for _, d := range share.ConfigDefs() {
		out = append(out, ConfigKey{Name: d.Prop, Type: d.Kind, Default: d.Default, Doc: "broker default of the group config " + d.Name, DefaultOf: d.Name})
		if d.MinProp != "" {
			out = append(out, ConfigKey{Name: d.MinProp, Type: d.Kind, Default: d.MinDefault, Doc: "lower bound of the group config " + d.Name})
		}
		if d.MaxProp != "" {
			out = append(out, ConfigKey{Name: d.MaxProp, Type: d.Kind, Default: d.MaxDefault, Doc: "upper bound of the group config " + d.Name})
		}
	}
	return out
}
