// Package ioring owns the shard engines: the per-core event loops (Shard),
// the inbox through which other shards and goroutines hand work to a shard,
// and the network engines that accept connections for a shard.
//
// Two engines sit behind the Engine interface: netpoll (Go's runtime poller,
// one reader goroutine per connection; the baseline and the fallback) and
// uring (one io_uring ring per shard, NewRingShard; listeners marked in
// UringOptions.Netpoll, the broker's TLS listeners, are accepted and
// served as netpoll serves them, acceptLoop; the others get a multishot
// accept on the shard's SO_REUSEPORT listener, multishot recv from a
// provided buffer ring, frames cut on the loop, and responses sent through
// the ring with send/writev and splice; NewUring makes the engine,
// uringShard.onAccept is the accept path, and RingConn.armRecv,
// RingConn.kick and RingConn.loadFileParts start a connection's receive,
// send and file-part paths). The io.engine property selects one.
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
//   - The Go scheduler: a ring loop never goes through the scheduler, so
//     sysmon took it for a hog every 10 ms, preempting it or taking its P
//     from io_uring_enter and then polling every 20 us for a millisecond
//     (~310 retakes/s at 10 MB/s on 2 shards: sysmon alone ~23% of the
//     broker's CPU). The loop yields every 8 ms (schedYieldEvery) and,
//     while busy, sleeps only until its next yield is due (sleepFor), so
//     sysmon never finds it in io_uring_enter with a 10 ms old tick. Handing
//     the P back on every wait instead (entersyscallblock) was worse: each
//     wake-up then woke sysmon from its deep sleep (27k vs 16k switches).
//   - Large frames (over 16 KiB) are received straight into the request's
//     storage (FrameSink) instead of through the connection's accumulation
//     buffer: one copy instead of two (max-rate produce ~180 -> ~250 MB/s).
//   - File parts of answers up to UringOptions.FileCopyMax (64 KiB) are read
//     with IORING_OP_READ (inline when page-cached) and sent with the
//     answer's header in one writev: io_uring runs every splice on an io-wq
//     worker, two thread hand-offs per part. Larger parts are spliced.
//   - Plug padding (Options.PlugPad): io_uring plugs the block layer only
//     for submissions of three or more SQEs, so a ring shard's usual
//     direct-mode round (two adjacent writes) went to the device as two
//     requests with two notifications; a skipped-CQE NOP makes it one.
//     At 10 MB/s the uring broker's CPU per GB fell from 0.80 to 0.69 of
//     netpoll's (3 rounds side by side).
//   - Spinning before sleeping (20-50 us) cut context switches by a
//     quarter but cost more CPU than it saved, so the loop sleeps at once.
//
// It imports only numa, golang.org/x/sys and the standard library.
//
// Ownership: a Shard's loop goroutine is the only one that runs the closures
// posted to it; state owned by a shard (its partitions) is touched only from
// inside those closures. Post never blocks the caller for long: the inbox is
// buffered, and a full inbox applies backpressure.
package ioring
