package appliance

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/share"
	"github.com/ringbroker/ringbroker/appliance/txn"
)

// TestConfigTypedSections: ConfigFromProperties parses every section once
// into its typed field, with Kafka's default when the properties leave it
// out and the given value otherwise.
func TestConfigTypedSections(t *testing.T) {
	defaults, err := ConfigFromProperties(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(defaults.Group, group.DefaultConfig()) || !defaults.Group.ConsumerProtocol() || defaults.Group.NumPartitions() != 50 {
		t.Errorf("Group = %+v, want group.DefaultConfig", defaults.Group)
	}
	if defaults.Txn != txn.DefaultConfig() || defaults.Txn.NumPartitions != 50 || defaults.Txn.MaxTimeout != 15*time.Minute {
		t.Errorf("Txn = %+v, want txn.DefaultConfig", defaults.Txn)
	}
	if defaults.Quota != (quota.Config{WindowNum: 11, WindowMs: 1000}) {
		t.Errorf("Quota = %+v, want 11 windows of 1 s", defaults.Quota)
	}
	if defaults.Cleaner != config.DefaultCleaner() || !defaults.Cleaner.Enable || defaults.Cleaner.Threads != 1 {
		t.Errorf("Cleaner = %+v, want config.DefaultCleaner", defaults.Cleaner)
	}
	if defaults.OffsetsSegmentBytes != 100<<20 || defaults.TxnSegmentBytes != 100<<20 {
		t.Errorf("internal segment bytes %d, %d, want 100 MiB", defaults.OffsetsSegmentBytes, defaults.TxnSegmentBytes)
	}

	for _, c := range []struct {
		props map[string]string
		ok    func(c Config) bool
	}{
		{map[string]string{"offsets.topic.num.partitions": "3"}, func(c Config) bool { return c.Group.NumPartitions() == 3 }},
		{map[string]string{"offsets.retention.check.interval.ms": "1000"}, func(c Config) bool { return c.Group.RetentionCheck() == time.Second }},
		{map[string]string{"group.coordinator.rebalance.protocols": "classic"}, func(c Config) bool { return !c.Group.ConsumerProtocol() }},
		{map[string]string{"group.max.size": "7"}, func(c Config) bool {
			want, _ := group.ConfigFromProps(map[string]string{"group.max.size": "7"})
			return reflect.DeepEqual(c.Group, want) && !reflect.DeepEqual(c.Group, group.DefaultConfig())
		}},
		{map[string]string{"transaction.state.log.num.partitions": "5"}, func(c Config) bool { return c.Txn.NumPartitions == 5 }},
		{map[string]string{"transaction.max.timeout.ms": "60000"}, func(c Config) bool { return c.Txn.MaxTimeout == time.Minute }},
		{map[string]string{"transactional.id.expiration.ms": "3600000"}, func(c Config) bool { return c.Txn.IDExpiration == time.Hour }},
		{map[string]string{"quota.window.num": "4", "quota.window.size.seconds": "2"}, func(c Config) bool { return c.Quota == quota.Config{WindowNum: 4, WindowMs: 2000} }},
		{map[string]string{"log.cleaner.enable": "false"}, func(c Config) bool { return !c.Cleaner.Enable }},
		{map[string]string{"log.cleaner.threads": "3"}, func(c Config) bool { return c.Cleaner.Threads == 3 }},
		{map[string]string{"log.cleaner.backoff.ms": "250"}, func(c Config) bool { return c.Cleaner.Backoff == 250*time.Millisecond }},
		{map[string]string{"log.cleaner.io.max.bytes.per.second": "1048576"}, func(c Config) bool { return c.Cleaner.IOMaxBytes == 1<<20 }},
		{map[string]string{"log.cleaner.dedupe.buffer.size": "4096"}, func(c Config) bool { return c.Cleaner.DedupeBytes == 4096 }},
		{map[string]string{"offsets.topic.segment.bytes": "1048576"}, func(c Config) bool {
			return c.OffsetsSegmentBytes == 1<<20 && c.TxnSegmentBytes == 100<<20
		}},
		{map[string]string{"transaction.state.log.segment.bytes": "2097152"}, func(c Config) bool {
			return c.TxnSegmentBytes == 2<<20 && c.OffsetsSegmentBytes == 100<<20
		}},
	} {
		c2, err := ConfigFromProperties(c.props)
		if err != nil {
			t.Errorf("%v: %v", c.props, err)
			continue
		}
		if !c.ok(c2) {
			t.Errorf("%v: not parsed into its typed field: Group %+v Txn %+v Quota %+v Cleaner %+v segments %d/%d",
				c.props, c2.Group, c2.Txn, c2.Quota, c2.Cleaner, c2.OffsetsSegmentBytes, c2.TxnSegmentBytes)
		}
	}
}

// TestConfigSectionErrors: a bad value in any section stops
// ConfigFromProperties (the broker's startup) with the key named.
func TestConfigSectionErrors(t *testing.T) {
	for _, kv := range [][2]string{
		{"offsets.topic.num.partitions", "x"},
		{"offsets.topic.num.partitions", "0"},
		{"group.min.session.timeout.ms", "soon"},
		{"group.consumer.assignors", "roundrobin"},
		{"transaction.max.timeout.ms", "x"},
		{"transaction.state.log.num.partitions", "0"},
		{"quota.window.num", "0"},
		{"quota.window.size.seconds", "x"},
		{"log.cleaner.enable", "yes"},
		{"log.cleaner.threads", "-1"},
		{"log.cleaner.backoff.ms", "x"},
		{"log.cleaner.dedupe.buffer.size", "1"},
		{"offsets.topic.segment.bytes", "13"},
		{"offsets.topic.segment.bytes", "big"},
		{"transaction.state.log.segment.bytes", "4294967296"},
		{"log.retention.hours", "soon"},
		{"group.share.max.size", "many"},
		{"group.share.auto.offset.reset", "sometimes"},
		{"group.share.record.lock.duration.ms", "long"},
		{"group.share.min.record.lock.duration.ms", "soon"},
	} {
		_, err := ConfigFromProperties(map[string]string{kv[0]: kv[1]})
		if err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: err = %v, want an error naming %s", kv[0], kv[1], err, kv[0])
		}
	}
}

// TestConfigByHandDefaults: a Config built by hand (tests, tools) gets
// Kafka's defaults in the sections it leaves zero when it is validated, and
// keeps the ones it sets.
func TestConfigByHandDefaults(t *testing.T) {
	c := Config{NodeID: 1, ListenAddr: "127.0.0.1:0", LogDir: t.TempDir(), NumPartitions: 1, MessageMaxBytes: 1 << 20,
		SocketRequestMaxBytes: 100 << 20, FetchMaxBytes: 50 << 20, MaxConnections: 10, MaxConnectionsPerIP: 10,
		IOEngine: "netpoll", LogIOMode: "buffered", LogIOCacheBytes: 64 << 20, LogIOPreallocChunk: 16 << 20,
		SaslServerMaxReceiveSize: 1 << 19, Txn: txn.Config{NumPartitions: 2, MaxTimeout: time.Minute, CleanupInterval: time.Second, IDExpiration: time.Hour}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Group, group.DefaultConfig()) || c.Quota.WindowNum != 11 || c.Cleaner != config.DefaultCleaner() ||
		c.OffsetsSegmentBytes != 100<<20 || c.TxnSegmentBytes != 100<<20 {
		t.Errorf("zero sections not defaulted: Group %+v Quota %+v Cleaner %+v segments %d/%d", c.Group, c.Quota, c.Cleaner, c.OffsetsSegmentBytes, c.TxnSegmentBytes)
	}
	if c.Txn.NumPartitions != 2 {
		t.Errorf("Txn = %+v: the section set by hand was replaced", c.Txn)
	}
	if err := c.Share.Validate("share.record.lock.duration.ms", "30000"); err != nil {
		t.Errorf("Share of a Config built by hand rejects Kafka's default lock duration: %v", err)
	}
	if err := c.Share.Validate("share.record.lock.duration.ms", "100"); err == nil {
		t.Errorf("Share of a Config built by hand accepts 100 ms, below Kafka's 15 s bound")
	}
}

// TestConfigShareSection: ConfigFromProperties parses the share groups'
// broker defaults and bounds once into Config.Share, which then checks and
// describes GROUP config values as the properties say.
func TestConfigShareSection(t *testing.T) {
	lock := "share.record.lock.duration.ms"
	defaults, err := ConfigFromProperties(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if err := defaults.Share.Validate(lock, "30000"); err != nil {
		t.Errorf("default Share rejects 30000: %v", err)
	}
	if err := defaults.Share.Validate(lock, "100"); err == nil {
		t.Errorf("default Share accepts 100, below group.share.min.record.lock.duration.ms=15000")
	}
	if v, src := defaults.Share.Value(nil, lock); v != "30000" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("default %s = %q (source %v), want 30000 from the default", lock, v, src)
	}

	c, err := ConfigFromProperties(map[string]string{
		"group.share.min.record.lock.duration.ms": "50",
		"group.share.record.lock.duration.ms":     "20000",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Share.Validate(lock, "100"); err != nil {
		t.Errorf("Share with min 50 rejects 100: %v", err)
	}
	if v, src := c.Share.Value(nil, lock); v != "20000" || src != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("%s = %q (source %v), want 20000 from the broker's properties", lock, v, src)
	}
	want, err := share.ConfigFromProps(c.Props)
	if err != nil || !reflect.DeepEqual(c.Share, want) {
		t.Errorf("Share = %+v, want share.ConfigFromProps(Props) = %+v (err %v)", c.Share, want, err)
	}
}
