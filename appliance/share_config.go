package appliance

// GROUP config resources (ConfigResourceType 32, KIP-848 and KIP-932
// "Group configuration"): per-group overrides of the broker's group
// settings, set with IncrementalAlterConfigs and read with DescribeConfigs.
// They live in the metadata log as ConfigRecords of resource type 32 and in
// Image.GroupConfigs; a group need not exist to carry configs (Kafka
// accepts configs for a group before its first member joins).
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
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConfigDef is one GROUP config: its broker property, Kafka's default
// and, for numbers, the broker properties bounding it.
type groupConfigDef struct {
	name, prop, def string
	kind            string // "int" or "string"
	minProp, minDef string // lower bound's broker property and default ("" none)
	maxProp, maxDef string
	check           func(string) error // for strings
}

var groupConfigDefs = []groupConfigDef{
	{name: "consumer.heartbeat.interval.ms", prop: "group.consumer.heartbeat.interval.ms", def: "5000", kind: "int", minProp: "group.consumer.min.heartbeat.interval.ms", minDef: "5000", maxProp: "group.consumer.max.heartbeat.interval.ms", maxDef: "15000"},
	{name: "consumer.session.timeout.ms", prop: "group.consumer.session.timeout.ms", def: "45000", kind: "int", minProp: "group.consumer.min.session.timeout.ms", minDef: "45000", maxProp: "group.consumer.max.session.timeout.ms", maxDef: "60000"},
	{name: "share.auto.offset.reset", prop: "group.share.auto.offset.reset", def: "latest", kind: "string", check: checkShareAutoOffsetReset},
	{name: "share.delivery.count.limit", prop: "group.share.delivery.count.limit", def: "5", kind: "int", minProp: "group.share.min.delivery.count.limit", minDef: "2", maxProp: "group.share.max.delivery.count.limit", maxDef: "10"},
	{name: "share.heartbeat.interval.ms", prop: "group.share.heartbeat.interval.ms", def: "5000", kind: "int", minProp: "group.share.min.heartbeat.interval.ms", minDef: "5000", maxProp: "group.share.max.heartbeat.interval.ms", maxDef: "15000"},
	{name: "share.isolation.level", prop: "group.share.isolation.level", def: "read_uncommitted", kind: "string", check: func(v string) error {
		if v != "read_uncommitted" && v != "read_committed" {
			return fmt.Errorf("share.isolation.level must be read_uncommitted or read_committed, got %q", v)
		}
		return nil
	}},
	{name: "share.partition.max.record.locks", prop: "group.share.partition.max.record.locks", def: "2000", kind: "int", minProp: "group.share.min.partition.max.record.locks", minDef: "100", maxProp: "group.share.max.partition.max.record.locks", maxDef: "10000"},
	{name: "share.record.lock.duration.ms", prop: "group.share.record.lock.duration.ms", def: "30000", kind: "int", minProp: "group.share.min.record.lock.duration.ms", minDef: "15000", maxProp: "group.share.max.record.lock.duration.ms", maxDef: "60000"},
	{name: "share.session.timeout.ms", prop: "group.share.session.timeout.ms", def: "45000", kind: "int", minProp: "group.share.min.session.timeout.ms", minDef: "45000", maxProp: "group.share.max.session.timeout.ms", maxDef: "60000"},
}

func groupConfigDefFor(name string) (groupConfigDef, bool) {
	for _, d := range groupConfigDefs {
		if d.name == name {
			return d, true
		}
	}
	return groupConfigDef{}, false
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

// groupConfigBound reads a bound's broker property.
func (b *Broker) groupConfigBound(prop, def string) int64 {
	n, err := strconv.ParseInt(b.propOr(prop, def), 10, 64)
	if err != nil {
		n, _ = strconv.ParseInt(def, 10, 64)
	}
	return n
}

// validateGroupConfig checks one GROUP config value against its kind and
// the broker's bounds.
func (b *Broker) validateGroupConfig(name, value string) error {
	d, ok := groupConfigDefFor(name)
	if !ok {
		return fmt.Errorf("%w: unknown group config %q", kerr.InvalidConfig, name)
	}
	if d.kind == "string" {
		if err := d.check(value); err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
		return nil
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return fmt.Errorf("%w: %s must be an int, got %q", kerr.InvalidConfig, name, value)
	}
	if lo := b.groupConfigBound(d.minProp, d.minDef); n < lo {
		return fmt.Errorf("%w: %s must be >= %s (%d), got %d", kerr.InvalidConfig, name, d.minProp, lo, n)
	}
	if hi := b.groupConfigBound(d.maxProp, d.maxDef); n > hi {
		return fmt.Errorf("%w: %s must be <= %s (%d), got %d", kerr.InvalidConfig, name, d.maxProp, hi, n)
	}
	return nil
}

// alterGroupConfigs applies IncrementalAlterConfigs operations (SET,
// DELETE) to the GROUP resource group, as one metadata batch. APPEND and
// SUBTRACT answer INVALID_CONFIG: no group config is a list.
func (b *Broker) alterGroupConfigs(group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	if group == "" {
		return fmt.Errorf("%w: group resources need a group id", kerr.InvalidRequest)
	}
	seen := map[string]bool{}
	var recs []MetadataRecord
	for _, c := range ops {
		if seen[c.Name] {
			return fmt.Errorf("%w: config key %q appears more than once", kerr.InvalidRequest, c.Name)
		}
		seen[c.Name] = true
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return fmt.Errorf("%w: null value not supported for: %s", kerr.InvalidRequest, c.Name)
			}
			if err := b.validateGroupConfig(c.Name, *c.Value); err != nil {
				return err
			}
			v := *c.Value
			recs = append(recs, MetadataRecord{Config: &ConfigRecord{ResourceType: 32, Name: group, Key: c.Name, Value: &v}})
		case kmsg.IncrementalAlterConfigOpDelete:
			if _, ok := groupConfigDefFor(c.Name); !ok {
				return fmt.Errorf("%w: unknown group config %q", kerr.InvalidConfig, c.Name)
			}
			recs = append(recs, MetadataRecord{Config: &ConfigRecord{ResourceType: 32, Name: group, Key: c.Name}})
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return fmt.Errorf("%w: cannot %s to key %s because its type is not LIST", kerr.InvalidConfig, metadata.ListOpName(c.Op), c.Name)
		default:
			return fmt.Errorf("%w: unknown operation %d for config %q", kerr.InvalidRequest, c.Op, c.Name)
		}
	}
	if validateOnly || len(recs) == 0 {
		return nil
	}
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	next, err := b.ctl.meta.Commit(b.currentImage(), recs)
	if err != nil {
		return commitErr(err)
	}
	b.ctl.image.Store(next)
	return nil
}

// groupConfigValue is name's effective value for group: the group's
// config, else the broker property, else Kafka's default.
func (b *Broker) groupConfigValue(im *Image, group, name string) (string, kmsg.ConfigSource) {
	if v, ok := im.GroupConfigs[group][name]; ok {
		return v, kmsg.ConfigSourceGroupConfig
	}
	d, _ := groupConfigDefFor(name)
	if v := strings.TrimSpace(b.cfg.Props[d.prop]); v != "" {
		return v, kmsg.ConfigSourceStaticBrokerConfig
	}
	return d.def, kmsg.ConfigSourceDefaultConfig
}

// groupConfigInt is an int group config's effective value.
func (b *Broker) groupConfigInt(im *Image, group, name string) int64 {
	v, _ := b.groupConfigValue(im, group, name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d, _ := groupConfigDefFor(name)
		n, _ = strconv.ParseInt(d.def, 10, 64)
	}
	return n
}

// describeGroupConfigs lists a GROUP resource's configs (all, or those in
// names), sorted by name.
func (b *Broker) describeGroupConfigs(im *Image, group string, names []string, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	defs := append([]groupConfigDef(nil), groupConfigDefs...)
	sort.Slice(defs, func(i, j int) bool { return defs[i].name < defs[j].name })
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range defs {
		if !wantConfig(names, d.name) {
			continue
		}
		v, src := b.groupConfigValue(im, group, d.name)
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = d.name, strPtr(v), src
		c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
		c.ConfigType = configKindType(d.kind)
		if synonyms {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = d.name, strPtr(v), src
			c.ConfigSynonyms = append(c.ConfigSynonyms, s)
		}
		out = append(out, c)
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

// shareSettings reads group's share settings from im.
func (b *Broker) shareSettings(im *Image, group string) shareGroupSettings {
	reset, _ := b.groupConfigValue(im, group, "share.auto.offset.reset")
	iso, _ := b.groupConfigValue(im, group, "share.isolation.level")
	return shareGroupSettings{
		part: sharePartConfig{
			lockMs:        b.groupConfigInt(im, group, "share.record.lock.duration.ms"),
			deliveryLimit: int16(b.groupConfigInt(im, group, "share.delivery.count.limit")),
			maxInFlight:   int(b.groupConfigInt(im, group, "share.partition.max.record.locks")),
		},
		autoOffsetReset:   reset,
		readCommitted:     iso == "read_committed",
		sessionTimeout:    time.Duration(b.groupConfigInt(im, group, "share.session.timeout.ms")) * time.Millisecond,
		heartbeatInterval: time.Duration(b.groupConfigInt(im, group, "share.heartbeat.interval.ms")) * time.Millisecond,
		maxSize:           int(b.groupConfigBound("group.share.max.size", "200")),
	}
}
