package config

import (
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
)

func TestCleanupOptions(t *testing.T) {
	c := Topic{Compact: true, RetentionMs: 1000, RetentionBytes: 10, MaxCompactionLagMs: 5000}
	o := c.LogOptions(nil, 0)
	if o.RetentionMs != -1 || o.RetentionBytes != -1 || o.SegmentMs != 5000 {
		t.Fatalf("compact: %+v", o)
	}
	c.DeletePolicy = true
	c.SegmentMs = 100
	if o := c.LogOptions(nil, 0); o.RetentionMs != 1000 || o.RetentionBytes != 10 || o.SegmentMs != 100 {
		t.Fatalf("compact,delete: %+v", o)
	}
}

func TestTopicDefaults(t *testing.T) {
	d, err := TopicDefaults(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range TopicDefs() {
		if d[def.Name] != def.Default {
			t.Errorf("%s default %q, want Kafka's %q", def.Name, d[def.Name], def.Default)
		}
	}
	for _, c := range []struct {
		props       map[string]string
		name, value string
	}{
		{map[string]string{"log.retention.hours": "24"}, "retention.ms", "86400000"},
		{map[string]string{"log.retention.minutes": "2", "log.retention.hours": "24"}, "retention.ms", "120000"},
		{map[string]string{"log.retention.ms": "5", "log.retention.minutes": "2"}, "retention.ms", "5"},
		{map[string]string{"log.retention.hours": "-3"}, "retention.ms", "-1"},
		{map[string]string{"log.roll.hours": "1"}, "segment.ms", "3600000"},
		{map[string]string{"log.roll.ms": "7", "log.roll.hours": "1"}, "segment.ms", "7"},
		{map[string]string{"message.max.bytes": "2000000"}, "max.message.bytes", "2000000"},
		{map[string]string{"log.cleanup.policy": "compact,delete"}, "cleanup.policy", "compact,delete"},
	} {
		d, err := TopicDefaults(c.props)
		if err != nil || d[c.name] != c.value {
			t.Errorf("%v: %s = %q (%v), want %q", c.props, c.name, d[c.name], err, c.value)
		}
	}
	for k, v := range map[string]string{"log.segment.bytes": "13", "log.index.interval.bytes": "x", "log.cleanup.policy": "shred",
		"log.retention.hours": "soon", "log.cleaner.min.cleanable.ratio": "half", "log.preallocate": "1"} {
		if _, err := TopicDefaults(map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: err = %v, want one naming %s", k, v, err, k)
		}
	}
}

func TestParseTopic(t *testing.T) {
	defaults, err := TopicDefaults(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ParseTopic(nil, defaults)
	want := Topic{SegmentBytes: 1 << 30, SegmentMs: 604800000, RetentionMs: 604800000, RetentionBytes: -1,
		IndexIntervalBytes: 4096, SegmentIndexBytes: 10 << 20, MaxMessageBytes: 1048588, DeletePolicy: true,
		FileDeleteDelayMs: 60000, FlushMessages: 1<<63 - 1, FlushMs: 1<<63 - 1, MaxCompactionLagMs: 1<<63 - 1,
		Compression: -1, CompressionLevels: nvme.Levels{Gzip: -1, LZ4: 9, Zstd: 3},
		TimestampBeforeMaxMs: 1<<63 - 1, TimestampAfterMaxMs: 3_600_000}
	if got != want {
		t.Errorf("defaults parse to\n%+v, want\n%+v", got, want)
	}
	got = ParseTopic(map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024", "message.timestamp.type": "LogAppendTime",
		"retention.ms": "not a number", "max.compaction.lag.ms": "5000"}, defaults)
	want.Compact, want.DeletePolicy, want.SegmentBytes, want.LogAppendTime, want.MaxCompactionLagMs = true, false, 1024, true, 5000
	if got != want {
		t.Errorf("overrides parse to\n%+v, want\n%+v (a bad number falls back to its default)", got, want)
	}
	got = ParseTopic(map[string]string{"compression.type": "zstd", "compression.zstd.level": "-5", "compression.gzip.level": "9",
		"message.timestamp.difference.max.ms": "1000", "message.timestamp.after.max.ms": "50"}, defaults)
	if got.Compression != nvme.CompressionZstd || got.CompressionLevels != (nvme.Levels{Gzip: 9, LZ4: 9, Zstd: -5}) ||
		got.TimestampBeforeMaxMs != 1000 || got.TimestampAfterMaxMs != 50 {
		t.Errorf("compression and timestamp overrides parse to %+v", got)
	}
	for v, want := range map[string]int{"producer": -1, "uncompressed": nvme.CompressionNone, "gzip": nvme.CompressionGzip,
		"snappy": nvme.CompressionSnappy, "lz4": nvme.CompressionLZ4, "zstd": nvme.CompressionZstd} {
		if got := CompressionCodec(v); got != want {
			t.Errorf("CompressionCodec(%q) = %d, want %d", v, got, want)
		}
	}
}

func TestValidateTopic(t *testing.T) {
	for _, c := range []struct {
		name, value string
		ok          bool
	}{
		{"retention.ms", "-1", true}, {"retention.ms", "-2", false}, {"segment.bytes", "14", true}, {"segment.bytes", "13", false},
		{"cleanup.policy", "compact, delete", true}, {"cleanup.policy", "shred", false}, {"min.cleanable.dirty.ratio", "0.1", true},
		{"preallocate", "TRUE", false}, {"local.retention.ms", "-2", true}, {"no.such.config", "1", false},
		{"compression.gzip.level", "-1", true}, {"compression.gzip.level", "0", false}, {"compression.gzip.level", "9", true},
		{"compression.gzip.level", "10", false}, {"compression.lz4.level", "0", false}, {"compression.lz4.level", "17", true},
		{"compression.lz4.level", "18", false}, {"compression.zstd.level", "-131072", true}, {"compression.zstd.level", "-131073", false},
		{"compression.zstd.level", "22", true}, {"compression.zstd.level", "23", false}, {"message.timestamp.after.max.ms", "-1", false},
		{"message.timestamp.before.max.ms", "0", true},
	} {
		if err := ValidateTopic(c.name, c.value); (err == nil) != c.ok {
			t.Errorf("ValidateTopic(%s, %q) = %v, want ok %v", c.name, c.value, err, c.ok)
		}
	}
	if names := TopicNames(); len(names) != len(TopicDefs()) || names[0] != "cleanup.policy" {
		t.Errorf("TopicNames = %v", names)
	}
}
