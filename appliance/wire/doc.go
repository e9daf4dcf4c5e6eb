// Package wire is the seam between a ringbroker node's connections and the
// code that answers Kafka requests: the per-broker dispatch Table of API
// handlers, the Request a handler receives, the results a handler may
// return, the mapping of errors to Kafka error codes (ErrCode), the
// authorization hook (Authorizer) through which handlers ask whether a
// request may perform an operation, the tagged-field encoders of the
// hand-encoded Fetch response (AppendFetchPartitionTags,
// AppendFetchResponseTags), Produce's check of a client's record batch
// (ClientBatchViolation), and Ask, the one typed way to run a
// closure on the shard that owns a coordinator's state and wait for its
// reply.
//
// It is a small, lower package. It imports nvme (for its error sentinels)
// and kmsg/kerr, and no appliance package: appliance and the concept
// packages under it (group, txn, share, security, quota, metadata) import
// wire, never the reverse. A concept package registers its handlers into
// the broker's Table with a function of its own (say
// security.Register(t *wire.Table, deps)), called by appliance when it
// builds the broker; it declares what it needs of the broker as small
// interfaces, which appliance satisfies.
//
// No package-level mutable state: every broker builds its own Table, so
// several brokers run in one process (tests).
//
// Goroutines: a Table is filled before the broker serves and is read-only
// afterwards, so Lookup and Sorted are safe from every connection's
// goroutine without locking. A Request belongs to the goroutine (or shard
// loop) that dispatched it until its handler returns; a Deferred result
// runs on a goroutine of its own. Ask's closure runs on the owner's shard
// and must not block; Wait blocks the calling goroutine, never a shard.
package wire
