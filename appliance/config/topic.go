package config

// Topic configs: Kafka's names, the broker properties that set their
// defaults, the defaults, validation, and the typed form a partition's log
// is opened with.

import (
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
)

// TopicDef describes one topic-level config: its Kafka name, the broker
// property that sets its default, that default and its ConfigDef type.
type TopicDef struct {
	// Name is the topic config name (retention.ms).
	Name string
	// BrokerProp is the broker property that sets its default
	// (log.retention.ms).
	BrokerProp string
	// Default is Kafka's default, as a property value.
	Default string
	// Type is Kafka's ConfigDef type: long, int, string, boolean, double,
	// list or class.
	Type     string
	validate func(string) error
}

// Validate checks a value of the config; the error says why the value is
// refused (for INVALID_CONFIG messages).
func (d TopicDef) Validate(v string) error { return d.validate(v) }

func validLong(min int64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", s)
		}
		if v < min {
			return fmt.Errorf("value %d is below the minimum %d", v, min)
		}
		return nil
	}
}

func validOneOf(vals ...string) func(string) error {
	return func(s string) error {
		for _, v := range strings.Split(s, ",") {
			ok := false
			for _, w := range vals {
				if strings.TrimSpace(v) == w {
					ok = true
				}
			}
			if !ok {
				return fmt.Errorf("%q is not one of %v", s, vals)
			}
		}
		return nil
	}
}

func validRange(min, max int64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", s)
		}
		if v < min || v > max {
			return fmt.Errorf("value %d is not in [%d,...,%d]", v, min, max)
		}
		return nil
	}
}

// validGzipLevel accepts Kafka's gzip levels: 1..9, or -1 for the
// codec's default (KIP-390).
func validGzipLevel(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	if v != nvme.GzipLevelDefault && (v < nvme.GzipLevelMin || v > nvme.GzipLevelMax) {
		return fmt.Errorf("value %d is not in [%d,...,%d] or %d", v, nvme.GzipLevelMin, nvme.GzipLevelMax, nvme.GzipLevelDefault)
	}
	return nil
}

func validDouble(s string) error {
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	return nil
}

func validBool(s string) error {
	if s != "true" && s != "false" {
		return fmt.Errorf("%q is not true or false", s)
	}
	return nil
}

// topicDefs are the topic configs we accept, with Kafka's defaults.
var topicDefs = []TopicDef{
	{"cleanup.policy", "log.cleanup.policy", "delete", "list", validOneOf("delete", "compact")},
	{"compression.type", "compression.type", "producer", "string", validOneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")},
	{"compression.gzip.level", "compression.gzip.level", "-1", "int", validGzipLevel},
	{"compression.lz4.level", "compression.lz4.level", "9", "int", validRange(nvme.LZ4LevelMin, nvme.LZ4LevelMax)},
	{"compression.zstd.level", "compression.zstd.level", "3", "int", validRange(nvme.ZstdLevelMin, nvme.ZstdLevelMax)},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms", "86400000", "long", validLong(0)},
	{"file.delete.delay.ms", "log.segment.delete.delay.ms", "60000", "long", validLong(0)},
	{"flush.messages", "log.flush.interval.messages", "9223372036854775807", "long", validLong(1)},
	{"flush.ms", "log.flush.interval.ms", "9223372036854775807", "long", validLong(0)},
	{"index.interval.bytes", "log.index.interval.bytes", "4096", "int", validLong(0)},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "9223372036854775807", "long", validLong(1)},
	{"max.message.bytes", "message.max.bytes", "1048588", "int", validLong(0)},
	{"message.timestamp.type", "log.message.timestamp.type", "CreateTime", "string", validOneOf("CreateTime", "LogAppendTime")},
	{"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", "9223372036854775807", "long", validLong(0)},
	{"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", "3600000", "long", validLong(0)},
	{"message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms", "9223372036854775807", "long", validLong(0)},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", "0.5", "double", validDouble},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", "0", "long", validLong(0)},
	{"min.insync.replicas", "min.insync.replicas", "1", "int", validLong(1)},
	{"preallocate", "log.preallocate", "false", "boolean", validBool},
	{"retention.bytes", "log.retention.bytes", "-1", "long", validLong(-1)},
	{"retention.ms", "log.retention.ms", "604800000", "long", validLong(-1)},
	{"segment.bytes", "log.segment.bytes", "1073741824", "int", validLong(14)},
	{"segment.index.bytes", "log.index.size.max.bytes", "10485760", "int", validLong(4)},
	{"segment.jitter.ms", "log.roll.jitter.ms", "0", "long", validLong(0)},
	{"segment.ms", "log.roll.ms", "604800000", "long", validLong(1)},
	{"unclean.leader.election.enable", "unclean.leader.election.enable", "false", "boolean", validBool},
	{"message.downconversion.enable", "log.message.downconversion.enable", "true", "boolean", validBool},
	{"local.retention.ms", "log.local.retention.ms", "-2", "long", validLong(-2)},
	{"local.retention.bytes", "log.local.retention.bytes", "-2", "long", validLong(-2)},
	{"remote.storage.enable", "remote.storage.enable", "false", "boolean", validBool},
}

// TopicDefs returns the topic configs ringbroker accepts, in a fixed
// (unsorted) order, as a copy.
func TopicDefs() []TopicDef { return append([]TopicDef(nil), topicDefs...) }

// TopicDefFor returns the definition of the topic config name.
func TopicDefFor(name string) (TopicDef, bool) {
	for _, d := range topicDefs {
		if d.Name == name {
			return d, true
		}
	}
	return TopicDef{}, false
}

// TopicNames lists the topic config names in sorted order.
func TopicNames() []string {
	out := make([]string, 0, len(topicDefs))
	for _, d := range topicDefs {
		out = append(out, d.Name)
	}
	sort.Strings(out)
	return out
}

// ValidateTopic checks one topic config name and value. It returns an
// error suitable for INVALID_CONFIG (40) messages.
func ValidateTopic(name, value string) error {
	d, ok := TopicDefFor(name)
	if !ok {
		return fmt.Errorf("unknown topic config %q", name)
	}
	return d.validate(value)
}

// TopicDefaults returns the broker-level default of every topic config,
// keyed by the topic config name: the broker property (BrokerProp) when
// props sets it, else Kafka's default; retention.ms also from
// log.retention.minutes or log.retention.hours, segment.ms from
// log.roll.hours, when the ms property is unset. A value that the config's
// validation refuses is an error naming the topic config and the broker
// property it came from.
func TopicDefaults(props map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(topicDefs))
	from := map[string]string{} // topic config -> the property of its value, where not BrokerProp
	for _, d := range topicDefs {
		v := d.Default
		if pv, ok := props[d.BrokerProp]; ok {
			v = pv
		}
		out[d.Name] = v
	}
	if _, ok := props["log.retention.ms"]; !ok {
		if v, ok := props["log.retention.minutes"]; ok {
			out["retention.ms"], from["retention.ms"] = mulString(v, 60_000), "log.retention.minutes"
		} else if v, ok := props["log.retention.hours"]; ok {
			out["retention.ms"], from["retention.ms"] = mulString(v, 3_600_000), "log.retention.hours"
		}
	}
	if _, ok := props["log.roll.ms"]; !ok {
		if v, ok := props["log.roll.hours"]; ok {
			out["segment.ms"], from["segment.ms"] = mulString(v, 3_600_000), "log.roll.hours"
		}
	}
	for _, d := range topicDefs {
		if e := d.validate(out[d.Name]); e != nil {
			prop := d.BrokerProp
			if p, ok := from[d.Name]; ok {
				prop = p
			}
			return nil, fmt.Errorf("invalid default for %s (from %s): %w", d.Name, prop, e)
		}
	}
	return out, nil
}

// mulString multiplies an integer property by m (hours or minutes to ms);
// a negative value is -1 (unlimited), a value that is not an integer is
// returned as it is, for validation to refuse.
func mulString(v string, m int64) string {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return v
	}
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*m, 10)
}

// Topic is a topic's effective configuration, parsed: the configs the log,
// produce and the cleaner act on, in Kafka's units.
type Topic struct {
	SegmentBytes       int64 // segment.bytes
	SegmentMs          int64 // segment.ms
	RetentionMs        int64 // retention.ms, -1 unlimited
	RetentionBytes     int64 // retention.bytes, -1 unlimited
	IndexIntervalBytes int32 // index.interval.bytes
	SegmentIndexBytes  int32 // segment.index.bytes
	MaxMessageBytes    int32 // max.message.bytes
	LogAppendTime      bool  // message.timestamp.type=LogAppendTime
	Compact            bool  // cleanup.policy holds "compact"
	DeletePolicy       bool  // cleanup.policy holds "delete": retention applies
	FileDeleteDelayMs  int64 // file.delete.delay.ms
	FlushMessages      int64 // flush.messages
	FlushMs            int64 // flush.ms
	MaxCompactionLagMs int64 // max.compaction.lag.ms: a compacted log rolls at least this often
	// Compression is the codec compression.type recompresses produced
	// batches to (nvme.Compression*), or -1 for "producer": batches are
	// kept as sent.
	Compression int
	// CompressionLevels are compression.gzip.level, compression.lz4.level
	// and compression.zstd.level (KIP-390).
	CompressionLevels nvme.Levels
	// TimestampBeforeMaxMs and TimestampAfterMaxMs bound a CreateTime
	// record's timestamp to [now-before, now+after] (KIP-937:
	// message.timestamp.before.max.ms, message.timestamp.after.max.ms;
	// each at its default takes the deprecated
	// message.timestamp.difference.max.ms when that is set).
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
}

// CompressionCodec maps a compression.type value to its codec
// (nvme.Compression*): -1 for "producer" (and anything unknown).
func CompressionCodec(v string) int {
	switch v {
	case "uncompressed":
		return nvme.CompressionNone
	case "gzip":
		return nvme.CompressionGzip
	case "snappy":
		return nvme.CompressionSnappy
	case "lz4":
		return nvme.CompressionLZ4
	case "zstd":
		return nvme.CompressionZstd
	}
	return -1
}

// Kafka's defaults of the timestamp bounds (Kafka 4: a record more than
// an hour in the future is refused).
const (
	defaultTimestampBeforeMaxMs = math.MaxInt64
	defaultTimestampAfterMaxMs  = 3_600_000
)

// ParseTopic parses a topic's configs: overrides (the topic's own configs)
// over defaults (the broker-level defaults, TopicDefaults). A number that
// does not parse in overrides falls back to its default; overrides are
// validated when they are set (ValidateTopic), so that only happens to
// values stored before a validation existed.
func ParseTopic(overrides, defaults map[string]string) Topic {
	get := func(k string) string {
		if v, ok := overrides[k]; ok {
			return v
		}
		return defaults[k]
	}
	i64 := func(k string) int64 {
		v, err := strconv.ParseInt(get(k), 10, 64)
		if err != nil {
			v, _ = strconv.ParseInt(defaults[k], 10, 64)
		}
		return v
	}
	policy := get("cleanup.policy")
	return Topic{
		SegmentBytes:       i64("segment.bytes"),
		SegmentMs:          i64("segment.ms"),
		RetentionMs:        i64("retention.ms"),
		RetentionBytes:     i64("retention.bytes"),
		IndexIntervalBytes: int32(i64("index.interval.bytes")),
		SegmentIndexBytes:  int32(i64("segment.index.bytes")),
		MaxMessageBytes:    int32(i64("max.message.bytes")),
		LogAppendTime:      get("message.timestamp.type") == "LogAppendTime",
		Compact:            strings.Contains(policy, "compact"),
		DeletePolicy:       strings.Contains(policy, "delete"),
		FileDeleteDelayMs:  i64("file.delete.delay.ms"),
		FlushMessages:      i64("flush.messages"),
		FlushMs:            i64("flush.ms"),
		MaxCompactionLagMs: i64("max.compaction.lag.ms"),
		Compression:        CompressionCodec(get("compression.type")),
		CompressionLevels: nvme.Levels{
			Gzip: int(i64("compression.gzip.level")),
			LZ4:  int(i64("compression.lz4.level")),
			Zstd: int(i64("compression.zstd.level")),
		},
		TimestampBeforeMaxMs: timestampBound(i64("message.timestamp.before.max.ms"), defaultTimestampBeforeMaxMs, i64("message.timestamp.difference.max.ms")),
		TimestampAfterMaxMs:  timestampBound(i64("message.timestamp.after.max.ms"), defaultTimestampAfterMaxMs, i64("message.timestamp.difference.max.ms")),
	}
}

// timestampBound is a KIP-937 bound: v, or the deprecated difference
// bound when v is at its default and the difference bound is set (Kafka's
// LogConfig reads them so).
func timestampBound(v, def, diff int64) int64 {
	if v == def && diff != math.MaxInt64 {
		return diff
	}
	return v
}

// AppendOptions are the per-append options of a partition with these
// configs whose leader epoch is epoch: LogAppendTime, max.message.bytes,
// keys on compacted topics, and the CreateTime bounds of
// message.timestamp.before.max.ms and message.timestamp.after.max.ms.
func (c Topic) AppendOptions(epoch int32) nvme.AppendOptions {
	return nvme.AppendOptions{
		LogAppendTime:        c.LogAppendTime,
		MaxMessageBytes:      c.MaxMessageBytes,
		LeaderEpoch:          epoch,
		RequireKeys:          c.Compact,
		CheckTimestamps:      true,
		TimestampBeforeMaxMs: c.TimestampBeforeMaxMs,
		TimestampAfterMaxMs:  c.TimestampAfterMaxMs,
	}
}

// LogOptions maps the topic's configs onto the log's options. nvme.Options
// reads 0 as "unset, take the default", where Kafka's 0 means none at all:
// retention.ms=0 and retention.bytes=0 keep no closed segment (1 ms and 1
// byte do the same), file.delete.delay.ms=0 deletes at once (-1 to nvme),
// index.interval.bytes=0 indexes every batch (as 1 does).
func (c Topic) LogOptions(logger *slog.Logger, logStart int64) nvme.Options {
	ifZero := func(v, kafkaZero int64) int64 {
		if v == 0 {
			return kafkaZero
		}
		return v
	}
	return c.CleanupOptions(nvme.Options{
		SegmentBytes:       c.SegmentBytes,
		SegmentMs:          c.SegmentMs,
		IndexIntervalBytes: int32(ifZero(int64(c.IndexIntervalBytes), 1)),
		MaxIndexBytes:      c.SegmentIndexBytes,
		RetentionMs:        ifZero(c.RetentionMs, 1),
		RetentionBytes:     ifZero(c.RetentionBytes, 1),
		FileDeleteDelay:    time.Duration(ifZero(c.FileDeleteDelayMs, -1)) * time.Millisecond,
		LogStartOffset:     logStart,
		Logger:             logger,
	})
}

// CleanupOptions applies cleanup.policy to a partition's log options:
// without "delete" the log keeps its data whatever retention.ms and
// retention.bytes say (Kafka applies them only to delete and
// compact,delete topics), and a compacted log rolls at least every
// max.compaction.lag.ms so its data becomes cleanable (Kafka's
// LogConfig.maxSegmentMs).
func (c Topic) CleanupOptions(o nvme.Options) nvme.Options {
	if c.Compact && !c.DeletePolicy {
		o.RetentionMs, o.RetentionBytes = -1, -1
	}
	if c.Compact && c.MaxCompactionLagMs > 0 && (o.SegmentMs <= 0 || c.MaxCompactionLagMs < o.SegmentMs) {
		o.SegmentMs = c.MaxCompactionLagMs
	}
	return o
}
