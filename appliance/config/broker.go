package config

// DefaultSecurityProtocolMap is Kafka's listener.security.protocol.map default.
const DefaultSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// DefaultSaslMechanisms is ringbroker's sasl.enabled.mechanisms default:
// every mechanism it implements (Kafka's is GSSAPI).
const DefaultSaslMechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"

// BrokerDefaults returns Kafka's defaults (ringbroker's for its own knobs)
// of the broker properties appliance.ConfigFromProperties reads, as a new
// map; the topic configs' broker properties are in TopicDefs, the
// coordinators' in their own packages.
func BrokerDefaults() map[string]string {
	return map[string]string{
		"node.id":                                   "1",
		"listeners":                                 "PLAINTEXT://127.0.0.1:9092",
		"listener.security.protocol.map":            DefaultSecurityProtocolMap,
		"sasl.enabled.mechanisms":                   DefaultSaslMechanisms,
		"sasl.server.max.receive.size":              "524288",
		"log.dirs":                                  "./data",
		"num.partitions":                            "1",
		"default.replication.factor":                "1",
		"auto.create.topics.enable":                 "true",
		"delete.topic.enable":                       "true",
		"message.max.bytes":                         "1048588",
		"socket.request.max.bytes":                  "104857600",
		"fetch.max.bytes":                           "57671680",
		"max.incremental.fetch.session.cache.slots": "1000",
		"log.retention.check.interval.ms":           "300000",
		"connections.max.idle.ms":                   "600000",
		"max.connections":                           "2147483647",
		"max.connections.per.ip":                    "2147483647",
		"max.connections.per.ip.overrides":          "",
		"metrics.listener":                          "127.0.0.1:9644",
		"producer.id.expiration.ms":                 "86400000",
		"authorizer.class.name":                     "",
		"allow.everyone.if.no.acl.found":            "false",
		"super.users":                               "",
		"shards":                                    "0",
		"io.engine":                                 "netpoll",
		"io.uring.spare.procs":                      "true",
		"io.uring.pin.shards":                       "true",
		"io.uring.direct.write.batch":               "true",
		"io.uring.direct.read.async":                "true",
		"io.uring.plug.pad":                         "true",
		"io.uring.fixed.buffers":                    "true",
		"io.uring.fetch.read.max.bytes":             "1048576",
		"io.uring.fetch.sendfile.min.bytes":         "0",
		"io.uring.send.max.bytes":                   "524288",
		"log.io.mode":                               "buffered",
		"log.io.cache.bytes":                        "67108864",
		"log.io.cache.prefault":                     "false",
		"log.io.tail.reads":                         "true",
		"log.io.preallocate.chunk.bytes":            "16777216",
		"log.io.preallocate.zero":                   "true",
		"offsets.topic.num.partitions":              "50",
		"offsets.topic.replication.factor":          "1",

		// The log cleaner (CleanerFromProps) and the internal topics' segment sizes (InternalSegmentBytes).
		"offsets.topic.segment.bytes":         "104857600",
		"transaction.state.log.segment.bytes": "104857600",
		"log.cleaner.enable":                  "true",
		"log.cleaner.threads":                 "1",
		"log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
		"log.cleaner.backoff.ms":              "15000",
		"log.cleaner.dedupe.buffer.size":      "134217728",

		// Metadata image snapshots (the metadata package's snapshots).
		"metadata.log.max.record.bytes.between.snapshots": "20971520",
	}
}
