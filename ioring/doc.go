// Package ioring owns the shard engines: the per-core event loops (Shard),
// the inbox through which other shards and goroutines hand work to a shard,
// and the network engines that accept connections for a shard.
//
// Two engines sit behind the Engine interface: netpoll (Go's runtime poller,
// one reader goroutine per connection; the baseline and the fallback) and
// uring (uring.go: one io_uring ring per shard, NewRingShard, with a
// multishot accept on the shard's SO_REUSEPORT listener, multishot recv
// from a provided buffer ring, frames cut on the loop, and responses sent
// through the ring with send/writev and splice). The io.engine property
// selects one.
//
// Measured choices (2-vCPU VM, Linux 6.18, BenchmarkWake/BenchmarkShardPost):
//   - Inbox wake-up: eventfd (a read armed on the ring, written by posters
//     only while the loop sleeps) and IORING_OP_MSG_RING cost the same
//     ring-to-ring round trip (4.7-6.6 us vs 4.7-7.9 us for two wake-ups),
//     and most posters (deferred handler work, the controller) own no ring,
//     so the inbox uses the eventfd. A post-and-answer round trip to an idle
//     ring shard costs ~10 us against ~1 us for a channel shard: the loop
//     sleeps in io_uring_enter, and it calls runtime.Gosched before sleeping
//     (without it a goroutine it readied waited for sysmon: ~40 us) unless
//     GOMAXPROCS exceeds the number of ring loops (the broker adds one P per
//     ring shard, io.uring.spare.procs): the yield woke a thread per sleep.
//     Side by side at 10k produce requests/s on 2 shards, the spare Ps cut
//     the uring engine's publish p99 from 11.1 to 4.8 ms (netpoll 4.6 ms)
//     and its CPU per GB from 68 to 62 s (netpoll 31 s).
//   - send-zc: off by default (UringOptions.SendZCMin 0): on loopback the
//     receiver copies anyway and the notification CQE doubles completions;
//     worth measuring again on a real NIC with large fetch responses.
//
// It imports only numa, golang.org/x/sys and the standard library.
//
// Ownership: a Shard's loop goroutine is the only one that runs the closures
// posted to it; state owned by a shard (its partitions) is touched only from
// inside those closures. Post never blocks the caller for long: the inbox is
// buffered, and a full inbox applies backpressure.
package ioring
