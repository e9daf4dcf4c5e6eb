// Package group is the group coordinator of a ringbroker node: classic
// groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; Kafka's Empty,
// PreparingRebalance, CompletingRebalance, Stable and Dead states, static
// membership, KIP-394 member ids), KIP-848 consumer groups
// (ConsumerGroupHeartbeat, ConsumerGroupDescribe) with their uniform and
// range assignors, committed offsets (OffsetCommit, OffsetFetch,
// OffsetDelete, retention and expiry), transactional offset commits
// pending until their transaction's marker, and the group admin APIs
// (ListGroups, DescribeGroups, DeleteGroups). Register puts its handlers
// into the broker's wire.Table; each handler file is named after its API
// and opens with its behaviour and versions.
//
// Placement: group g is coordinated by __consumer_offsets partition
// PartitionFor(g, n), Kafka's abs(hashCode(g)) % offsets.topic.num.partitions.
// Each partition has one Manager holding its groups; the Manager's records
// (group metadata, offsets, consumer group epochs and assignments) are
// Kafka's __consumer_offsets records, appended to that partition.
//
// What it needs of the broker, it declares (the broker satisfies them with
// small adapters and wires them at construction):
//   - Env, per partition: a clock, timers whose callbacks run on the
//     partition's shard, member ids, Persist (append records and learn when
//     they are durable), Post (run after the queued work) and Warn;
//     TxnPersister adds the transactional append;
//   - Shards: post a closure to the shard that owns partition p, and the
//     broker's closing signal;
//   - Broker, for the handlers: the loaded Coordinator (nil until the
//     partitions are replayed) and the metadata Image (topics' ids and
//     partition counts, for OffsetCommit checks and KIP-848 subscriptions);
//   - ShareGroups, per partition: the share groups (KIP-932) that share the
//     group id namespace.
//
// Share groups: the broker keeps its type for a __consumer_offsets
// partition, which holds both that partition's Manager and its share group
// manager, so this package never names share groups' types: a Manager sees
// them only as ShareGroups (is an id a share group, list them, delete
// one), and the share side sees the Manager only through HasGroup. The
// broker also replays the partition's log: share records go to the share
// groups, the others to the Manager (LoadRecord, LoadTxnRecord,
// LoadTxnMarker, then FinishLoad). When share groups get a package of
// their own, it declares its side the same way and neither imports the
// other.
//
// Transactions: the transaction coordinator completes pending
// transactional offsets (CompleteTxn) when it writes its marker on a
// __consumer_offsets partition, and TxnOffsetCommit hands offsets over
// with TxnCommitOffsets. This package exports those and never imports the
// transaction coordinator; the needing side declares the interface and the
// broker wires the two.
//
// Imports: wire, nvme (control record types), kmsg/kerr and the standard
// library; not appliance, and no other concept package.
//
// Goroutines: each Manager is owned by its __consumer_offsets partition's
// shard: every method runs there, never blocks, and answers that wait
// (a JoinGroup until the rebalance completes, a commit until it is
// durable) are callbacks run on that shard. Handlers run on the
// connection's goroutines and reach a Manager only through Ask (a closure
// posted to the shard; the reply is awaited off the shard, in a
// wire.Deferred). The Coordinator is immutable once built.
package group
