package appliance

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// ParseProperties reads a Java .properties file as Kafka's start scripts do:
// "key=value" or "key: value" lines, '#' and '!' comments, backslash line
// continuations. Later keys override earlier ones.
func ParseProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var cont strings.Builder
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if cont.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") {
			cont.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		cont.WriteString(line)
		full := cont.String()
		cont.Reset()
		i := strings.IndexAny(full, "=:")
		if i < 0 {
			// A key alone means an empty value.
			props[strings.TrimSpace(full)] = ""
			continue
		}
		k := strings.TrimSpace(full[:i])
		v := strings.TrimSpace(full[i+1:])
		if k == "" {
			return nil, fmt.Errorf("cannot parse properties line %d: empty key", lineNo)
		}
		props[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read properties: %w", err)
	}
	return props, nil
}

// Config is the broker configuration: Kafka's property names and defaults,
// plus ringbroker's own knobs (io.engine, log.io.mode, shards).
type Config struct {
	NodeID                   int32
	ClusterID                string
	ListenAddr               string // host:port of the first listener (Listeners[0].Addr)
	AdvertisedHost           string // Listeners[0].AdvertisedHost
	AdvertisedPort           int32  // Listeners[0].AdvertisedPort
	LogDir                   string // first entry of log.dirs
	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	DeleteTopicEnable        bool
	MessageMaxBytes          int32
	SocketRequestMaxBytes    int32
	FetchMaxBytes            int32 // fetch.max.bytes: the most record bytes one Fetch answer carries (fetch_wait.go)
	RetentionCheckIntervalMs int64
	Shards                   int
	IOEngine                 string // netpoll | uring | auto
	UringSpareProcs          bool   // io.uring.spare.procs: GOMAXPROCS + shards with the uring engine (engine.go)
	UringPinShards           bool   // io.uring.pin.shards: pin each ring shard's thread to its CPU (engine.go)
	UringDirectWriteBatch    bool   // io.uring.direct.write.batch: segment writes go through the shard's ring, appends answered when they complete (log.io.mode=direct; nvme/direct_ring.go)
	UringPlugPad             bool   // io.uring.plug.pad: pad two-write submissions so the kernel plugs them (ioring.Options.PlugPad)
	UringFixedBuffers        bool   // io.uring.fixed.buffers: register the block cache's buffers with the shard's ring (log.io.mode=direct; nvme BlockCache.UseFixedBuffers)
	UringDirectReadAsync     bool   // io.uring.direct.read.async: fetches read the cache blocks they miss through the shard's ring (log.io.mode=direct; fetch_wait.go)
	UringFetchReadMaxBytes   int32  // io.uring.fetch.read.max.bytes: log parts of answers up to this size are read, not spliced (engine.go)
	UringFetchSendfileMin    int32  // io.uring.fetch.sendfile.min.bytes: page-cached log parts of at least this size go by sendfile(2); 0 never (engine.go)
	UringSendMaxBytes        int32  // io.uring.send.max.bytes: bytes one send SQE carries at most, 0 (unbounded) or >= 4096 (engine.go)
	SaslServerMaxReceiveSize int32  // sasl.server.max.receive.size: largest frame before SASL authentication (Kafka's default 512 KiB)
	LogIOMode                string // buffered | direct
	LogIOCacheBytes          int64  // log.io.cache.bytes: per-shard block cache of direct mode (storage.go)
	LogIOCachePrefault       bool   // log.io.cache.prefault: allocate and touch each shard's cache buffers, and large request buffers, at start (storage.go)
	LogIOTailReads           bool   // log.io.tail.reads: fetches read the last batches of a partition on another shard from its published tail (nvme/tail.go, fetch_wait.go peekRun)
	LogIOPreallocChunk       int64  // log.io.preallocate.chunk.bytes: how far ahead of its data direct mode fallocates the active segment (storage.go)
	LogIOPreallocZero        bool   // log.io.preallocate.zero: direct mode writes zeros over the chunks it fallocates past a segment's first (nvme/prealloc.go)
	ConnectionsMaxIdleMs     int64
	// MaxConnections (max.connections) and MaxConnectionsPerIP
	// (max.connections.per.ip, with max.connections.per.ip.overrides by
	// address) cap the open client connections, Kafka's defaults
	// 2147483647 (no cap); a connection past a cap is closed as soon as it
	// is accepted (connlimit.go).
	MaxConnections               int32
	MaxConnectionsPerIP          int32
	MaxConnectionsPerIPOverrides map[string]int32
	MetricsListener              string // metrics.listener: host:port of /metrics, /healthz, /readyz; "" or "none" disables
	ProducerIDExpirationMs       int64  // producer.id.expiration.ms: idempotent producer state is forgotten after this long idle

	// AuthorizerClassName is authorizer.class.name: "" (no authorizer, the
	// ACL APIs answer SECURITY_DISABLED) or one of Kafka's standard
	// authorizers, which turn the built-in one on (authorizer.go).
	AuthorizerClassName string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: whether a
	// resource no ACL names is open to everyone (Kafka's default: false).
	AllowEveryoneIfNoACLFound bool
	// SuperUsers is super.users split at ';': principals ("User:admin")
	// allowed everything.
	SuperUsers []string

	// Listeners are listeners with advertised.listeners,
	// listener.security.protocol.map and the SASL settings (listeners.go),
	// in listeners order. Empty in a Config built by hand: Validate makes
	// one PLAINTEXT listener of ListenAddr and the advertised host and port.
	Listeners []Listener

	// TopicDefaults holds the broker-level defaults of every topic config,
	// keyed by the topic config name (segment.bytes, retention.ms, ...).
	TopicDefaults map[string]string
	// Props is every property as given, for DescribeConfigs on the broker.
	Props map[string]string
	// MetadataSnapshotBytes (metadata.log.max.record.bytes.between.snapshots,
	// Kafka's default 20 MiB) is how many bytes of metadata records are
	// appended between two snapshots of the metadata image (appliance/metadata/snapshot.go);
	// 0 in a Config built by hand means the default.
	MetadataSnapshotBytes int64

	// Strict is config.strict: an unknown property stops
	// ConfigFromProperties with ErrUnknownConfigKey instead of being left
	// in UnknownKeys for a warning.
	Strict bool
	// UnknownKeys are the properties that no ConfigKey names
	// (UnknownConfigKeys), each with the closest known name: the binary
	// logs one warning per key.
	UnknownKeys []UnknownConfigKey
}

// ErrUnknownConfigKey is wrapped by the error of ConfigFromProperties when
// config.strict=true and a property is unknown.
var ErrUnknownConfigKey = errors.New("unknown configuration key")

// topicConfigDef describes one topic-level config: its Kafka name, the
// broker property that sets its default, and that default.
type topicConfigDef struct {
	name       string
	brokerProp string
	def        string
	kind       string // long, int, string, boolean, double, list, class
	validate   func(string) error
}

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

func validAny(string) error { return nil }

// topicConfigDefs are the topic configs we accept, with Kafka's defaults.
var topicConfigDefs = []topicConfigDef{
	{"cleanup.policy", "log.cleanup.policy", "delete", "list", validOneOf("delete", "compact")},
	{"compression.type", "compression.type", "producer", "string", validOneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms", "86400000", "long", validLong(0)},
	{"file.delete.delay.ms", "log.segment.delete.delay.ms", "60000", "long", validLong(0)},
	{"flush.messages", "log.flush.interval.messages", "9223372036854775807", "long", validLong(1)},
	{"flush.ms", "log.flush.interval.ms", "9223372036854775807", "long", validLong(0)},
	{"index.interval.bytes", "log.index.interval.bytes", "4096", "int", validLong(0)},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "9223372036854775807", "long", validLong(1)},
	{"max.message.bytes", "message.max.bytes", "1048588", "int", validLong(0)},
	{"message.timestamp.type", "log.message.timestamp.type", "CreateTime", "string", validOneOf("CreateTime", "LogAppendTime")},
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

func topicConfigDefFor(name string) (topicConfigDef, bool) {
	for _, d := range topicConfigDefs {
		if d.name == name {
			return d, true
		}
	}
	return topicConfigDef{}, false
}

// ValidateTopicConfig checks one topic config name and value. It returns an
// error suitable for INVALID_CONFIG (40) messages.
func ValidateTopicConfig(name, value string) error {
	d, ok := topicConfigDefFor(name)
	if !ok {
		return fmt.Errorf("unknown topic config %q", name)
	}
	return d.validate(value)
}

// brokerDefaults are Kafka's defaults for the broker properties we read.
var brokerDefaults = map[string]string{
	"node.id":                           "1",
	"listeners":                         "PLAINTEXT://127.0.0.1:9092",
	"listener.security.protocol.map":    defaultSecurityProtocolMap,
	"sasl.enabled.mechanisms":           defaultSaslMechanisms,
	"sasl.server.max.receive.size":      "524288",
	"log.dirs":                          "./data",
	"num.partitions":                    "1",
	"default.replication.factor":        "1",
	"auto.create.topics.enable":         "true",
	"delete.topic.enable":               "true",
	"message.max.bytes":                 "1048588",
	"socket.request.max.bytes":          "104857600",
	"fetch.max.bytes":                   "57671680",
	"log.retention.check.interval.ms":   "300000",
	"connections.max.idle.ms":           "600000",
	"max.connections":                   "2147483647",
	"max.connections.per.ip":            "2147483647",
	"max.connections.per.ip.overrides":  "",
	"metrics.listener":                  "127.0.0.1:9644",
	"producer.id.expiration.ms":         "86400000",
	"authorizer.class.name":             "",
	"allow.everyone.if.no.acl.found":    "false",
	"super.users":                       "",
	"shards":                            "0",
	"io.engine":                         "netpoll",
	"io.uring.spare.procs":              "true",
	"io.uring.pin.shards":               "true",
	"io.uring.direct.write.batch":       "true",
	"io.uring.direct.read.async":        "true",
	"io.uring.plug.pad":                 "true",
	"io.uring.fixed.buffers":            "true",
	"io.uring.fetch.read.max.bytes":     "1048576",
	"io.uring.fetch.sendfile.min.bytes": "0",
	"io.uring.send.max.bytes":           "524288",
	"log.io.mode":                       "buffered",
	"log.io.cache.bytes":                "67108864",
	"log.io.cache.prefault":             "false",
	"log.io.tail.reads":                 "true",
	"log.io.preallocate.chunk.bytes":    "16777216",
	"log.io.preallocate.zero":           "true",
	"offsets.topic.num.partitions":      "50",
	"offsets.topic.replication.factor":  "1",

	// The log cleaner (cleaner.go) and the internal topics' segment sizes.
	"offsets.topic.segment.bytes":         "104857600",
	"transaction.state.log.segment.bytes": "104857600",
	"log.cleaner.enable":                  "true",
	"log.cleaner.threads":                 "1",
	"log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
	"log.cleaner.backoff.ms":              "15000",
	"log.cleaner.dedupe.buffer.size":      "134217728",

	// Metadata image snapshots (appliance/metadata/snapshot.go).
	"metadata.log.max.record.bytes.between.snapshots": "20971520",
}

// ConfigFromProperties builds a Config from properties, applying Kafka's
// defaults and the hour/minute variants of retention and roll settings.
func ConfigFromProperties(props map[string]string) (Config, error) {
	get := func(k string) string {
		if v, ok := props[k]; ok {
			return v
		}
		return brokerDefaults[k]
	}
	var c Config
	var err error
	perr := func(k string, e error) error { return fmt.Errorf("cannot parse %s=%q: %w", k, get(k), e) }
	i32 := func(k string) int32 {
		if err != nil {
			return 0
		}
		v, e := strconv.ParseInt(get(k), 10, 32)
		if e != nil {
			err = perr(k, e)
		}
		return int32(v)
	}
	i64 := func(k string) int64 {
		if err != nil {
			return 0
		}
		v, e := strconv.ParseInt(get(k), 10, 64)
		if e != nil {
			err = perr(k, e)
		}
		return v
	}
	boolean := func(k string) bool {
		if err != nil {
			return false
		}
		v, e := parseBoolProp(get(k))
		if e != nil {
			err = perr(k, e)
		}
		return v
	}
	c.NodeID = i32("node.id")
	if c.NodeID == 0 {
		if v, ok := props["broker.id"]; ok {
			if n, e := strconv.Atoi(v); e == nil {
				c.NodeID = int32(n)
			}
		}
	}
	c.NumPartitions = i32("num.partitions")
	c.DefaultReplicationFactor = int16(i32("default.replication.factor"))
	c.AutoCreateTopics = boolean("auto.create.topics.enable")
	c.DeleteTopicEnable = boolean("delete.topic.enable")
	c.MessageMaxBytes = i32("message.max.bytes")
	c.SocketRequestMaxBytes = i32("socket.request.max.bytes")
	c.FetchMaxBytes = i32("fetch.max.bytes")
	c.RetentionCheckIntervalMs = i64("log.retention.check.interval.ms")
	c.ConnectionsMaxIdleMs = i64("connections.max.idle.ms")
	c.MaxConnections = i32("max.connections")
	c.MaxConnectionsPerIP = i32("max.connections.per.ip")
	if err == nil {
		c.MaxConnectionsPerIPOverrides, err = parseConnOverrides(get("max.connections.per.ip.overrides"))
	}
	c.ProducerIDExpirationMs = i64("producer.id.expiration.ms")
	c.Shards = int(i32("shards"))
	c.IOEngine = get("io.engine")
	c.UringSpareProcs = boolean("io.uring.spare.procs")
	c.UringPinShards = boolean("io.uring.pin.shards")
	c.UringDirectWriteBatch = boolean("io.uring.direct.write.batch")
	c.UringDirectReadAsync = boolean("io.uring.direct.read.async")
	c.UringPlugPad = boolean("io.uring.plug.pad")
	c.UringFixedBuffers = boolean("io.uring.fixed.buffers")
	c.UringFetchReadMaxBytes = i32("io.uring.fetch.read.max.bytes")
	c.UringFetchSendfileMin = i32("io.uring.fetch.sendfile.min.bytes")
	c.UringSendMaxBytes = i32("io.uring.send.max.bytes")
	c.SaslServerMaxReceiveSize = i32("sasl.server.max.receive.size")
	c.LogIOMode = get("log.io.mode")
	c.LogIOCacheBytes = i64("log.io.cache.bytes")
	c.LogIOCachePrefault = boolean("log.io.cache.prefault")
	c.LogIOTailReads = boolean("log.io.tail.reads")
	c.LogIOPreallocChunk = i64("log.io.preallocate.chunk.bytes")
	c.LogIOPreallocZero = boolean("log.io.preallocate.zero")
	c.MetadataSnapshotBytes = i64("metadata.log.max.record.bytes.between.snapshots")
	c.MetricsListener = strings.TrimSpace(get("metrics.listener"))
	c.ClusterID = props["cluster.id"]
	c.AuthorizerClassName = strings.TrimSpace(get("authorizer.class.name"))
	c.AllowEveryoneIfNoACLFound = boolean("allow.everyone.if.no.acl.found")
	if err == nil {
		c.SuperUsers, err = parseSuperUsers(get("super.users"))
	}
	if v, ok := props["config.strict"]; ok && err == nil {
		// Not in brokerDefaults, so that DescribeConfigs lists it only when set.
		if c.Strict, err = parseBoolProp(v); err != nil {
			err = fmt.Errorf("cannot parse config.strict=%q: %w", v, err)
		}
	}
	if err != nil {
		return Config{}, err
	}
	c.UnknownKeys = UnknownConfigKeys(props)
	if c.Strict && len(c.UnknownKeys) > 0 {
		keys := make([]string, len(c.UnknownKeys))
		for i, u := range c.UnknownKeys {
			keys[i] = u.String()
		}
		return Config{}, fmt.Errorf("cannot start with config.strict=true: %w: %s", ErrUnknownConfigKey, strings.Join(keys, "; "))
	}
	dirs := get("log.dirs")
	if v, ok := props["log.dir"]; ok && props["log.dirs"] == "" {
		dirs = v
	}
	c.LogDir = strings.TrimSpace(strings.Split(dirs, ",")[0])

	if c.Listeners, err = parseListeners(props, get); err != nil { // listeners.go
		return Config{}, err
	}
	first := c.Listeners[0]
	c.ListenAddr, c.AdvertisedHost, c.AdvertisedPort = first.Addr, first.AdvertisedHost, first.AdvertisedPort

	// Topic defaults from broker properties, with Kafka's hours/minutes forms.
	c.TopicDefaults = map[string]string{}
	for _, d := range topicConfigDefs {
		v := d.def
		if pv, ok := props[d.brokerProp]; ok {
			v = pv
		}
		c.TopicDefaults[d.name] = v
	}
	if _, ok := props["log.retention.ms"]; !ok {
		if v, ok := props["log.retention.minutes"]; ok {
			c.TopicDefaults["retention.ms"] = mulString(v, 60_000)
		} else if v, ok := props["log.retention.hours"]; ok {
			c.TopicDefaults["retention.ms"] = mulString(v, 3_600_000)
		}
	}
	if _, ok := props["log.roll.ms"]; !ok {
		if v, ok := props["log.roll.hours"]; ok {
			c.TopicDefaults["segment.ms"] = mulString(v, 3_600_000)
		}
	}
	if _, ok := props["message.max.bytes"]; ok {
		c.TopicDefaults["max.message.bytes"] = props["message.max.bytes"]
	}
	for _, d := range topicConfigDefs {
		if e := d.validate(c.TopicDefaults[d.name]); e != nil {
			return Config{}, fmt.Errorf("invalid default for %s (from %s): %w", d.name, d.brokerProp, e)
		}
	}
	c.Props = map[string]string{}
	for k, v := range brokerDefaults {
		c.Props[k] = v
	}
	for k, v := range props {
		c.Props[k] = v
	}
	return c, c.Validate()
}

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

// Validate checks the config's invariants.
func (c *Config) Validate() error {
	switch {
	case c.NodeID < 0:
		return fmt.Errorf("node.id must be >= 0, got %d", c.NodeID)
	case c.NumPartitions < 1:
		return fmt.Errorf("num.partitions must be >= 1, got %d", c.NumPartitions)
	case c.MessageMaxBytes < 0:
		return fmt.Errorf("message.max.bytes must be >= 0, got %d", c.MessageMaxBytes)
	case c.MaxConnections < 0:
		return fmt.Errorf("max.connections must be >= 0, got %d", c.MaxConnections)
	case c.MaxConnectionsPerIP < 0:
		return fmt.Errorf("max.connections.per.ip must be >= 0, got %d", c.MaxConnectionsPerIP)
	case c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0:
		// Kafka: 0 only makes sense with overrides (an allow-list).
		return fmt.Errorf("max.connections.per.ip may be 0 only with max.connections.per.ip.overrides")
	case c.SocketRequestMaxBytes < 1:
		return fmt.Errorf("socket.request.max.bytes must be >= 1, got %d", c.SocketRequestMaxBytes)
	case c.FetchMaxBytes < 1024:
		return fmt.Errorf("fetch.max.bytes must be >= 1024, got %d", c.FetchMaxBytes)
	case c.UringSendMaxBytes != 0 && c.UringSendMaxBytes < 4096:
		// Smaller sends spend more on the ring than on the copy: at 13
		// bytes a 40 MB fetch answer took ~22 s, past the clients'
		// request timeouts.
		return fmt.Errorf("io.uring.send.max.bytes must be 0 (unbounded) or >= 4096, got %d", c.UringSendMaxBytes)
	case c.LogDir == "":
		return fmt.Errorf("log.dirs must not be empty")
	case c.Shards < 0 || c.Shards > 1024:
		return fmt.Errorf("shards must be in [0, 1024], got %d", c.Shards)
	case c.LogIOCacheBytes < 1<<20:
		return fmt.Errorf("log.io.cache.bytes must be >= 1048576 (one block), got %d", c.LogIOCacheBytes)
	case c.LogIOPreallocChunk < 1<<20:
		return fmt.Errorf("log.io.preallocate.chunk.bytes must be >= 1048576, got %d", c.LogIOPreallocChunk)
	case c.MetadataSnapshotBytes < 0:
		return fmt.Errorf("metadata.log.max.record.bytes.between.snapshots must be >= 1, got %d", c.MetadataSnapshotBytes)
	}
	switch c.IOEngine {
	case "netpoll", "auto", "uring":
	default:
		return fmt.Errorf("io.engine must be auto, uring or netpoll, got %q", c.IOEngine)
	}
	switch c.LogIOMode {
	case "buffered", "direct":
	default:
		return fmt.Errorf("log.io.mode must be buffered or direct, got %q", c.LogIOMode)
	}
	if err := validateAuthorizerClass(c.AuthorizerClassName); err != nil {
		return err
	}
	if c.SaslServerMaxReceiveSize < 8 {
		return fmt.Errorf("sasl.server.max.receive.size must be at least 8 bytes, got %d", c.SaslServerMaxReceiveSize)
	}
	if metricsEnabled(c.MetricsListener) {
		if _, _, err := net.SplitHostPort(c.MetricsListener); err != nil {
			return fmt.Errorf("metrics.listener must be host:port, \"\" or none, got %q", c.MetricsListener)
		}
	}
	if c.Shards == 0 {
		c.Shards = runtime.NumCPU()
	}
	if len(c.Listeners) == 0 {
		if c.ListenAddr == "" {
			return fmt.Errorf("listeners must not be empty")
		}
		c.Listeners = []Listener{{Name: protoPlaintext, Protocol: protoPlaintext, Addr: c.ListenAddr,
			AdvertisedHost: c.AdvertisedHost, AdvertisedPort: c.AdvertisedPort}}
	}
	return nil
}

// topicConfigNames lists the topic config names in sorted order.
func topicConfigNames() []string {
	out := make([]string, 0, len(topicConfigDefs))
	for _, d := range topicConfigDefs {
		out = append(out, d.name)
	}
	sort.Strings(out)
	return out
}

// parseBoolProp parses a boolean property as Kafka's ConfigDef does: "true"
// or "false", in any case, surrounding spaces ignored. Go's ParseBool also
// takes 1, 0, t and f, which a Kafka broker refuses.
func parseBoolProp(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("want true or false")
}
