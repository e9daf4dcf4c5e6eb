package nvme

import (
	"errors"
	"log/slog"
	"os"
	"time"
)

// This file fixes the API that the appliance package programs against.
// Implementations live in the other files of the package.

// Sentinel errors. The appliance maps them to Kafka error codes once, at the
// protocol boundary (see appliance/wire.ErrCode).
var (
	// ErrCorruptMessage: a batch's framing or checksum is bad (CRC32C
	// mismatch, batchLength inconsistent with the bytes, a body that does not
	// decompress), or stored data does not parse. Kafka: CORRUPT_MESSAGE (2).
	ErrCorruptMessage = errors.New("corrupt record batch")
	// ErrMessageTooLarge: one batch is larger than max.message.bytes.
	// Kafka: MESSAGE_TOO_LARGE (10).
	ErrMessageTooLarge = errors.New("record batch larger than max.message.bytes")
	// ErrUnsupportedMagic: a batch whose magic is not 2. In a produce
	// request Kafka answers INVALID_RECORD (87): ProduceRequest v3+ may
	// carry only magic 2 batches.
	ErrUnsupportedMagic = errors.New("record batch magic is not 2")
	// ErrInvalidRecord: the records break a rule of Kafka's produce
	// validation: no batch, a record count that disagrees with the batch's
	// offsets or its records, records that do not parse, a keyless record on
	// a compacted topic. Kafka: INVALID_RECORD (87).
	ErrInvalidRecord = errors.New("invalid record")
	// ErrInvalidTimestamp: a record's CreateTime timestamp is outside the
	// topic's bounds (message.timestamp.before.max.ms,
	// message.timestamp.after.max.ms). Kafka: INVALID_TIMESTAMP (32).
	ErrInvalidTimestamp = errors.New("record timestamp out of range")
	// ErrOffsetOutOfRange: a read outside [log start offset, log end offset].
	// Kafka: OFFSET_OUT_OF_RANGE (1).
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrLogClosed: the log was closed or went offline after an I/O error.
	// Kafka: KAFKA_STORAGE_ERROR (56).
	ErrLogClosed = errors.New("log is closed or offline")
	// ErrNoDescriptors: a segment roll could not create the new segment's
	// files because the process or system is out of file descriptors
	// (EMFILE, ENFILE). Nothing was written and the log stays online with
	// its active segment; the next append (or MaybeRoll) tries the roll
	// again. Kafka: KAFKA_STORAGE_ERROR (56), retriable.
	ErrNoDescriptors = errors.New("out of file descriptors")
)

// Options configures one partition log. Zero values take Kafka's defaults
// (see (*Options).withDefaults); names in brackets are the Kafka properties.
type Options struct {
	SegmentBytes       int64            // [segment.bytes / log.segment.bytes] default 1 GiB
	SegmentMs          int64            // [segment.ms / log.roll.ms] default 7 days; <= 0 after defaults means never
	IndexIntervalBytes int32            // [index.interval.bytes] default 4096
	MaxIndexBytes      int32            // [segment.index.bytes] default 10 MiB; a segment rolls when its index is full
	RetentionMs        int64            // [retention.ms] default 7 days; -1 keeps forever
	RetentionBytes     int64            // [retention.bytes] default -1 (no size limit)
	FileDeleteDelay    time.Duration    // [file.delete.delay.ms] default 60 s: deleted segments keep their fds open this long
	LogStartOffset     int64            // restored from the log-start-offset checkpoint; 0 if unknown
	Logger             *slog.Logger     // nil means slog.Default()
	Now                func() time.Time // nil means time.Now (tests inject a clock)
	// IOMode is IOModeBuffered ("" means it) or IOModeDirect [log.io.mode]:
	// see directFile. Direct mode always preallocates.
	IOMode string
	// Preallocate fallocates the active segment to SegmentBytes and trims it
	// when it rolls or closes [preallocate / log.preallocate].
	Preallocate bool
	// PreallocateChunk is how far ahead of its data direct mode (without
	// Preallocate) fallocates the active segment, in bytes, rounded up to
	// 1 MiB; 0 means DefaultPreallocateChunk [log.io.preallocate.chunk.bytes].
	PreallocateChunk int64
	// PreallocateUnwritten leaves the chunks direct mode fallocates past
	// the first of a segment unwritten, for the data writes to convert
	// (ext4 marks them written as each write completes), instead of
	// writing zeros over them ahead of the data (Log.growAllocation says why)
	// [log.io.preallocate.zero=false].
	PreallocateUnwritten bool
	// Cache is the shard's block cache for direct mode; nil gives the log a
	// private one of DefaultCacheBytes / 16.
	Cache *BlockCache
	// Alignment is the O_DIRECT block size (DeviceInfo.Alignment); 0 means 4096.
	Alignment int
}

// AppendOptions are the per-append knobs the owner shard passes with each produce.
type AppendOptions struct {
	LogAppendTime   bool  // [message.timestamp.type=LogAppendTime]: rewrite maxTimestamp and the timestamp-type bit, recompute CRC
	MaxMessageBytes int32 // [max.message.bytes] default 1048588; a larger batch gets ErrMessageTooLarge
	LeaderEpoch     int32 // written into each batch's partitionLeaderEpoch field
	RequireKeys     bool  // compacted topics: a record without a key gets ErrInvalidRecord
	// CheckTimestamps refuses, with ErrInvalidTimestamp, a batch with a
	// record timestamp below now-TimestampBeforeMaxMs or above
	// now+TimestampAfterMaxMs (ms; KIP-937's
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms).
	// It does nothing with LogAppendTime, as Kafka checks CreateTime only.
	CheckTimestamps      bool
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
}

// AppendInfo describes what Append stored.
type AppendInfo struct {
	FirstOffset   int64 // offset given to the first record (the first batch's new baseOffset)
	LastOffset    int64 // offset of the last record
	LogAppendTime int64 // ms; -1 when the topic uses CreateTime
	NumRecords    int
	Bytes         int // bytes written to the segment
	// Duplicate: the batch repeats one the producer already appended (same
	// producer id, epoch and sequence range); nothing was written and the
	// offsets are the original ones (KIP-98).
	Duplicate bool
}

// Chunk is a byte range of a segment file that a fetch response sends as it is
// (sendfile / splice / pread). File stays open at least Options.FileDeleteDelay
// after the segment is deleted, so a response in flight can finish.
// In direct mode File is nil and Mem holds the Len bytes (from Pos) in a
// BlockCache buffer, which is not written again while Ref holds it: send it
// as it is, then call Ref.Release (once; nil-safe) when the kernel is done
// with the bytes. A reader that never releases only keeps the buffer from
// being reused (the garbage collector frees it); one that releases and
// reads on may see another block's bytes.
type Chunk struct {
	File *os.File
	Mem  []byte
	Ref  *BlockBuf
	Pos  int64
	Len  int32
}

// ReadResult is the outcome of Read: whole batches, in offset order.
type ReadResult struct {
	Chunks []Chunk
	Bytes  int32 // sum of the chunks' lengths
	// Limited: the read stopped at a batch below maxOffset that maxBytes
	// left out, so more is readable than it gave (a fetch's min_bytes
	// counts such a partition at its limit, as Kafka's delayed fetch does).
	Limited bool
}

// SegmentInfo describes one segment, for DescribeLogDirs and tooling.
type SegmentInfo struct {
	BaseOffset int64
	Size       int64
	Path       string
}

// Log is one partition's log: a directory of segments in Kafka's layout.
// A Log is owned by one shard goroutine: none of its methods may be called
// concurrently, except Sync, which the group-commit goroutine calls.
//
//	func Open(dir string, opts Options) (*Log, error)
//	func (l *Log) Append(records []byte, o AppendOptions) (AppendInfo, error)
//	func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error)
//	func (l *Log) ReadInto(dst []Chunk, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error)
//	func (l *Log) LogStartOffset() int64
//	func (l *Log) LogEndOffset() int64
//	func (l *Log) Size() int64
//	func (l *Log) Segments() []SegmentInfo
//	func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool)
//	func (l *Log) MaxTimestamp() (timestamp int64, offset int64)
//	func (l *Log) SetLogStartOffset(offset int64) error
//	func (l *Log) TruncateTo(offset int64) error
//	func (l *Log) ApplyRetention() (deletedSegments int, err error)
//	func (l *Log) MaybeRoll() error
//	func (l *Log) SyncTarget() (f *os.File, endOffset int64)
//	func (l *Log) Close() error
//	func (l *Log) Delete() error
//	func (l *Log) LeaderEpochs() []EpochEntry
//	func (l *Log) AssignEpoch(epoch int32, startOffset int64) error
//	func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64)

// EpochEntry is one line of the leader-epoch cache: a leader epoch and the
// first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}
