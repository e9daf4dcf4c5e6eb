// Package txn owns the transaction coordinator (KIP-98, transaction
// version 1) and the producer-id APIs: the per-__transaction_state-partition
// Manager and its state machine (txnMeta, driven by Manager.InitProducer,
// Manager.AddPartitions and Manager.EndTxn), the TxnMetadataKey/Value
// records it writes and replays, the Coordinator (Start) that places
// transactional ids on partitions, loads them, completes what a restart
// left half done and aborts timed-out transactions (Manager.CheckTimeouts),
// the producer-id block allocator (ProducerIDs), the transaction settings
// (Config), and the handlers of InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, TxnOffsetCommit, DescribeTransactions and
// ListTransactions (Register).
//
// It imports appliance/wire and nothing of appliance or of the other
// concept packages. What it needs of the broker is declared here and
// implemented by appliance (its txnBroker, txnLog and txnGroups adapters,
// and Broker.reserveProducerIDs): Broker (the __transaction_state
// partitions as Logs, control markers written to data partitions,
// producer-id blocks reserved through the controller, the current image's
// partition counts) and Groups (the group coordinator's
// side of AddOffsetsToTxn and TxnOffsetCommit). Transactional produce is
// verified here (Coordinator.Produce); the produce path in appliance hands
// its pending appends over as ProduceTargets.
//
// Goroutines: a Manager is owned by the shard that owns its
// __transaction_state partition; every Manager method, and every callback
// it is given or gives back through Env, runs on that shard's loop (Log.Post),
// never blocks and holds no lock. Handlers run on the dispatching
// connection's goroutine or loop and wait for the shard's answer only in
// their wire.Deferred part. Start runs once before serving and starts one
// goroutine, the timeout ticker, which ends when Broker.Closing closes.
// ProducerIDs is safe for concurrent use.
package txn
