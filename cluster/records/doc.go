// Package records holds the metadata records of the __cluster_metadata log
// and their binary codec: one Go type per record kind, with Kafka's names,
// api keys and field names (metadata/src/main/resources/common/metadata in
// Apache Kafka). It is a leaf: it imports only the standard library, and
// every other package may import it.
//
// # Frame
//
// Every record is framed as Kafka's metadata record serde frames it, and
// is the whole value of one Kafka record in the log (the key is null):
//
//	+---------------------+----------------+--------------------+------------------+
//	| frame version       | api key        | record version     | body             |
//	| unsigned varint (1) | unsigned varint| unsigned varint    | flexible fields  |
//	+---------------------+----------------+--------------------+------------------+
//
// The body uses Kafka's flexible ("compact") encodings in every version:
//
//	int8/16/32/64, float64   big-endian, fixed width
//	bool                     one byte, 0 or 1 (anything else is malformed)
//	uuid                     16 bytes
//	string, bytes            unsigned varint N+1, then N bytes; 0 is null
//	array                    unsigned varint N+1, then N elements; 0 is null
//	struct (array element)   its fields, then its own tagged-field section
//	tagged-field section     unsigned varint count, then per field:
//	                         unsigned varint tag, unsigned varint size, size bytes
//
// The body ends with the record's tagged-field section. Tagged fields this
// package does not know are skipped, as Kafka does, so a later version may
// add tagged fields that older readers ignore.
//
// # Differences from Kafka
//
// The layouts follow Kafka's schemas for the fields we share, so Kafka's
// metadata tools could in principle read these records, but they are not
// promised to be byte-identical with any Kafka release: every record here
// is flexible from version 0 (some of Kafka's early versions were not),
// PartitionRecord version 0 carries LeaderRecoveryState as tag 0 and omits
// the directory and ELR fields of Kafka's later versions, and
// ProducerIdsRecord names its last field NextProducerID. None of our
// records carries a field Kafka lacks: the shard a partition lives on is
// not in PartitionRecord, because a node places partitions on its own
// shards when it opens them.
//
// # Decoding
//
// Decode reads one frame that must fill its input exactly. It never
// panics; a failure wraps one of the sentinel errors (ErrTruncated,
// ErrMalformed, ErrTrailingBytes, ErrUnknownFrameVersion,
// ErrUnknownAPIKey, ErrUnknownVersion). The decoder keeps its first error
// (a sticky error) and is checked once at the end; array lengths are
// bounded by the bytes left, so a hostile length cannot allocate more than
// the input's size.
package records
