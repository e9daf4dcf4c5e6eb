package share

// GROUP config resources (ConfigResourceType 32, KIP-848 and KIP-932
// "Group configuration"): per-group overrides of the broker's group
// settings, set with IncrementalAlterConfigs and read with DescribeConfigs.
// They live in the metadata log as config records of resource type 32 and
// in the image (Image.GroupConfigs); a group need not exist to carry
// configs (Kafka accepts configs for a group before its first member
// joins).
//
// Share groups read share.auto.offset.reset (latest, earliest,
// by_duration:<ISO-8601 duration>), share.isolation.level (read_uncommitted,
// read_committed), share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks, share.session.timeout.ms and
// share.heartbeat.interval.ms. consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms are accepted and stored for KIP-848 groups.
// Each falls back to the broker property group.<name> (group.share.* /
// group.consumer.*), then to Kafka's default. Values outside the broker's
// bounds answer INVALID_CONFIG (40), unknown names INVALID_CONFIG.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConfigDef is one GROUP config: its broker property, Kafka's default
// and, for numbers, the broker properties bounding it.
type ConfigDef struct {
	Name, Prop, Default string
	Kind                string // "int" or "string"
	MinProp, MinDefault string // lower bound's broker property and default ("" none)
	MaxProp, MaxDefault string
	check               func(string) error // for strings
}

// ConfigDefs lists the GROUP configs, sorted by name (a fresh slice).
func ConfigDefs() []ConfigDef {
	return []ConfigDef{
		{Name: "consumer.heartbeat.interval.ms", Prop: "group.consumer.heartbeat.interval.ms", Default: "5000", Kind: "int", MinProp: "group.consumer.min.heartbeat.interval.ms", MinDefault: "5000", MaxProp: "group.consumer.max.heartbeat.interval.ms", MaxDefault: "15000"},
		{Name: "consumer.session.timeout.ms", Prop: "group.consumer.session.timeout.ms", Default: "45000", Kind: "int", MinProp: "group.consumer.min.session.timeout.ms", MinDefault: "45000", MaxProp: "group.consumer.max.session.timeout.ms", MaxDefault: "60000"},
		{Name: "share.auto.offset.reset", Prop: "group.share.auto.offset.reset", Default: "latest", Kind: "string", check: checkShareAutoOffsetReset},
		{Name: "share.delivery.count.limit", Prop: "group.share.delivery.count.limit", Default: "5", Kind: "int", MinProp: "group.share.min.delivery.count.limit", MinDefault: "2", MaxProp: "group.share.max.delivery.count.limit", MaxDefault: "10"},
		{Name: "share.heartbeat.interval.ms", Prop: "group.share.heartbeat.interval.ms", Default: "5000", Kind: "int", MinProp: "group.share.min.heartbeat.interval.ms", MinDefault: "5000", MaxProp: "group.share.max.heartbeat.interval.ms", MaxDefault: "15000"},
		{Name: "share.isolation.level", Prop: "group.share.isolation.level", Default: "read_uncommitted", Kind: "string", check: func(v string) error {
			if v != "read_uncommitted" && v != "read_committed" {
				return fmt.Errorf("share.isolation.level must be read_uncommitted or read_committed, got %q", v)
			}
			return nil
		}},
		{Name: "share.partition.max.record.locks", Prop: "group.share.partition.max.record.locks", Default: "2000", Kind: "int", MinProp: "group.share.min.partition.max.record.locks", MinDefault: "100", MaxProp: "group.share.max.partition.max.record.locks", MaxDefault: "10000"},
		{Name: "share.record.lock.duration.ms", Prop: "group.share.record.lock.duration.ms", Default: "30000", Kind: "int", MinProp: "group.share.min.record.lock.duration.ms", MinDefault: "15000", MaxProp: "group.share.max.record.lock.duration.ms", MaxDefault: "60000"},
		{Name: "share.session.timeout.ms", Prop: "group.share.session.timeout.ms", Default: "45000", Kind: "int", MinProp: "group.share.min.session.timeout.ms", MinDefault: "45000", MaxProp: "group.share.max.session.timeout.ms", MaxDefault: "60000"},
	}
}

func configDefFor(name string) (ConfigDef, bool) {
	for _, d := range ConfigDefs() {
		if d.Name == name {
			return d, true
		}
	}
	return ConfigDef{}, false
}

// isoDuration is the subset of ISO-8601 durations Java's Duration.parse
// takes: PnDTnHnMn.nS.
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseISODuration parses PnDTnHnMn.nS (no sign: negative durations are refused).
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(strings.ToUpper(s))
	if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, fmt.Errorf("cannot parse duration %q: want ISO-8601 PnDTnHnMn.nS", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cannot parse duration %q: %w", s, err)
			}
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return 0, fmt.Errorf("cannot parse duration %q: %w", s, err)
		}
		d += time.Duration(f * float64(time.Second))
	}
	return d, nil
}

func checkShareAutoOffsetReset(v string) error {
	switch {
	case v == "latest", v == "earliest":
		return nil
	case strings.HasPrefix(v, "by_duration:"):
		_, err := parseISODuration(strings.TrimPrefix(v, "by_duration:"))
		return err
	}
	return fmt.Errorf("share.auto.offset.reset must be latest, earliest or by_duration:<duration>, got %q", v)
}

// Config is the share and group configuration of the broker's properties:
// each GROUP config's broker default (group.<name>), the bounds of the
// numeric ones and group.share.max.size. ConfigFromProps reads it.
type Config struct {
	defaults map[string]string // by GROUP config name: the broker property, when set
	bounds   map[string]int64  // by bound property: its value
	maxSize  int               // group.share.max.size
}

// ConfigFromProps reads the share group configuration from the broker's
// properties. A value that does not parse or is out of its domain is
// reported in the error, and the Config then holds what the readers fall
// back to (Kafka's default for a bound or number), so a caller that only
// logs the error keeps serving as before.
func ConfigFromProps(props map[string]string) (Config, error) {
	c := Config{defaults: map[string]string{}, bounds: map[string]int64{}}
	var errs []error
	bound := func(prop, def string) int64 {
		v := strings.TrimSpace(props[prop])
		if v == "" {
			v = def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot parse %s=%q: %w", prop, v, err))
			n, _ = strconv.ParseInt(def, 10, 64)
		}
		return n
	}
	for _, d := range ConfigDefs() {
		if v := strings.TrimSpace(props[d.Prop]); v != "" {
			c.defaults[d.Name] = v
			if d.Kind == "string" {
				if err := d.check(v); err != nil {
					errs = append(errs, fmt.Errorf("cannot use %s=%q: %w", d.Prop, v, err))
				}
			} else if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				errs = append(errs, fmt.Errorf("cannot parse %s=%q: %w", d.Prop, v, err))
			}
		}
		if d.MinProp != "" {
			c.bounds[d.MinProp] = bound(d.MinProp, d.MinDefault)
		}
		if d.MaxProp != "" {
			c.bounds[d.MaxProp] = bound(d.MaxProp, d.MaxDefault)
		}
	}
	c.maxSize = int(bound("group.share.max.size", "200"))
	return c, errors.Join(errs...)
}

// Validate checks one GROUP config value against its kind and the
// broker's bounds (INVALID_CONFIG).
func (c Config) Validate(name, value string) error {
	d, ok := configDefFor(name)
	if !ok {
		return fmt.Errorf("%w: unknown group config %q", kerr.InvalidConfig, name)
	}
	if d.Kind == "string" {
		if err := d.check(value); err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
		return nil
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return fmt.Errorf("%w: %s must be an int, got %q", kerr.InvalidConfig, name, value)
	}
	if lo := c.bounds[d.MinProp]; n < lo {
		return fmt.Errorf("%w: %s must be >= %s (%d), got %d", kerr.InvalidConfig, name, d.MinProp, lo, n)
	}
	if hi := c.bounds[d.MaxProp]; n > hi {
		return fmt.Errorf("%w: %s must be <= %s (%d), got %d", kerr.InvalidConfig, name, d.MaxProp, hi, n)
	}
	return nil
}

// ConfigChange is one change of a GROUP config resource: Value nil deletes
// the key.
type ConfigChange struct {
	Key   string
	Value *string
}

// Changes checks IncrementalAlterConfigs operations (SET, DELETE) on the
// GROUP resource group and returns the changes to commit as one metadata
// batch. APPEND and SUBTRACT answer INVALID_CONFIG: no group config is a
// list.
func (c Config) Changes(group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]ConfigChange, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: group resources need a group id", kerr.InvalidRequest)
	}
	seen := map[string]bool{}
	var out []ConfigChange
	for _, op := range ops {
		if seen[op.Name] {
			return nil, fmt.Errorf("%w: config key %q appears more than once", kerr.InvalidRequest, op.Name)
		}
		seen[op.Name] = true
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return nil, fmt.Errorf("%w: null value not supported for: %s", kerr.InvalidRequest, op.Name)
			}
			if err := c.Validate(op.Name, *op.Value); err != nil {
				return nil, err
			}
			v := *op.Value
			out = append(out, ConfigChange{Key: op.Name, Value: &v})
		case kmsg.IncrementalAlterConfigOpDelete:
			if _, ok := configDefFor(op.Name); !ok {
				return nil, fmt.Errorf("%w: unknown group config %q", kerr.InvalidConfig, op.Name)
			}
			out = append(out, ConfigChange{Key: op.Name})
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			name := "SUBTRACT"
			if op.Op == kmsg.IncrementalAlterConfigOpAppend {
				name = "APPEND"
			}
			return nil, fmt.Errorf("%w: cannot %s to key %s because its type is not LIST", kerr.InvalidConfig, name, op.Name)
		default:
			return nil, fmt.Errorf("%w: unknown operation %d for config %q", kerr.InvalidRequest, op.Op, op.Name)
		}
	}
	return out, nil
}

// Value is name's effective value for a group whose GROUP configs are
// group: the group's config, else the broker property, else Kafka's
// default.
func (c Config) Value(group map[string]string, name string) (string, kmsg.ConfigSource) {
	if v, ok := group[name]; ok {
		return v, kmsg.ConfigSourceGroupConfig
	}
	if v, ok := c.defaults[name]; ok {
		return v, kmsg.ConfigSourceStaticBrokerConfig
	}
	d, _ := configDefFor(name)
	return d.Default, kmsg.ConfigSourceDefaultConfig
}

// intValue is an int config's effective value (Kafka's default when it
// does not parse).
func (c Config) intValue(group map[string]string, name string) int64 {
	v, _ := c.Value(group, name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d, _ := configDefFor(name)
		n, _ = strconv.ParseInt(d.Default, 10, 64)
	}
	return n
}

// Describe lists a GROUP resource's configs (all, or those in names),
// sorted by name; group is the resource's GROUP configs.
func (c Config) Describe(group map[string]string, names []string, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	defs := ConfigDefs()
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range defs {
		if len(names) > 0 && !slices.Contains(names, d.Name) {
			continue
		}
		v, src := c.Value(group, d.Name)
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.Value, rc.Source = d.Name, kmsg.StringPtr(v), src
		rc.IsDefault = src == kmsg.ConfigSourceDefaultConfig
		rc.ConfigType = kmsg.ConfigTypeString
		if d.Kind == "int" {
			rc.ConfigType = kmsg.ConfigTypeInt
		}
		if synonyms {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = d.Name, kmsg.StringPtr(v), src
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, s)
		}
		out = append(out, rc)
	}
	return out
}

// shareGroupSettings is what the share group code reads from the configs.
type shareGroupSettings struct {
	part              sharePartConfig
	autoOffsetReset   string
	readCommitted     bool
	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
	maxSize           int // group.share.max.size: members per share group (0: no limit)
}

// settings reads a share group's settings from its GROUP configs.
func (c Config) settings(group map[string]string) shareGroupSettings {
	reset, _ := c.Value(group, "share.auto.offset.reset")
	iso, _ := c.Value(group, "share.isolation.level")
	return shareGroupSettings{
		part: sharePartConfig{
			lockMs:        c.intValue(group, "share.record.lock.duration.ms"),
			deliveryLimit: int16(c.intValue(group, "share.delivery.count.limit")),
			maxInFlight:   int(c.intValue(group, "share.partition.max.record.locks")),
		},
		autoOffsetReset:   reset,
		readCommitted:     iso == "read_committed",
		sessionTimeout:    time.Duration(c.intValue(group, "share.session.timeout.ms")) * time.Millisecond,
		heartbeatInterval: time.Duration(c.intValue(group, "share.heartbeat.interval.ms")) * time.Millisecond,
		maxSize:           c.maxSize,
	}
}
