// Package ioring owns the shard engines: the per-core event loops (Shard),
// the inbox through which other shards and goroutines hand work to a shard,
// and the network engines that accept connections for a shard.
//
// Two engines sit behind the Engine interface: netpoll (Go's runtime poller,
// one reader goroutine per connection; the baseline and the fallback) and,
// in a later change, uring (one io_uring ring per shard). The io.engine
// property selects one.
//
// It imports only numa, golang.org/x/sys and the standard library.
//
// Ownership: a Shard's loop goroutine is the only one that runs the closures
// posted to it; state owned by a shard (its partitions) is touched only from
// inside those closures. Post never blocks the caller for long: the inbox is
// buffered, and a full inbox applies backpressure.
package ioring
