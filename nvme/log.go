package nvme

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"sort"
	"syscall"
	"time"
)

// Log is one partition's log: a directory of segments in Kafka's layout (see
// the package comment, and Options, AppendInfo and ReadResult for its API). It is owned by one shard goroutine;
// its methods must not be called concurrently. The file returned by
// SyncTarget may be fdatasynced from another goroutine.
type Log struct {
	dir    string
	opts   Options
	logger *slog.Logger
	open   opener
	sf     segFiles // how segment .log files are opened (Log.openSegFile)
	// segs are ascending by base offset; the last one is active.
	segs []*segment
	// startOffset is the log start offset: reads below it are out of range.
	startOffset int64
	epochs      []EpochEntry
	closed      bool
	// failure is the first I/O error; afterwards calls return ErrLogClosed.
	failure error
	// Rolls put off for want of descriptors (rollLater): those not yet
	// logged, and when the last warning was.
	rollsPutOff     int
	rollLaterLogged time.Time
	dec             decompressor
	// producers is the idempotent-producer state by producer id (KIP-98).
	producers map[int64]*ProducerEntry
	txn       txnState              // open transactions and aborted ones (Log.txnAppend)
	hdr       [BatchHeaderSize]byte // scratch for batch headers
	scratch   []byte                // scratch for index entries

	// Ring writes (Log.markWrite, Log.WrittenEndOffset): appends not yet all on the device,
	// oldest first from markHead, and the hook run when they are.
	marks     []writeMark
	markHead  int
	onWritten func()

	// tail is where the active segment's last batches are published for
	// other goroutines (Log.publishTail); nil: not published.
	tail *TailView

	// truncHook, when set (tests), runs after each step of a truncation
	// (Log.truncStep), so that a test can kill the process there.
	truncHook func(step string)
}

// Open opens or creates the partition log in dir (created if missing) and
// recovers it: a cleaner swap interrupted after its commit point is
// completed (Log.completeSwaps), leftover .deleted/.cleaned and other
// .swap files are removed, closed
// segments' indexes are loaded (rebuilt when missing or inconsistent), and
// the last segment is scanned from the start, checking every batch's framing
// and CRC32C; it is truncated at the first bad batch and its indexes are
// rebuilt. After a clean Close (CleanShutdownFile) the last segment is
// loaded like a closed one instead. A truncation interrupted after its
// commit point (Log.finishTruncation) is finished; a truncation marker that does
// not parse fails the Open (it is written atomically, so only damage
// makes it so). opts.LogStartOffset is clamped to
// [first segment base, log end offset]. Leader epochs come from
// leader-epoch-checkpoint.
func Open(dir string, opts Options) (*Log, error) {
	return openLog(dir, opts, openOSFile)
}

func openLog(dir string, opts Options, open opener) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create partition directory %q: %w", dir, err)
	}
	l := &Log{dir: dir, opts: o, logger: o.Logger.With("dir", dir), open: open, sf: newSegFiles(o)}
	clean, err := l.hadCleanShutdown()
	if err != nil {
		return nil, err
	}
	bases, err := l.listDir()
	if err != nil {
		return nil, err
	}
	for i, base := range bases {
		var s *segment
		switch {
		case i < len(bases)-1:
			s, err = l.loadClosedSegment(base)
		case clean:
			s, err = l.reopenActiveSegment(base)
		default:
			s, err = l.recoverActiveSegment(base, false)
		}
		if err != nil {
			l.closeSegments()
			return nil, err
		}
		l.segs = append(l.segs, s)
	}
	trunc, truncating, err := l.readTruncationMarker()
	if err != nil {
		// As every failure after the segments opened (e.g. out of
		// descriptors here): trim the active segment's preallocated tail,
		// so the clean-shutdown marker stays true for the next start.
		l.abandonOpen()
		return nil, err
	}
	if len(l.segs) == 0 {
		base := o.LogStartOffset
		if truncating {
			// A truncation retired every segment and stopped before it
			// created the one it starts the log with (Log.truncateFully).
			base = trunc.target
		}
		s, err := l.recoverActiveSegment(base, true)
		if err != nil {
			return nil, err
		}
		l.segs = append(l.segs, s)
	}
	l.startOffset = min(max(o.LogStartOffset, l.segs[0].base), l.LogEndOffset())
	if err := l.loadEpochs(); err != nil {
		l.abandonOpen()
		return nil, err
	}
	if err := l.loadProducerState(); err != nil {
		l.abandonOpen()
		return nil, fmt.Errorf("cannot restore producer state of %q: %w", dir, err)
	}
	if err := l.loadTxnIndexes(); err != nil {
		l.abandonOpen()
		return nil, err
	}
	if truncating {
		if err := l.finishTruncation(trunc); err != nil {
			l.abandonOpen()
			return nil, err
		}
	}
	if clean {
		if err := l.clearCleanShutdown(); err != nil {
			l.abandonOpen()
			return nil, err
		}
	}
	return l, nil
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// usable returns ErrLogClosed after Close or an I/O failure.
func (l *Log) usable() error {
	if l.closed {
		return ErrLogClosed
	}
	if l.failure != nil {
		return fmt.Errorf("%w: %w", ErrLogClosed, l.failure)
	}
	return nil
}

// fail takes the log offline after an I/O error and returns the error to
// report, which wraps ErrLogClosed and err.
func (l *Log) fail(err error) error {
	if l.failure == nil {
		l.failure = err
		l.logger.Error("partition log offline after I/O error", "err", err)
	}
	return fmt.Errorf("%w: %w", ErrLogClosed, err)
}

// Append validates records (one or more record batches v2, see
// ValidateBatches), assigns them the next offsets and writes them to the
// active segment, rolling first when segment.bytes, segment.ms, a full index
// or the int32 relative-offset range asks for it. The batches are rewritten
// in place in records: baseOffset, partitionLeaderEpoch = o.LeaderEpoch and,
// with o.LogAppendTime, maxTimestamp = now (ms), the timestamp-type bit and
// the CRC. It is all or nothing: a validation error writes and rewrites
// nothing. Errors: those of ValidateBatches, ErrLogClosed (wrapping the
// cause) when the log is closed or an I/O error took it offline, and
// ErrNoDescriptors when a roll it needed was put off (nothing written).
func (l *Log) Append(records []byte, o AppendOptions) (AppendInfo, error) {
	if err := l.usable(); err != nil {
		return AppendInfo{}, err
	}
	if len(records) > maxSegmentBytes {
		return AppendInfo{}, fmt.Errorf("%w: %d bytes in one append, limit %d", ErrMessageTooLarge, len(records), maxSegmentBytes)
	}
	nowMs := l.opts.Now().UnixMilli()
	nb, nr, err := validateBatches(records, o, &l.dec, nowMs)
	if err != nil {
		return AppendInfo{}, err
	}
	// Idempotent producers (KIP-98): duplicates are answered with the
	// original offsets and not written again; sequence gaps and stale
	// epochs are refused. A client sends one batch per partition.
	var ph BatchHeader
	if pid := int64(binary.BigEndian.Uint64(records[offProducerID:])); pid >= 0 {
		if nb != 1 {
			return AppendInfo{}, fmt.Errorf("%w: a produce request from producer %d holds %d batches for one partition", ErrInvalidRecord, pid, nb)
		}
		ph, _ = ParseBatchHeader(records)
		if ph.BaseSequence >= 0 && ph.Attributes&AttrControl == 0 {
			e := l.producers[pid]
			lastSeq := seqAdd(ph.BaseSequence, ph.LastOffsetDelta)
			if dup, ok := e.duplicateOf(ph.ProducerEpoch, ph.BaseSequence, lastSeq); ok {
				return AppendInfo{FirstOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: -1, Duplicate: true}, nil
			}
			if err := checkSequence(e, ph.ProducerEpoch, ph.BaseSequence); err != nil {
				return AppendInfo{}, err
			}
		} else if e := l.producers[pid]; e != nil && ph.ProducerEpoch < e.Epoch {
			return AppendInfo{}, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, pid, ph.ProducerEpoch, e.Epoch)
		}
	} else {
		ph.ProducerID = -1
	}
	if l.shouldRoll(records, nb, int64(nr), o.LogAppendTime, nowMs) {
		if err := l.roll(nowMs); err != nil {
			return AppendInfo{}, err
		}
	}
	s := l.active()
	info := AppendInfo{FirstOffset: s.next, NumRecords: nr, Bytes: len(records), LogAppendTime: -1}
	if o.LogAppendTime {
		info.LogAppendTime = nowMs
	}
	be := binary.BigEndian
	next := s.next
	for pos := 0; pos < len(records); {
		b := records[pos:]
		size := batchLengthBase + int(int32(be.Uint32(b[offBatchLength:])))
		be.PutUint64(b[offBaseOffset:], uint64(next))
		be.PutUint32(b[offLeaderEpoch:], uint32(o.LeaderEpoch))
		if o.LogAppendTime {
			be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|AttrLogAppendTime)
			be.PutUint64(b[offMaxTimestamp:], uint64(nowMs))
			be.PutUint32(b[offCRC:], batchCRC(b[:size]))
		}
		next += int64(int32(be.Uint32(b[offLastOffsetDelta:]))) + 1
		pos += size
	}
	start := s.size
	l.growAllocation(s, start, int64(len(records)))
	if n, err := s.log.WriteAt(records, start); err != nil || n < len(records) {
		if err == nil {
			err = io.ErrShortWrite
		}
		_ = s.log.Truncate(start) // best effort: drop a partial write
		return AppendInfo{}, l.fail(fmt.Errorf("cannot write %d bytes to segment %q at %d: %w", len(records), s.path(logSuffix), start, err))
	}
	maxIdx, maxTime := indexLimits(l.opts.MaxIndexBytes)
	interval := int64(l.opts.IndexIntervalBytes)
	for pos := 0; pos < len(records); {
		b := records[pos:]
		size := batchLengthBase + int64(int32(be.Uint32(b[offBatchLength:])))
		base := int64(be.Uint64(b[offBaseOffset:]))
		last := base + int64(int32(be.Uint32(b[offLastOffsetDelta:])))
		s.track(start+int64(pos), size, last, int64(be.Uint64(b[offMaxTimestamp:])), interval, maxIdx, maxTime)
		if s.recent == nil {
			s.recent = new(recentRing)
		}
		s.recent.add(batchRef{pos: start + int64(pos), size: size, baseOffset: base, lastOf: last})
		pos += int(size)
	}
	if s.indexBacklog() >= indexFlushBytes {
		l.scratch, err = s.flushIndexes(l.scratch)
		if err != nil {
			return AppendInfo{}, l.fail(err)
		}
	}
	info.LastOffset = s.next - 1
	l.markWrite(s, info.FirstOffset)
	l.publishTail()
	if ph.ProducerID >= 0 {
		ph.MaxTimestamp = int64(be.Uint64(records[offMaxTimestamp:]))
		l.txnAppend(ph, records, info.FirstOffset, s.next)
		l.producerUpdate(ph, info.FirstOffset, info.LastOffset)
	}
	return info, nil
}

// shouldRoll reports whether an append of records (nb batches, nr offsets)
// must go to a new segment. An empty segment never rolls. segment.ms is
// judged as Kafka does: the appended batches' largest timestamp against the
// segment's first batch timestamp, or wall time since the segment was
// created when the segment has no timestamp.
func (l *Log) shouldRoll(records []byte, nb int, nr int64, logAppendTime bool, nowMs int64) bool {
	s := l.active()
	if s.size == 0 {
		return false
	}
	n := int64(len(records))
	maxIdx, maxTime := indexLimits(l.opts.MaxIndexBytes)
	if s.size+n > l.opts.SegmentBytes || s.size+n > maxSegmentBytes ||
		len(s.offIdx)+nb > maxIdx || len(s.timeIdx)+nb > maxTime ||
		s.next+nr-1-s.base > math.MaxInt32 {
		return true
	}
	if l.opts.SegmentMs <= 0 {
		return false
	}
	if s.firstTs < 0 {
		return nowMs-s.createdMs > l.opts.SegmentMs
	}
	incoming := nowMs
	if !logAppendTime {
		incoming = -1
		for pos := 0; pos < len(records); {
			b := records[pos:]
			incoming = max(incoming, int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])))
			pos += batchLengthBase + int(int32(binary.BigEndian.Uint32(b[offBatchLength:])))
		}
	}
	return incoming-s.firstTs > l.opts.SegmentMs
}

// MaybeRoll rolls the active segment when it is not empty and was created
// (or opened) more than segment.ms ago by the wall clock. Appends also roll
// by segment.ms, comparing record timestamps as Kafka does; this periodic
// check covers partitions that stop receiving data. Errors: ErrLogClosed,
// ErrNoDescriptors (the roll is put off; the log stays online).
func (l *Log) MaybeRoll() error {
	if err := l.usable(); err != nil {
		return err
	}
	nowMs := l.opts.Now().UnixMilli()
	s := l.active()
	if s.size == 0 || l.opts.SegmentMs <= 0 || nowMs-s.createdMs <= l.opts.SegmentMs {
		return nil
	}
	return l.roll(nowMs)
}

// Roll closes the active segment and starts a new one at the log end offset,
// unless the active segment is empty. Errors: ErrLogClosed, ErrNoDescriptors.
func (l *Log) Roll() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.active().size == 0 {
		return nil
	}
	return l.roll(l.opts.Now().UnixMilli())
}

// roll finishes the active segment (final time entry, trimmed and
// fdatasynced indexes and .log) and creates the next one.
func (l *Log) roll(nowMs int64) error {
	old := l.active()
	// The new segment's files are created before the old segment's
	// indexes are trimmed and closed, so that running out of descriptors
	// (sockets can take them all) costs a failed append, not the
	// partition: the old segment stays active and the roll is tried again.
	s := newSegmentState(l.dir, old.next, nowMs)
	size, err := l.openSegmentLog(s, true)
	if err != nil {
		if outOfDescriptors(err) {
			return l.rollLater(s, err)
		}
		return l.fail(err)
	}
	if size != 0 {
		s.closeFiles()
		return l.fail(fmt.Errorf("cannot roll: segment %q already exists with %d bytes", s.path(logSuffix), size))
	}
	l.preallocate(s)
	if err := s.rewriteIndexFiles(l.open, true); err != nil {
		if outOfDescriptors(err) {
			return l.rollLater(s, err)
		}
		s.closeFiles()
		return l.fail(err)
	}
	maxTime := int(l.opts.MaxIndexBytes) / timeEntrySize
	if l.scratch, err = old.deactivate(maxTime, l.scratch, true); err != nil {
		s.closeFiles()
		return l.fail(err)
	}
	l.segs = append(l.segs, s)
	l.publishTail() // empty: the new segment has no batches yet
	if err := l.writeProducerSnapshot(s.base); err != nil {
		l.logger.Warn("cannot write producer snapshot at roll", "err", err)
	}
	if err := syncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.logger.Debug("rolled segment", "baseOffset", s.base, "previousBytes", old.size)
	return nil
}

// outOfDescriptors reports whether err is the process's (EMFILE) or the
// system's (ENFILE) file table being full.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// rollLaterLogEvery bounds the warnings of rolls put off for want of
// descriptors: one per log per interval, with the count of those not logged.
const rollLaterLogEvery = 10 * time.Second

// rollLater undoes a roll that ran out of descriptors creating segment s:
// it closes and removes what was created (all empty) and returns
// ErrNoDescriptors, leaving the active segment as it was.
func (l *Log) rollLater(s *segment, cause error) error {
	s.closeFiles()
	for _, sfx := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := os.Remove(s.path(sfx)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.logger.Warn("cannot remove a file of a put-off roll", "file", s.path(sfx), "err", err)
		}
	}
	l.rollsPutOff++
	if now := time.Now(); now.Sub(l.rollLaterLogged) >= rollLaterLogEvery {
		l.logger.Warn("segment roll put off: out of file descriptors; appends get KAFKA_STORAGE_ERROR until a roll succeeds",
			"baseOffset", s.base, "err", cause, "put_off_since_last_log", l.rollsPutOff)
		l.rollLaterLogged, l.rollsPutOff = now, 0
	}
	return fmt.Errorf("%w: cannot roll segment at offset %d: %w", ErrNoDescriptors, s.base, cause)
}

// Read returns whole batches starting with the one that holds offset (a fetch
// offset inside a batch returns that whole batch), as ranges of segment
// files, possibly spanning segments. It stops before the total would exceed
// maxBytes, except that with minOneBatch the first batch is returned whole
// whatever its size (KIP-74), and it never includes a batch whose baseOffset
// is >= maxOffset (the high watermark or last stable offset). offset equal to
// the log end offset gives an empty result. Errors: ErrOffsetOutOfRange when
// offset is below the log start offset or above the log end offset;
// ErrLogClosed; ErrCorruptMessage (wrapped) when a stored batch header is
// inconsistent with its segment.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	return l.ReadInto(nil, offset, maxBytes, maxOffset, minOneBatch)
}

// ReadInto is Read that appends the chunks to dst[:0], so a caller that
// keeps dst between reads allocates nothing (the fetch path).
func (l *Log) ReadInto(dst []Chunk, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	return l.readInto(dst, nil, offset, maxBytes, maxOffset, minOneBatch)
}

// ReadBatchesInto is ReadInto that also appends to ends, for each record
// batch read, where it ends in bytes from the start of the result (the
// last is res.Bytes), so a caller can keep a prefix of whole batches
// (Fetch's max_bytes applied after the read).
func (l *Log) ReadBatchesInto(dst []Chunk, ends []int32, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, []int32, error) {
	res, err := l.readInto(dst, &ends, offset, maxBytes, maxOffset, minOneBatch)
	return res, ends, err
}

func (l *Log) readInto(dst []Chunk, ends *[]int32, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	res := ReadResult{Chunks: dst[:0]}
	if err := l.usable(); err != nil {
		return res, err
	}
	leo := l.LogEndOffset()
	if offset < l.startOffset || offset > leo {
		return res, fmt.Errorf("%w: offset %d, log has [%d, %d]", ErrOffsetOutOfRange, offset, l.startOffset, leo)
	}
	if offset == leo || offset >= maxOffset {
		return res, nil
	}
	first := true
	for i := l.segmentIndex(offset); i < len(l.segs); i++ {
		s := l.segs[i]
		pos, err := s.findBatch(offset, l.hdr[:])
		if err != nil {
			return ReadResult{}, err
		}
		start := pos
		done := false
		for pos < s.size {
			r, err := s.readBatchRef(pos, l.hdr[:])
			if err != nil {
				return ReadResult{}, err
			}
			if r.baseOffset >= maxOffset {
				done = true
				break
			}
			if int64(res.Bytes)+(pos-start)+r.size > int64(maxBytes) && !(first && minOneBatch) {
				done, res.Limited = true, true
				break
			}
			first = false
			pos += r.size
			if ends != nil {
				*ends = append(*ends, res.Bytes+int32(pos-start))
			}
		}
		if pos > start {
			if res.Chunks, err = s.appendChunks(res.Chunks, start, pos-start); err != nil {
				return ReadResult{}, err
			}
			res.Bytes += int32(pos - start)
		}
		if done {
			break
		}
	}
	return res, nil
}

// segmentIndex returns the index of the segment that may hold offset: the
// last one whose base is <= offset (0 if none).
func (l *Log) segmentIndex(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// LogStartOffset is the first offset a Read may ask for.
func (l *Log) LogStartOffset() int64 { return l.startOffset }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.active().next }

// Size is the total size in bytes of the log's segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// Segments describes the live segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = SegmentInfo{BaseOffset: s.base, Size: s.size, Path: s.path(logSuffix)}
	}
	return out
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// SyncTarget returns the active segment's file and the log end offset that
// an fdatasync of it makes durable (earlier segments were synced when they
// rolled). The group-commit goroutine syncs the file while the owner shard
// keeps appending. After Close it returns (nil, -1).
func (l *Log) SyncTarget() (f *os.File, endOffset int64) {
	if l.closed {
		return nil, -1
	}
	s := l.active()
	return s.log.OSFile(), s.next
}

// Close writes the final time-index entry, trims and fdatasyncs the active
// segment's files and closes every file. Segments already retired stay open
// until their FileDeleteDelay ends. Later calls return ErrLogClosed; a
// second Close returns nil.
func (l *Log) Close() error {
	if l.closed {
		return nil
	}
	var errs []error
	if l.failure == nil {
		var err error
		maxTime := int(l.opts.MaxIndexBytes) / timeEntrySize
		if l.scratch, err = l.active().deactivate(maxTime, l.scratch, true); err != nil {
			errs = append(errs, err)
		}
		// Written even when empty, as Kafka does, so that the next Open
		// replays no batch headers.
		if err := l.writeProducerSnapshot(l.LogEndOffset()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.closeSegments(); err != nil {
		errs = append(errs, err)
	}
	if l.failure == nil && len(errs) == 0 {
		if err := l.markCleanShutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	l.dec.close()
	l.closed = true
	if l.tail != nil {
		l.tail.clear()
		l.tail = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot close log %q: %w", l.dir, err)
	}
	return nil
}

// abandonOpen undoes a failed Open after its segments were loaded: the
// active segment's preallocated tail is trimmed again (left behind, the
// next clean reopen would find zeros past the last batch and check the
// whole segment), then every file is closed. The files are as Open found
// them, so a clean-shutdown marker still holds.
func (l *Log) abandonOpen() {
	if n := len(l.segs); n > 0 {
		if err := l.segs[n-1].trimLog(); err != nil {
			l.logger.Warn("cannot trim the active segment after a failed open", "err", err)
		}
	}
	l.closeSegments()
}

func (l *Log) closeSegments() error {
	var errs []error
	for _, s := range l.segs {
		if err := s.closeFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	cerr := l.Close()
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("cannot remove partition directory %q: %w", l.dir, err)
	}
	return cerr
}
