// Package membership is the active controller's broker membership logic,
// as Kafka's KRaft controller has it (ClusterControlManager,
// BrokerHeartbeatManager, the fencing part of ReplicationControlManager,
// StripedReplicaPlacer): broker registration (BrokerRegistration, API 62),
// heartbeats, fencing and unfencing (BrokerHeartbeat, API 63), controlled
// shutdown, unregistration (UnregisterBroker, API 64), the leadership
// changes that fencing causes, and replica placement for new partitions.
//
// It is made of pure state machines: no I/O, no goroutines, no locks, and
// time only from an injected clock. The caller (the controller's loop)
// owns a Registry and calls it from one goroutine.
//
// # Decide, then apply
//
// Every request is handled in two steps, as Kafka's controller does:
//
//   - decide: Registry.Register, Registry.Heartbeat, Registry.Unregister
//     and Registry.FenceStale read the current state and return the
//     metadata records (cluster/records) that the request turns into,
//     or an error wrapping Kafka's error (kerr) for the response. They
//     change nothing that other controllers must agree on.
//   - apply: Registry.Apply replays one committed record at its offset in
//     __cluster_metadata. Only Apply changes the replicated state, so a
//     standby controller, or a controller restarting from a snapshot and
//     the log, rebuilds the same registry by applying the same records.
//
// The active controller applies the records it decided, in order, before
// it decides the next request (Kafka's controller applies its records to
// its in-memory state as it writes them), and rebuilds from the committed
// log when it loses leadership. A broker's epoch is the offset its
// RegisterBrokerRecord is applied at, so the BrokerRegistration response
// is answered after the record commits, with Registry.Broker's Epoch.
//
// What is not replicated: a broker's last heartbeat time and reported
// metadata offset live only in the active controller (Kafka's
// BrokerHeartbeatManager); Registry.Activate gives every unfenced broker a
// fresh session when a controller becomes active.
//
// # Partitions
//
// The partition table is not owned here: the package declares the one
// method it needs (PartitionTable) and the metadata image satisfies it.
// MemTable is an in-memory table for tests and tools that applies
// PartitionRecord and PartitionChangeRecord as the image does (a leader
// change bumps the leader epoch, every change bumps the partition epoch).
//
// It imports cluster/records and franz-go's kmsg and kerr, never
// appliance or tiering.
package membership
