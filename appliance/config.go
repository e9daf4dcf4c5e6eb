package appliance

import (
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/share"
	"github.com/ringbroker/ringbroker/appliance/txn"
)

// ParseProperties reads a Java .properties file as Kafka's start scripts
// do (config.ParseProperties).
func ParseProperties(r io.Reader) (map[string]string, error) { return config.ParseProperties(r) }

// Config is the broker configuration: Kafka's property names and defaults,
// plus ringbroker's own knobs (io.engine, log.io.mode, shards).
type Config struct {
	NodeID         int32
	ClusterID      string
	ListenAddr     string // host:port of the first listener (Listeners[0].Addr)
	AdvertisedHost string // Listeners[0].AdvertisedHost
	AdvertisedPort int32  // Listeners[0].AdvertisedPort
	LogDir         string // first entry of log.dirs, where the broker keeps its data
	// LogDirs is every entry of log.dirs (log.dir when log.dirs is empty),
	// in order; LogDirs[0] is LogDir. `ringbroker format` writes
	// meta.properties into each.
	LogDirs                  []string
	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	DeleteTopicEnable        bool
	MessageMaxBytes          int32
	SocketRequestMaxBytes    int32
	FetchMaxBytes            int32 // fetch.max.bytes: the most record bytes one Fetch answer carries (fetchState.trimToMaxBytes)
	FetchSessionSlots        int32 // max.incremental.fetch.session.cache.slots (fetchsession.Cache)
	RetentionCheckIntervalMs int64
	Shards                   int
	IOEngine                 string // netpoll | uring | auto
	UringSpareProcs          bool   // io.uring.spare.procs: GOMAXPROCS + shards with the uring engine (Broker.spareProcsForRings)
	UringPinShards           bool   // io.uring.pin.shards: pin each ring shard's thread to its CPU (Broker.planEngine)
	UringDirectWriteBatch    bool   // io.uring.direct.write.batch: segment writes go through the shard's ring, appends answered when they complete (log.io.mode=direct; Broker.startRingStorage)
	UringPlugPad             bool   // io.uring.plug.pad: pad two-write submissions so the kernel plugs them (ioring.Options.PlugPad)
	UringFixedBuffers        bool   // io.uring.fixed.buffers: register the block cache's buffers with the shard's ring (log.io.mode=direct; nvme BlockCache.UseFixedBuffers)
	UringDirectReadAsync     bool   // io.uring.direct.read.async: fetches read the cache blocks they miss through the shard's ring (log.io.mode=direct; fetchState.prefetch)
	UringFetchReadMaxBytes   int32  // io.uring.fetch.read.max.bytes: log parts of answers up to this size are read, not spliced (Broker.newEngine)
	UringFetchSendfileMin    int32  // io.uring.fetch.sendfile.min.bytes: page-cached log parts of at least this size go by sendfile(2); 0 never (Broker.newEngine)
	UringSendMaxBytes        int32  // io.uring.send.max.bytes: bytes one send SQE carries at most, 0 (unbounded) or >= 4096 (Broker.newEngine)
	SaslServerMaxReceiveSize int32  // sasl.server.max.receive.size: largest frame before SASL authentication (Kafka's default 512 KiB)
	LogIOMode                string // buffered | direct
	LogIOCacheBytes          int64  // log.io.cache.bytes: per-shard block cache of direct mode (Broker.newShardCache)
	LogIOCachePrefault       bool   // log.io.cache.prefault: allocate and touch each shard's cache buffers, and large request buffers, at start (Broker.prefaultCaches)
	LogIOTailReads           bool   // log.io.tail.reads: fetches read the last batches of a partition on another shard from its published tail (nvme.TailView, fetchState.peekRun)
	LogIOPreallocChunk       int64  // log.io.preallocate.chunk.bytes: how far ahead of its data direct mode fallocates the active segment (Broker.storageOptions)
	LogIOPreallocZero        bool   // log.io.preallocate.zero: direct mode writes zeros over the chunks it fallocates past a segment's first (nvme.Options.PreallocateUnwritten)
	ConnectionsMaxIdleMs     int64
	// MaxConnections (max.connections) and MaxConnectionsPerIP
	// (max.connections.per.ip, with max.connections.per.ip.overrides by
	// address) cap the open client connections, Kafka's defaults
	// 2147483647 (no cap); a connection past a cap is closed as soon as it
	// is accepted (Broker.admitLocked).
	MaxConnections               int32
	MaxConnectionsPerIP          int32
	MaxConnectionsPerIPOverrides map[string]int32
	MetricsListener              string // metrics.listener: host:port of /metrics, /healthz, /readyz; "" or "none" disables
	ProducerIDExpirationMs       int64  // producer.id.expiration.ms: idempotent producer state is forgotten after this long idle

	// AuthorizerClassName is authorizer.class.name: "" (no authorizer, the
	// ACL APIs answer SECURITY_DISABLED) or one of Kafka's standard
	// authorizers, which turn the built-in one on (security.NewAuthorizer).
	AuthorizerClassName string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: whether a
	// resource no ACL names is open to everyone (Kafka's default: false).
	AllowEveryoneIfNoACLFound bool
	// SuperUsers is super.users split at ';': principals ("User:admin")
	// allowed everything.
	SuperUsers []string

	// Listeners are listeners with advertised.listeners,
	// listener.security.protocol.map and the SASL settings (config.ParseListeners),
	// in listeners order. Empty in a Config built by hand: Validate makes
	// one PLAINTEXT listener of ListenAddr and the advertised host and port.
	Listeners []Listener

	// Cluster is the cluster section (config.ParseCluster): process.roles,
	// the controller quorum, controller listeners, broker.rack and the
	// membership timeouts. A Config without any of its keys is a combined
	// one-voter node, as ringbroker always ran.
	Cluster config.Cluster

	// Group is the group coordinator's configuration
	// (group.ConfigFromProps: offsets.topic.*, group.*).
	Group group.Config
	// Txn is the transaction coordinator's configuration
	// (txn.ConfigFromProps: transaction.*).
	Txn txn.Config
	// Quota is the quota sampling configuration (quota.ConfigFromProps:
	// quota.window.num, quota.window.size.seconds).
	Quota quota.Config
	// Share is the share groups' configuration and the GROUP config
	// resources' broker defaults and bounds (share.ConfigFromProps:
	// group.share.*, group.consumer.* heartbeat and session bounds). The
	// GROUP resources' own values live in the metadata image
	// (Image.GroupConfigs), read at run time.
	Share share.Config
	// Cleaner is the log cleaner's configuration (config.CleanerFromProps:
	// log.cleaner.*).
	Cleaner config.Cleaner
	// OffsetsSegmentBytes (offsets.topic.segment.bytes) and TxnSegmentBytes
	// (transaction.state.log.segment.bytes) are the segment.bytes of
	// __consumer_offsets and __transaction_state when the broker creates
	// them; Kafka's default 100 MiB.
	OffsetsSegmentBytes int32
	TxnSegmentBytes     int32

	// TopicDefaults holds the broker-level defaults of every topic config,
	// keyed by the topic config name (segment.bytes, retention.ms, ...).
	TopicDefaults map[string]string
	// Props is every property as given over BrokerDefaults, for
	// DescribeConfigs on the broker. Nothing else reads it at run time: the
	// typed fields above are parsed from it once, by ConfigFromProperties.
	Props map[string]string
	// MetadataSnapshotBytes (metadata.log.max.record.bytes.between.snapshots,
	// Kafka's default 20 MiB) is how many bytes of metadata records are
	// appended between two snapshots of the metadata image (metadata.Log);
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
// config.strict=true and a property is unknown (config.ErrUnknownKey).
var ErrUnknownConfigKey = config.ErrUnknownKey

// topicConfigDef is config.TopicDef in the shape configRegistry hands to
// the metadata package's admin handlers (metadata.DescribeTopicConfigs,
// metadata.ApplyListOp) as a metadata.TopicConfigDef.
type topicConfigDef struct {
	name       string
	brokerProp string
	def        string
	kind       string // long, int, string, boolean, double, list, class
	validate   func(string) error
}

// topicConfigDefs are the topic configs we accept (config.TopicDefs).
var topicConfigDefs = func() []topicConfigDef {
	var out []topicConfigDef
	for _, d := range config.TopicDefs() {
		out = append(out, topicConfigDef{name: d.Name, brokerProp: d.BrokerProp, def: d.Default, kind: d.Type, validate: d.Validate})
	}
	return out
}()

func topicConfigDefFor(name string) (topicConfigDef, bool) {
	for _, d := range topicConfigDefs {
		if d.name == name {
			return d, true
		}
	}
	return topicConfigDef{}, false
}

// ValidateTopicConfig checks one topic config name and value. It returns an
// error suitable for INVALID_CONFIG (40) messages (config.ValidateTopic).
func ValidateTopicConfig(name, value string) error { return config.ValidateTopic(name, value) }

// brokerDefaults are Kafka's defaults for the broker properties we read
// (config.BrokerDefaults); read only.
var brokerDefaults = config.BrokerDefaults()

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
	c.FetchSessionSlots = i32("max.incremental.fetch.session.cache.slots")
	c.RetentionCheckIntervalMs = i64("log.retention.check.interval.ms")
	c.ConnectionsMaxIdleMs = i64("connections.max.idle.ms")
	c.MaxConnections = i32("max.connections")
	c.MaxConnectionsPerIP = i32("max.connections.per.ip")
	if err == nil {
		c.MaxConnectionsPerIPOverrides, err = config.ParseConnOverrides(get("max.connections.per.ip.overrides"))
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
	for _, d := range strings.Split(dirs, ",") {
		if d = strings.TrimSpace(d); d != "" && !slices.Contains(c.LogDirs, d) {
			c.LogDirs = append(c.LogDirs, d)
		}
	}

	if c.Listeners, err = config.ParseListeners(props, get); err != nil {
		return Config{}, err
	}
	if c.Cluster, err = config.ParseCluster(props, get, c.NodeID); err != nil {
		return Config{}, err
	}
	if len(c.Listeners) > 0 {
		// A controller-only node has no client listener.
		first := c.Listeners[0]
		c.ListenAddr, c.AdvertisedHost, c.AdvertisedPort = first.Addr, first.AdvertisedHost, first.AdvertisedPort
	}

	// Topic defaults from broker properties, with Kafka's hours/minutes forms.
	if c.TopicDefaults, err = config.TopicDefaults(props); err != nil {
		return Config{}, err
	}
	c.Props = map[string]string{}
	for k, v := range brokerDefaults {
		c.Props[k] = v
	}
	for k, v := range props {
		c.Props[k] = v
	}
	if err := c.parseSections(); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// parseSections parses the coordinators', quotas' and cleaner's sections of
// c.Props into their typed fields, once, so that a bad value stops the
// broker at startup with the key named, and nothing reads c.Props later.
func (c *Config) parseSections() error {
	var err error
	if c.Group, err = group.ConfigFromProps(c.Props); err != nil {
		return fmt.Errorf("cannot configure the group coordinator: %w", err)
	}
	if c.Txn, err = txn.ConfigFromProps(c.Props); err != nil {
		return fmt.Errorf("cannot configure the transaction coordinator: %w", err)
	}
	if c.Quota, err = quota.ConfigFromProps(c.Props); err != nil {
		return fmt.Errorf("cannot configure quotas: %w", err)
	}
	if c.Share, err = share.ConfigFromProps(c.Props); err != nil {
		return fmt.Errorf("cannot configure share groups: %w", err)
	}
	if c.Cleaner, err = config.CleanerFromProps(c.Props); err != nil {
		return fmt.Errorf("cannot configure the log cleaner: %w", err)
	}
	if c.OffsetsSegmentBytes, err = config.InternalSegmentBytes(c.Props, "offsets.topic.segment.bytes", defaultInternalSegmentBytes); err != nil {
		return err
	}
	if c.TxnSegmentBytes, err = config.InternalSegmentBytes(c.Props, "transaction.state.log.segment.bytes", defaultInternalSegmentBytes); err != nil {
		return err
	}
	return nil
}

// defaultInternalSegmentBytes is Kafka's segment.bytes of the internal
// topics (offsets.topic.segment.bytes, transaction.state.log.segment.bytes).
const defaultInternalSegmentBytes = 100 << 20

// groupConfig is c.Group, or Kafka's defaults when c is a Config built by
// hand that was never validated (defaultSections), as ApiVersions tests use.
func (c *Config) groupConfig() group.Config {
	if reflect.ValueOf(c.Group).IsZero() {
		return group.DefaultConfig()
	}
	return c.Group
}

// defaultSections fills the typed sections a Config built by hand left
// zero with Kafka's defaults, as ConfigFromProperties would for absent
// properties.
func (c *Config) defaultSections() {
	if reflect.ValueOf(c.Group).IsZero() {
		c.Group = group.DefaultConfig()
	}
	if c.Txn == (txn.Config{}) {
		c.Txn = txn.DefaultConfig()
	}
	if c.Quota == (quota.Config{}) {
		c.Quota, _ = quota.ConfigFromProps(nil)
	}
	if reflect.ValueOf(c.Share).IsZero() {
		// A Config built by hand may carry Props: its invalid share values
		// fall back to Kafka's defaults, as they did before Share existed.
		c.Share, _ = share.ConfigFromProps(c.Props)
	}
	if c.Cleaner == (config.Cleaner{}) {
		c.Cleaner = config.DefaultCleaner()
	}
	if c.OffsetsSegmentBytes == 0 {
		c.OffsetsSegmentBytes = defaultInternalSegmentBytes
	}
	if c.TxnSegmentBytes == 0 {
		c.TxnSegmentBytes = defaultInternalSegmentBytes
	}
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
	c.defaultSections()
	if len(c.Listeners) == 0 && !c.Cluster.ControllerOnly() {
		if c.ListenAddr == "" {
			return fmt.Errorf("listeners must not be empty")
		}
		c.Listeners = []Listener{{Name: protoPlaintext, Protocol: protoPlaintext, Addr: c.ListenAddr,
			AdvertisedHost: c.AdvertisedHost, AdvertisedPort: c.AdvertisedPort}}
	}
	return nil
}

// topicConfigNames lists the topic config names in sorted order.
func topicConfigNames() []string { return config.TopicNames() }

// parseBoolProp parses a boolean property as Kafka's ConfigDef does
// (config.ParseBool).
func parseBoolProp(v string) (bool, error) { return config.ParseBool(v) }
