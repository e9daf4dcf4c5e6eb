// Package nvme owns partition logs on disk in Apache Kafka's layout: segment
// files of record batches v2, sparse offset and time indexes, the leader-epoch
// checkpoint and partition.metadata, plus recovery after an unclean stop,
// rolling, retention and group commit.
//
// It imports only ioring (for ring-submitted I/O), numa and the standard
// library, plus golang.org/x/sys/unix (fdatasync) and the compression
// libraries (klauspost/compress, pierrec/lz4) that checking keys of
// compressed batches on compacted topics needs; it must not import appliance,
// cluster or tiering.
//
// Parts: BatchHeader and ValidateBatches (batch v2 header, validation,
// record walking), the decompressor, segment (one .log with in-memory
// copies of its indexes, offsetEntry and timeEntry), Open's recovery
// (Log.recoverActiveSegment, Log.loadClosedSegment), CleanShutdownFile (the
// marker a clean Close leaves, which spares the next Open the last
// segment's scan), Log (Open, Append, Read, rolling), Log.ApplyRetention,
// Log.OffsetForTimestamp, the leader-epoch cache (Log.AssignEpoch),
// WritePartitionMetadata, GroupCommitter, the file interface (which a
// direct-I/O or fault-injecting implementation replaces; see
// NewGroupCommitterFunc for injected sync failures), directFile
// (log.io.mode=direct: O_DIRECT segment files with an aligned tail buffer),
// BlockCache (the per-shard cache of aligned buffers that direct-mode
// fetches send from), directFile.submit (segment writes through the shard's
// ring, one round in flight per file) and Log.WrittenEndOffset,
// BlockPrefetch (the blocks a fetch would miss, read through a ring first),
// Log.preallocate (fallocate to segment.bytes, segment.trimLog at roll and
// close, zeros after the data end recovery's scan), ProbeDevice (sysfs and
// statx facts of the data directory's device, O_DIRECT probe), the cleaner
// (log compaction: Log.PrepareClean and Log.CommitClean on the owner shard,
// the swap protocol; CleanJob.Run, the pass that runs off the shard; the
// compressor that recompresses, also behind Recompressor, which rewrites a
// produced batch to a topic's compression.type off the shard; TokenBucket, the I/O token bucket;
// Log.completeSwaps, finishing a swap at Open), Log.TruncateTo, and the
// node's identity in each log directory: meta.properties (MetaProperties,
// MetaDirs, which `ringbroker format` and the broker's start share) with
// Kafka's UUIDs (UUID, RandomUUID, RandomDirectoryID).
//
// Truncation: Log.TruncateTo(offset) removes the records at and above
// offset as Kafka's UnifiedLog.truncateTo does (replication calls it with
// a follower's divergence point): whole batches only, so the log end
// offset becomes offset or the base offset of the batch holding it;
// segments above are deleted, the one holding offset becomes the active
// segment with its indexes cut, producer state, transaction index and
// leader-epoch cache (entries starting at or past the new end) follow;
// at or above the end it changes no record; below the first segment's
// base it empties the log and restarts it at offset (Kafka's
// truncateFullyAndStartAt). A durable marker file, .truncating (target
// offset, cut or full), written before anything changes and removed
// after everything is durable, makes it atomic across a crash: Open
// finds the marker and finishes the truncation, so a kill at any moment
// leaves the old log or the truncated one (the comment above
// truncationMarkerFile gives the steps and the argument).
//
// Preallocated segments: the active .log is segment.bytes long on disk with
// zeros after the data; a recovery scan that meets an all-zero batch header
// takes it as the end of the log (a zero batchLength is never a valid batch)
// and truncates there without a warning.
//
// Ownership: a Log belongs to exactly one shard goroutine. Sync targets are
// handed to the shard's group-commit goroutine, which only calls fdatasync.
//
// On-disk layout of a partition directory <topic>-<partition>/:
//
//	00000000000000000000.log        record batches v2, concatenated, as Kafka stores them
//	00000000000000000000.index      8-byte entries: relative offset (int32), position (int32), big-endian
//	00000000000000000000.timeindex  12-byte entries: timestamp (int64), relative offset (int32)
//	leader-epoch-checkpoint         text: version, count, "epoch startOffset" lines
//	partition.metadata              text: "version: 0" and "topic_id: <base64 uuid>"
//
// Record batch v2 header (61 bytes, big-endian):
//
//	0  baseOffset int64        8  batchLength int32     12 partitionLeaderEpoch int32
//	16 magic int8 (=2)         17 crc uint32 (CRC32C of bytes 21..end)
//	21 attributes int16        23 lastOffsetDelta int32 27 baseTimestamp int64
//	35 maxTimestamp int64      43 producerId int64      51 producerEpoch int16
//	53 baseSequence int32      57 recordCount int32     61 records...
package nvme
