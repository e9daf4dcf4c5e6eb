// Package cleaner schedules the log cleaner (log compaction,
// cleanup.policy=compact) over a broker's compacted partitions; the
// cleaning pass itself (offset map, copy, swap) is nvme.CleanJob.
//
// log.cleaner.threads goroutines, off the shard loops, each repeat: ask
// every shard (Host.Compacted, through the shard's inbox) for its
// compacted partitions' cleanability, pick the dirtiest one that is due
// (max.compaction.lag.ms exceeded first, then the highest dirty ratio at
// or above min.cleanable.dirty.ratio) and not being cleaned by another
// thread, ask its shard for a job (nvme.Log.PrepareClean), run the job on
// the thread under the shared log.cleaner.io.max.bytes.per.second token
// bucket, and hand it back to the shard (nvme.Log.CommitClean), which
// swaps the segments in. With nothing due a thread sleeps
// log.cleaner.backoff.ms (that and the token bucket's rate change at run
// time through Cleaner.Reconfigure, the dynamic broker configs). The
// broker calls Cleaner.Stop before it closes
// its partitions; a stopped pass removes its files.
//
// Cleaner state survives restarts in <log.dirs>/cleaner-offset-checkpoint
// (Kafka's format: version 0, count, "topic partition offset" lines, the
// first dirty offset) and <log.dirs>/cleaner-horizon-checkpoint
// (ringbroker's: version 0, count, "topic partition topicId end:ms,..."
// lines, when each part of the log was cleaned, which decides when
// tombstones and transaction markers may go). A state whose topic id does
// not match the topic's (a topic deleted and created again) is dropped.
//
// The package imports nvme and nothing of appliance or of the concept
// packages: what it needs of the broker (its shards, their partitions,
// topic configs) is the Host interface, which appliance implements.
//
// Goroutines and locks: the cleaner threads are the package's own; a
// partition and its log are touched only inside Host callbacks, which run
// on the partition's shard. Cleaner.mu guards the states and the busy set;
// ckptMu serialises checkpoint writes and is taken before mu.
package cleaner
