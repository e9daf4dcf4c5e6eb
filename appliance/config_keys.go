package appliance

// The registry of configuration keys lives in package config (config.Keys,
// config.UnknownKeys); appliance adds the GROUP configs' keys, whose
// definitions (groupConfigDefs) are still the share groups' here.

import "github.com/ringbroker/ringbroker/appliance/config"

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
// (groupConfigDefs): each config's default, and its bounds.
func groupConfigKeys() []ConfigKey {
	var out []ConfigKey
	for _, d := range groupConfigDefs {
		out = append(out, ConfigKey{Name: d.prop, Type: d.kind, Default: d.def, Doc: "broker default of the group config " + d.name, DefaultOf: d.name})
		if d.minProp != "" {
			out = append(out, ConfigKey{Name: d.minProp, Type: d.kind, Default: d.minDef, Doc: "lower bound of the group config " + d.name})
		}
		if d.maxProp != "" {
			out = append(out, ConfigKey{Name: d.maxProp, Type: d.kind, Default: d.maxDef, Doc: "upper bound of the group config " + d.name})
		}
	}
	return out
}
