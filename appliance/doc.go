// Package appliance wires a ringbroker node: configuration, the metadata
// image and its log, the controller, partitions on their owner shards, the
// Kafka wire protocol (one handler file per API key, each opening with a
// comment on its behaviour and versions and declaring its apiDef, which
// newAPITable binds into the broker's wire.Table), the group coordinator's
// wiring (appliance/group holds the coordinator; groupCoordinator and
// offsetsPartition give it partitions, shards and the image), the share
// groups' wiring (KIP-932: appliance/share holds them; shareHost gives
// them shards, partitions and the image), the transaction
// coordinator, and the listeners (config.ParseListeners); SASL and ACLs are
// appliance/security's. It satisfies the small interfaces that cluster,
// tiering and its concept packages declare.
//
// It may import cluster, tiering, nvme, ioring, numa and its concept
// packages (appliance/wire and the packages that register into it);
// nothing imports it except tools/. Concept packages so far: quota (client
// quotas and their handlers, the quota table and byte-rate enforcement;
// appliance keeps quotaListener, the quota.Broker adapter quotaBroker and
// the produce and fetch calls, produceQuota and fetchQuota) and security
// (ACLs, the authorizer and its per-API checks, SCRAM credentials, SASL
// authentication and the ACL/SCRAM admin handlers; appliance keeps the
// image's aliases, securityListener, the security.Broker adapter
// securityBroker, one-line Broker wrappers of the checks such as
// Broker.topicDenied, and the *conn methods of wire.Conn and
// security.SASLConn). Both tables are rebuilt by metadata listeners from
// published deltas (Broker.publish), never on read. Share groups live
// in share: share.Manager on the coordinator, share.Store's
// share-partitions and sessions, their handlers; shareHost and sharePart
// are its share.Host and share.Partition adapters.
//
// Requests: a connection decodes a frame, looks its API up in the broker's
// wire.Table (built once in New; no package-level table, so several brokers
// run in one process) and hands the handler a wire.Request whose Owner is
// the request's reqState and whose Conn is the *conn (connOf and stateOf
// get them back without allocating). Handlers that ask a coordinator's
// shard use wire.Ask through askGroup, txn.Ask and share's askShare, each
// typed by its reply.
//
// Goroutines and ownership:
//   - each shard's loop (ioring.Shard) owns the partitions placed on it
//     (shardState.parts): a partition is read or written only from closures
//     posted to its shard; what other goroutines may read of it without a
//     hop (its offsets, for fetches with nothing new) the owner publishes in
//     its partView, which also holds the parked Fetch
//     long polls under a leaf mutex;
//   - each connection has a reader goroutine that decodes frames and
//     dispatches them in order (so appends from one connection keep their
//     order), a writer goroutine that writes responses in request order, and
//     one goroutine per request that has to wait (acks=all, long polls,
//     metadata changes);
//   - the controller (ctl.mu) serialises metadata changes; readers load the
//     immutable Image from an atomic pointer without locking; with a
//     metadata quorum (appliance/controller) its loop goroutine publishes
//     every committed change, without ctl.mu;
//   - a share-partition (appliance/share) is owned by its topic
//     partition's shard (share.Store's per-shard maps); share groups by
//     their __consumer_offsets partition's shard; share sessions are
//     guarded by share.Store's mutex, a leaf lock held only to check and
//     move an epoch.
//
// Lock order: ctl.mu, then store.lsoMu, then front.mu. No lock is held while
// waiting on a shard, except ctl.mu while the controller opens or closes
// partitions (shards never take ctl.mu).
package appliance
