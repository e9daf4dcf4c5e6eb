// Package txn owns the transaction coordinator's state (KIP-98, transaction
// version 1): the per-__transaction_state-partition Manager and its state
// machine (state.go), the TxnMetadataKey/TxnMetadataValue records it writes
// and replays, the transaction settings (Config, ConfigFromProps) and the
// PRODUCER_FENCED downgrade older clients need (FencedCode).
//
// It imports appliance/wire's neighbours only (kmsg, kerr) and nothing of
// appliance or of the other concept packages. What a Manager needs of the
// broker (a clock, durable appends to its __transaction_state partition,
// control markers written to the transaction's partitions) is the Env
// interface, implemented in appliance (txn_coordinator.go), which also
// places ids on partitions, replays the log on load, runs the timeout
// ticker and answers the transaction APIs.
//
// Goroutines: a Manager is owned by the shard that owns its
// __transaction_state partition; every method, and every callback it is
// given or gives back through Env, runs on that shard's loop. It never
// blocks and holds no lock.
package txn
