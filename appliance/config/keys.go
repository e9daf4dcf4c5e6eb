package config

// The registry of configuration keys: every broker property ringbroker
// reads, the families of prefixed keys it reads, and the Kafka properties it
// accepts and ignores. appliance.ConfigFromProperties reports any other key
// as unknown, with the closest known name: a warning by default, an error
// with config.strict=true (issue 39). appliance's TestConfigKeysRegistry
// keeps BrokerDefaults, TopicDefs and the GROUP configs in step with it.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrUnknownKey is wrapped by the error of appliance.ConfigFromProperties
// when config.strict=true and a property is unknown.
var ErrUnknownKey = errors.New("unknown configuration key")

// Key describes one broker property.
type Key struct {
	// Name is Kafka's property name, or ringbroker's for its own knobs.
	Name string
	// Type is Kafka's ConfigDef type: boolean, short, int, long, double,
	// string, list, class or password.
	Type string
	// Default is the value that applies when the key is absent, as a
	// property value; "" when none does (the key is optional, or Ignored).
	Default string
	// Doc says in one line what the key does.
	Doc string
	// Ignored marks a Kafka property that is accepted without a warning and
	// has no effect (cluster, thread and socket tuning of Kafka's own
	// server.properties).
	Ignored bool
	// DefaultOf is the topic or GROUP config name whose broker-level
	// default this key sets (log.retention.ms: retention.ms), "" for none.
	// UnknownKeys suggests the key when that config name is given as a
	// broker property.
	DefaultOf string
}

// configKeys are the broker properties that are neither the broker default
// of a topic config (TopicDefs) nor a GROUP config's default or bound (the
// caller's extra keys): Keys adds those.
var configKeys = []Key{
	// Node and storage.
	{Name: "node.id", Type: "int", Default: "1", Doc: "this node's id"},
	{Name: "broker.id", Type: "int", Doc: "the node id when node.id is 0 (ZooKeeper-era name)"},
	{Name: "cluster.id", Type: "string", Doc: "the cluster id; generated on first start and kept in meta.properties"},
	{Name: "log.dirs", Type: "string", Default: "./data", Doc: "data directory (the first entry of the list)"},
	{Name: "log.dir", Type: "string", Doc: "data directory when log.dirs is empty"},
	{Name: "config.strict", Type: "boolean", Default: "false", Doc: "refuse to start when a property is unknown, instead of a warning per key"},

	// Roles, the controller quorum and broker membership (ParseCluster).
	// With none set a node is broker and controller of a one-voter quorum
	// of itself and formats its log directory on first start.
	{Name: "process.roles", Type: "list", Doc: "KRaft roles, broker and/or controller; unset is both (a combined node)"},
	{Name: "controller.quorum.voters", Type: "list", Doc: "the controller quorum, id@host:port,...; when set the node needs ringbroker format before its first start"},
	{Name: "controller.quorum.bootstrap.servers", Type: "list", Doc: "host:port of controllers to discover the quorum from (KIP-853); when set the node needs ringbroker format"},
	{Name: "controller.listener.names", Type: "list", Doc: "listeners of listeners that carry quorum traffic; not advertised to clients"},
	{Name: "inter.broker.listener.name", Type: "string", Doc: "listener brokers reach each other on; defaults to the first client listener"},
	{Name: "broker.rack", Type: "string", Doc: "the broker's rack, for rack-aware replica placement"},
	{Name: "controller.quorum.election.timeout.ms", Type: "int", Default: "1000", Doc: "longest wait for a leader's fetch before a voter starts an election"},
	{Name: "controller.quorum.fetch.timeout.ms", Type: "int", Default: "2000", Doc: "longest wait for a voter's fetch before the leader resigns or a voter starts an election"},
	{Name: "broker.heartbeat.interval.ms", Type: "int", Default: "2000", Doc: "time between a broker's heartbeats to the controller"},
	{Name: "broker.session.timeout.ms", Type: "int", Default: "9000", Doc: "a broker without a heartbeat for this long is fenced"},

	// Network and listeners.
	{Name: "listeners", Type: "string", Default: "PLAINTEXT://127.0.0.1:9092", Doc: "NAME://host:port listeners, each bound on every shard"},
	{Name: "advertised.listeners", Type: "string", Doc: "what clients are told to connect to, per listener name; defaults to listeners"},
	{Name: "listener.security.protocol.map", Type: "string", Default: DefaultSecurityProtocolMap, Doc: "security protocol of each listener name"},
	{Name: "sasl.enabled.mechanisms", Type: "list", Default: DefaultSaslMechanisms, Doc: "SASL mechanisms of SASL_PLAINTEXT listeners"},
	{Name: "sasl.jaas.config", Type: "password", Doc: "PLAIN users (user_<name>=\"<password>\") for every listener without its own"},
	{Name: "sasl.server.max.receive.size", Type: "int", Default: "524288", Doc: "largest request frame before SASL authentication"},
	{Name: "socket.request.max.bytes", Type: "int", Default: "104857600", Doc: "largest request frame; larger frames close the connection"},
	{Name: "fetch.max.bytes", Type: "int", Default: "57671680", Doc: "most record bytes one Fetch answer carries"},
	{Name: "max.incremental.fetch.session.cache.slots", Type: "int", Default: "1000", Doc: "incremental fetch sessions (KIP-227) kept at most"},
	{Name: "connections.max.idle.ms", Type: "long", Default: "600000", Doc: "idle connections are closed after this long"},
	{Name: "max.connections", Type: "int", Default: "2147483647", Doc: "cap on open client connections"},
	{Name: "max.connections.per.ip", Type: "int", Default: "2147483647", Doc: "cap on open client connections per address"},
	{Name: "max.connections.per.ip.overrides", Type: "string", Default: "", Doc: "per-address caps, address:count,..."},
	{Name: "metrics.listener", Type: "string", Default: "127.0.0.1:9644", Doc: "host:port of /metrics, /healthz and /readyz; \"\" or none disables"},

	// Topics and the log.
	{Name: "num.partitions", Type: "int", Default: "1", Doc: "partitions of auto-created topics"},
	{Name: "default.replication.factor", Type: "int", Default: "1", Doc: "replication factor of auto-created topics"},
	{Name: "auto.create.topics.enable", Type: "boolean", Default: "true", Doc: "create a topic on its first Metadata or Produce"},
	{Name: "delete.topic.enable", Type: "boolean", Default: "true", Doc: "allow DeleteTopics"},
	{Name: "message.max.bytes", Type: "int", Default: "1048588", Doc: "largest record batch accepted (topic: max.message.bytes)"},
	{Name: "metadata.log.max.record.bytes.between.snapshots", Type: "long", Default: "20971520", Doc: "bytes of metadata records appended between two snapshots of the metadata image (Kafka's name and default)"},
	{Name: "log.retention.hours", Type: "int", Default: "168", Doc: "retention.ms default in hours, when log.retention.ms and log.retention.minutes are unset"},
	{Name: "log.retention.minutes", Type: "int", Doc: "retention.ms default in minutes, when log.retention.ms is unset"},
	{Name: "log.roll.hours", Type: "int", Default: "168", Doc: "segment.ms default in hours, when log.roll.ms is unset"},
	{Name: "log.retention.check.interval.ms", Type: "long", Default: "300000", Doc: "how often retention runs"},
	{Name: "producer.id.expiration.ms", Type: "int", Default: "86400000", Doc: "idempotent producer state is forgotten after this long idle"},

	// The log cleaner.
	{Name: "log.cleaner.enable", Type: "boolean", Default: "true", Doc: "run the log cleaner for compacted topics"},
	{Name: "log.cleaner.threads", Type: "int", Default: "1", Doc: "cleaner threads; 0 disables the cleaner"},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: "double", Default: "1.7976931348623157E308", Doc: "cleaner read and write rate cap"},
	{Name: "log.cleaner.backoff.ms", Type: "long", Default: "15000", Doc: "sleep of a cleaner thread with nothing to clean"},
	{Name: "log.cleaner.dedupe.buffer.size", Type: "long", Default: "134217728", Doc: "memory of the cleaners' offset maps"},

	// Security.
	{Name: "authorizer.class.name", Type: "string", Default: "", Doc: "one of Kafka's standard authorizers turns the ACL authorizer on"},
	{Name: "allow.everyone.if.no.acl.found", Type: "boolean", Default: "false", Doc: "a resource no ACL names is open to everyone"},
	{Name: "super.users", Type: "string", Default: "", Doc: "principals allowed everything, separated by ';'"},

	// Quotas.
	{Name: "quota.window.num", Type: "int", Default: "11", Doc: "samples of a quota's rate"},
	{Name: "quota.window.size.seconds", Type: "int", Default: "1", Doc: "length of one quota sample"},

	// Groups and offsets.
	{Name: "offsets.topic.num.partitions", Type: "int", Default: "50", Doc: "partitions of __consumer_offsets"},
	{Name: "offsets.topic.replication.factor", Type: "short", Default: "1", Doc: "replication factor of __consumer_offsets, as DescribeConfigs reports it (one node: always 1)"},
	{Name: "offsets.topic.segment.bytes", Type: "int", Default: "104857600", Doc: "segment.bytes of __consumer_offsets"},
	{Name: "offsets.retention.minutes", Type: "int", Default: "10080", Doc: "committed offsets of empty groups expire after this long"},
	{Name: "offsets.retention.check.interval.ms", Type: "long", Default: "600000", Doc: "how often expired offsets are removed"},
	{Name: "offset.metadata.max.bytes", Type: "int", Default: "4096", Doc: "largest metadata string of a committed offset"},
	{Name: "group.min.session.timeout.ms", Type: "int", Default: "6000", Doc: "smallest session timeout a classic member may ask for"},
	{Name: "group.max.session.timeout.ms", Type: "int", Default: "1800000", Doc: "largest session timeout a classic member may ask for"},
	{Name: "group.initial.rebalance.delay.ms", Type: "int", Default: "3000", Doc: "wait for more members before the first rebalance of an empty group"},
	{Name: "group.max.size", Type: "int", Default: "1073741824", Doc: "most members of a classic group"},
	{Name: "group.consumer.max.size", Type: "int", Default: "2147483647", Doc: "most members of a KIP-848 consumer group"},
	{Name: "group.consumer.assignors", Type: "list", Default: "uniform,range", Doc: "server-side assignors of KIP-848 groups, the first the default"},
	{Name: "group.share.max.size", Type: "int", Default: "200", Doc: "most members of a KIP-932 share group"},
	{Name: "group.coordinator.rebalance.protocols", Type: "list", Default: "classic,consumer", Doc: "group protocols served; without consumer, KIP-848 APIs are not advertised"},

	// Transactions.
	{Name: "transaction.state.log.num.partitions", Type: "int", Default: "50", Doc: "partitions of __transaction_state"},
	{Name: "transaction.state.log.segment.bytes", Type: "int", Default: "104857600", Doc: "segment.bytes of __transaction_state"},
	{Name: "transaction.max.timeout.ms", Type: "int", Default: "900000", Doc: "largest transaction timeout a producer may ask for"},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: "int", Default: "10000", Doc: "how often timed-out transactions are aborted"},
	{Name: "transactional.id.expiration.ms", Type: "int", Default: "604800000", Doc: "an idle transactional id is forgotten after this long"},

	// ringbroker's own knobs (README, Configuration).
	{Name: "shards", Type: "int", Default: "0", Doc: "event loops that own partitions; 0 is one per CPU"},
	{Name: "io.engine", Type: "string", Default: "netpoll", Doc: "network engine: netpoll, uring or auto"},
	{Name: "io.uring.spare.procs", Type: "boolean", Default: "true", Doc: "GOMAXPROCS = CPUs + shards with the uring engine"},
	{Name: "io.uring.pin.shards", Type: "boolean", Default: "true", Doc: "pin each ring shard's thread to its CPU"},
	{Name: "io.uring.direct.write.batch", Type: "boolean", Default: "true", Doc: "direct-mode segment writes go through the shard's ring"},
	{Name: "io.uring.direct.read.async", Type: "boolean", Default: "true", Doc: "direct-mode fetches read missed cache blocks through the shard's ring"},
	{Name: "io.uring.plug.pad", Type: "boolean", Default: "true", Doc: "pad two-write submissions so the kernel plugs them"},
	{Name: "io.uring.fixed.buffers", Type: "boolean", Default: "true", Doc: "register the block cache's buffers with the shard's ring"},
	{Name: "io.uring.fetch.read.max.bytes", Type: "int", Default: "1048576", Doc: "log parts of fetch answers up to this size are read, larger ones spliced"},
	{Name: "io.uring.fetch.sendfile.min.bytes", Type: "int", Default: "0", Doc: "page-cached log parts of at least this size go by sendfile(2); 0 never"},
	{Name: "io.uring.send.max.bytes", Type: "int", Default: "524288", Doc: "bytes one send carries at most; 0 unbounded"},
	{Name: "log.io.mode", Type: "string", Default: "buffered", Doc: "segment I/O: buffered or direct"},
	{Name: "log.io.cache.bytes", Type: "long", Default: "67108864", Doc: "per-shard block cache of direct mode"},
	{Name: "log.io.cache.prefault", Type: "boolean", Default: "false", Doc: "allocate and touch the cache and large request buffers at start"},
	{Name: "log.io.tail.reads", Type: "boolean", Default: "true", Doc: "fetches read other shards' published tails"},
	{Name: "log.io.preallocate.chunk.bytes", Type: "long", Default: "16777216", Doc: "how far ahead of its data direct mode fallocates the active segment"},
	{Name: "log.io.preallocate.zero", Type: "boolean", Default: "true", Doc: "write zeros over fallocated chunks ahead of the data"},

	// Kafka properties accepted and ignored: no replica fetchers or thread
	// pools to size, no inter-broker SASL yet. They appear in Kafka's own
	// server.properties files.
	{Name: "security.inter.broker.protocol", Type: "string", Ignored: true, Doc: "inter.broker.listener.name picks the inter-broker listener"},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: "string", Ignored: true, Doc: "no inter-broker traffic"},
	{Name: "sasl.mechanism.controller.protocol", Type: "string", Ignored: true, Doc: "no SASL on the controller listener yet"},
	{Name: "num.network.threads", Type: "int", Ignored: true, Doc: "shards replace Kafka's thread pools"},
	{Name: "num.io.threads", Type: "int", Ignored: true, Doc: "shards replace Kafka's thread pools"},
	{Name: "num.replica.fetchers", Type: "int", Ignored: true, Doc: "no replication yet"},
	{Name: "num.recovery.threads.per.data.dir", Type: "int", Ignored: true, Doc: "each shard recovers its own partitions"},
	{Name: "socket.send.buffer.bytes", Type: "int", Ignored: true, Doc: "the kernel's socket buffer defaults apply"},
	{Name: "socket.receive.buffer.bytes", Type: "int", Ignored: true, Doc: "the kernel's socket buffer defaults apply"},
	{Name: "transaction.state.log.replication.factor", Type: "short", Ignored: true, Doc: "one node: replication factor 1"},
	{Name: "transaction.state.log.min.isr", Type: "int", Ignored: true, Doc: "one node: no ISR"},
	{Name: "share.coordinator.state.topic.replication.factor", Type: "short", Ignored: true, Doc: "one node: replication factor 1"},
	{Name: "share.coordinator.state.topic.min.isr", Type: "short", Ignored: true, Doc: "one node: no ISR"},
	{Name: "zookeeper.connect", Type: "string", Ignored: true, Doc: "no ZooKeeper"},
	{Name: "zookeeper.connection.timeout.ms", Type: "int", Ignored: true, Doc: "no ZooKeeper"},
}

var sslKeys = []Key{
	{Name: "ssl.keystore.type", Type: "string", Default: "PEM", Doc: "key store format of SSL and SASL_SSL listeners: PEM only"},
	{Name: "ssl.keystore.location", Type: "string", Doc: "PEM file with the private key followed by the certificate chain"},
	{Name: "ssl.keystore.key", Type: "password", Doc: "inline PEM private key (with ssl.keystore.certificate.chain)"},
	{Name: "ssl.keystore.certificate.chain", Type: "password", Doc: "inline PEM certificate chain (with ssl.keystore.key)"},
	{Name: "ssl.key.password", Type: "password", Doc: "encrypted private keys are not supported: a key found encrypted refuses to start"},
	{Name: "ssl.truststore.type", Type: "string", Default: "PEM", Doc: "trust store format: PEM only"},
	{Name: "ssl.truststore.location", Type: "string", Doc: "PEM file of the CAs client certificates are verified against"},
	{Name: "ssl.truststore.certificates", Type: "password", Doc: "inline PEM CAs client certificates are verified against"},
	{Name: "ssl.client.auth", Type: "string", Default: "none", Doc: "client certificates: none, requested or required"},
	{Name: "ssl.enabled.protocols", Type: "list", Default: "TLSv1.2,TLSv1.3", Doc: "TLS versions served (TLSv1.2, TLSv1.3)"},
	{Name: "ssl.cipher.suites", Type: "list", Doc: "TLS 1.2 cipher suites (Go's IANA names); default Go's secure suites"},
	{Name: "ssl.principal.mapping.rules", Type: "string", Default: "DEFAULT", Doc: "RULE:pattern/replacement/[LU] and DEFAULT: client certificate subject to principal name"},
}

// Family is a family of keys that share a prefix and a variable part,
// Prefix + <variable> + "." + tail, such as
// listener.name.<listener>.sasl.enabled.mechanisms.
type Family struct {
	// Prefix is what every key of the family starts with ("listener.name.").
	Prefix string
	// Variable says what the variable part names, for docs ("<listener>").
	Variable string
	// Tails are the keys that may follow the variable part.
	Tails []Key
}

// families are the prefixed keys ringbroker reads (appliance's
// ParseListeners): a listener's own SASL settings, which override the
// broker-wide ones.
var families = []Family{
	{Prefix: "listener.name.", Variable: "<listener>", Tails: []Key{
		{Name: "sasl.enabled.mechanisms", Type: "list", Doc: "SASL mechanisms of this listener; defaults to sasl.enabled.mechanisms"},
		{Name: "plain.sasl.jaas.config", Type: "password", Doc: "PLAIN users of this listener; defaults to sasl.jaas.config"},
		{Name: "scram-sha-256.sasl.jaas.config", Type: "password", Ignored: true, Doc: "SCRAM credentials live in the metadata log (AlterUserScramCredentials)"},
		{Name: "scram-sha-512.sasl.jaas.config", Type: "password", Ignored: true, Doc: "SCRAM credentials live in the metadata log (AlterUserScramCredentials)"},
	}},
}

func init() {
	// The ssl.* keys are both broker-wide and per listener.
	configKeys = append(configKeys, sslKeys...)
	for _, k := range sslKeys {
		k.Doc += " (this listener's)"
		k.Default = ""
		families[0].Tails = append(families[0].Tails, k)
	}
}

// Families returns a copy of the key families ringbroker reads.
func Families() []Family {
	out := make([]Family, len(families))
	for i, f := range families {
		f.Tails = append([]Key(nil), f.Tails...)
		out[i] = f
	}
	return out
}

// Keys returns every broker property ringbroker knows, sorted by name:
// the registry, the broker defaults of topic configs (TopicDefs) and the
// extra keys the caller passes (appliance passes the defaults and bounds
// of the GROUP configs). A name is listed once, the first definition
// winning in that order. Keys of a family are listed once, with the
// family's variable in their name
// (listener.name.<listener>.sasl.enabled.mechanisms).
func Keys(extra ...Key) []Key {
	seen := map[string]bool{}
	var out []Key
	add := func(k Key) {
		if !seen[k.Name] {
			seen[k.Name] = true
			out = append(out, k)
		}
	}
	for _, k := range configKeys {
		add(k)
	}
	for _, d := range topicDefs {
		add(Key{Name: d.BrokerProp, Type: d.Type, Default: d.Default, Doc: "broker default of the topic config " + d.Name, DefaultOf: d.Name})
	}
	for _, k := range extra {
		add(k)
	}
	for _, f := range families {
		for _, t := range f.Tails {
			t.Name = f.Prefix + f.Variable + "." + t.Name
			add(t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// UnknownKey is a property that ringbroker neither reads nor deliberately
// ignores, with the closest known name ("" when none is close).
type UnknownKey struct {
	// Key is the property as given.
	Key string
	// Suggestion is the known property closest to Key, "" when none is
	// within maxSuggestDistance.
	Suggestion string
}

// String is the key and its suggestion, `"key" (did you mean "name"?)`,
// for error messages.
func (u UnknownKey) String() string {
	if u.Suggestion == "" {
		return strconv.Quote(u.Key)
	}
	return fmt.Sprintf("%q (did you mean %q?)", u.Key, u.Suggestion)
}

// UnknownKeys returns the keys of props that Keys(extra...) and the key
// families do not name, sorted, each with the closest known name: a known
// key within a Damerau-Levenshtein distance of maxSuggestDistance (letter
// case ignored), a family key with its variable part kept, or, for a topic
// or GROUP config name given as a broker property, the broker property that
// sets its default (retention.ms -> log.retention.ms; Key.DefaultOf).
func UnknownKeys(props map[string]string, extra ...Key) []UnknownKey {
	known := Keys(extra...)
	names := make(map[string]bool, len(known))
	for _, k := range known {
		names[k.Name] = true
	}
	var out []UnknownKey
	for key := range props {
		if names[key] || InFamily(key) {
			continue
		}
		out = append(out, UnknownKey{Key: key, Suggestion: suggestKey(key, known, extra)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// InFamily reports whether key is Prefix + <variable> + "." + tail of a
// family, with a non-empty variable part without dots.
func InFamily(key string) bool {
	for _, f := range families {
		rest, ok := strings.CutPrefix(key, f.Prefix)
		if !ok {
			continue
		}
		v, tail, ok := strings.Cut(rest, ".")
		if !ok || v == "" {
			continue
		}
		for _, t := range f.Tails {
			if tail == t.Name {
				return true
			}
		}
	}
	return false
}

// suggestKey returns the known name closest to the unknown key, or "" when
// none is within maxSuggestDistance. A topic config name suggests its broker
// property first, then an extra key's DefaultOf (a GROUP config name).
func suggestKey(key string, known, extra []Key) string {
	for _, d := range topicDefs {
		if key == d.Name {
			return d.BrokerProp
		}
	}
	for _, k := range extra {
		if k.DefaultOf != "" && key == k.DefaultOf {
			return k.Name
		}
	}
	var cands []string
	for _, k := range known {
		if !strings.Contains(k.Name, "<") {
			cands = append(cands, k.Name)
		}
	}
	// Family keys with the key's own variable part: the third dotted word
	// of listener.name.<listener>.<tail>, or of a misspelt prefix.
	if words := strings.SplitN(key, ".", 4); len(words) == 4 && words[2] != "" {
		for _, f := range families {
			for _, t := range f.Tails {
				cands = append(cands, f.Prefix+words[2]+"."+t.Name)
			}
		}
	}
	lower := strings.ToLower(key)
	best, bestDist := "", maxSuggestDistance(key)+1
	for _, c := range cands {
		d := damerauLevenshtein(lower, strings.ToLower(c))
		if d < bestDist || d == bestDist && best != "" && c < best {
			best, bestDist = c, d
		}
	}
	return best
}

// maxSuggestDistance is how many edits a suggestion may be away from an
// unknown key of this length: 1 up to 7 characters, 2 up to 15, then 3.
// Kafka's names share long dotted stems, so a larger distance would suggest
// unrelated keys that happen to share one.
func maxSuggestDistance(key string) int {
	return min(3, 1+len(key)/8)
}

// damerauLevenshtein is the edit distance between a and b, in bytes, where
// an edit inserts, deletes or replaces one byte or swaps two adjacent ones
// (the optimal string alignment variant: no substring is edited twice).
func damerauLevenshtein(a, b string) int {
	// Three rows of the (len(a)+1) x (len(b)+1) table: i-2, i-1 and i.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
