// Package share is the share groups (KIP-932, "Queues for Kafka") of a
// ringbroker node: membership and assignment on the group's coordinator
// (Manager, beside the classic groups of the same __consumer_offsets
// partition, with which it shares one group id namespace), the persisted
// share-partition start offsets (our own __consumer_offsets key versions
// 100 and 101), the in-flight record state machine of each share-partition
// (sharePartition: Available, Acquired, Acknowledged, Archived, delivery
// counts and acquisition locks), share sessions, the acquisition pass of
// ShareFetch and ShareAcknowledge (sharePass), the flusher of changed start
// offsets (Store), and the GROUP config resources (Config, ConfigFromProps).
// Register puts the seven share APIs into the broker's wire.Table; each
// handler file is named after its API and opens with its behaviour and
// versions.
//
// What it needs of the broker it declares as Host (shards, a partition on
// its shard as a Partition, the image as an Image, the coordinator's
// placement, the authorizer); appliance satisfies it with a small adapter
// and wires the Store into the group coordinator at start (NewStore,
// AddManager per partition, Start, FlushOnClose at close). It imports
// neither appliance nor another concept package: the classic groups it
// needs are the ClassicGroups interface, and the group coordinator learns
// of share groups through its own seam, which a Manager satisfies
// (IsShareGroup, EachShareGroup, DeleteShareGroup).
//
// Ownership: a share-partition is touched only on its topic partition's
// shard (Store's per-shard maps), a Manager only on its __consumer_offsets
// partition's shard (handlers ask it with wire.Ask through askShare);
// share sessions are guarded by Store.mu, a leaf lock held only to check
// and move an epoch.
package share
