package share

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConfigFromProps(t *testing.T) {
	c, err := ConfigFromProps(nil)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	set := c.settings(nil)
	if set.part.lockMs != 30000 || set.part.deliveryLimit != 5 || set.part.maxInFlight != 2000 || set.maxSize != 200 ||
		set.sessionTimeout != 45*time.Second || set.heartbeatInterval != 5*time.Second || set.autoOffsetReset != "latest" || set.readCommitted {
		t.Fatalf("default settings: %+v", set)
	}
	c, err = ConfigFromProps(map[string]string{
		"group.share.record.lock.duration.ms": " 20000 ", "group.share.max.size": "3",
		"group.share.isolation.level": "read_committed", "group.share.max.record.lock.duration.ms": "70000",
	})
	if err != nil {
		t.Fatal(err)
	}
	v, src := c.Value(nil, "share.record.lock.duration.ms")
	if v != "20000" || src != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("broker default: %q %v", v, src)
	}
	if v, src := c.Value(map[string]string{"share.record.lock.duration.ms": "16000"}, "share.record.lock.duration.ms"); v != "16000" || src != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("group config: %q %v", v, src)
	}
	if set := c.settings(nil); set.part.lockMs != 20000 || set.maxSize != 3 || !set.readCommitted {
		t.Fatalf("settings: %+v", set)
	}
	if err := c.Validate("share.record.lock.duration.ms", "65000"); err != nil {
		t.Fatalf("within the raised bound: %v", err)
	}
	for name, value := range map[string]string{
		"share.record.lock.duration.ms": "80000", "share.delivery.count.limit": "1", "share.isolation.level": "serializable",
		"share.auto.offset.reset": "by_duration:PX", "no.such.config": "1", "share.session.timeout.ms": "x",
	} {
		if err := c.Validate(name, value); err == nil || !strings.Contains(err.Error(), kerr.InvalidConfig.Message) {
			t.Errorf("Validate(%s, %s) = %v, want INVALID_CONFIG", name, value, err)
		}
	}
	// Invalid properties are reported, and the readers fall back to
	// Kafka's defaults.
	c, err = ConfigFromProps(map[string]string{"group.share.delivery.count.limit": "many", "group.share.min.delivery.count.limit": "x", "group.share.isolation.level": "dirty"})
	if err == nil || !strings.Contains(err.Error(), "group.share.delivery.count.limit") || !strings.Contains(err.Error(), "group.share.min.delivery.count.limit") || !strings.Contains(err.Error(), "group.share.isolation.level") {
		t.Fatalf("invalid properties: %v", err)
	}
	if set := c.settings(nil); set.part.deliveryLimit != 5 {
		t.Fatalf("fallback delivery limit %d", set.part.deliveryLimit)
	}
	if err := c.Validate("share.delivery.count.limit", "2"); err != nil {
		t.Fatalf("default lower bound: %v", err)
	}
}

func TestConfigChanges(t *testing.T) {
	c, _ := ConfigFromProps(nil)
	op := func(name string, o kmsg.IncrementalAlterConfigOp, v *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: v}
	}
	got, err := c.Changes("g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		op("share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")),
		op("share.isolation.level", kmsg.IncrementalAlterConfigOpDelete, nil),
	})
	if err != nil || len(got) != 2 || *got[0].Value != "earliest" || got[1].Value != nil {
		t.Fatalf("changes %+v, %v", got, err)
	}
	for _, tc := range []struct {
		group string
		ops   []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want  *kerr.Error
	}{
		{"", nil, kerr.InvalidRequest},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, nil)}, kerr.InvalidRequest},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("a.b", kmsg.IncrementalAlterConfigOpDelete, nil)}, kerr.InvalidConfig},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op("share.auto.offset.reset", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("x"))}, kerr.InvalidConfig},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			op("share.auto.offset.reset", kmsg.IncrementalAlterConfigOpDelete, nil), op("share.auto.offset.reset", kmsg.IncrementalAlterConfigOpDelete, nil)}, kerr.InvalidRequest},
	} {
		if _, err := c.Changes(tc.group, tc.ops); err == nil || !strings.Contains(err.Error(), tc.want.Message) {
			t.Errorf("Changes(%q, %+v) = %v, want %v", tc.group, tc.ops, err, tc.want)
		}
	}
	d := c.Describe(map[string]string{"share.delivery.count.limit": "3"}, []string{"share.delivery.count.limit", "share.isolation.level"}, true)
	if len(d) != 2 || *d[0].Value != "3" || d[0].Source != kmsg.ConfigSourceGroupConfig || d[0].ConfigType != kmsg.ConfigTypeInt ||
		*d[1].Value != "read_uncommitted" || !d[1].IsDefault || d[1].ConfigType != kmsg.ConfigTypeString || len(d[1].ConfigSynonyms) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	if all := c.Describe(nil, nil, false); len(all) != len(ConfigDefs()) {
		t.Fatalf("describe all: %d configs", len(all))
	}
}
