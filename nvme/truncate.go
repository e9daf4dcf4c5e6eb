package nvme

// Log truncation (TruncateTo): a follower cuts its log back to where it
// diverges from its leader (KIP-101, KIP-279), as Kafka's
// UnifiedLog.truncateTo and LogSegment.truncateTo do.
//
// Steps, in this order:
//
//  1. The truncation marker (truncationMarkerFile: the target offset and
//     whether the truncation is full) is written to a temporary file,
//     fsynced and renamed into place, and the directory fsynced. This is
//     the commit point: before it nothing has changed, after it the next
//     Open finishes the truncation whatever else was done.
//  2. The segments wholly above the target are retired as retention
//     retires them (renamed to *.deleted, closed and unlinked after
//     file.delete.delay.ms, so fetch chunks in flight stay readable),
//     highest first, so that the files on disk always form a log without
//     a hole; the directory is fsynced before the cut.
//  3. The .log of the segment holding the target is cut at the start of
//     the batch holding it (whole batches only) and fdatasynced; its index
//     entries at or past the cut are dropped and the index files rewritten
//     (Open rebuilds the last segment's indexes anyway: without a clean
//     shutdown it scans and checks every batch of it). The segment is
//     opened again, with a new descriptor, as the active segment (tail
//     buffer, preallocation and ring writes start afresh in direct mode);
//     the old descriptor is closed after file.delete.delay.ms.
//  4. Producer snapshots above the new end are removed, and the producer
//     state and transaction index rebuilt from the newest snapshot left
//     plus the log after it, as Open does.
//  5. Leader-epoch entries starting at or past the new end are dropped and
//     the checkpoint rewritten (atomically).
//  6. The directory is fsynced, the marker removed and the directory
//     fsynced again, so that the marker never outlives into a log that
//     took appends after the truncation (a later Open would cut them).
//
// A kill (or power loss) at any point therefore leaves the old log
// (before step 1 is durable) or a directory that Open turns into the new
// log: Open loads what is there (the files of every step are each
// readable: a prefix of the segments, the last one cut at a batch
// boundary or not at all, indexes that are rebuilt when they disagree),
// finds the marker and runs steps 2 to 6 again, each of which does
// nothing when it was done already. A full truncation (the target below
// the first segment's base, Kafka's truncateFullyAndStartAt) retires
// every segment, highest first, then creates an empty one at the target,
// removes every producer snapshot and empties the leader-epoch cache;
// its marker says so, and Open finishes it the same way.
//
// Marker format (text, like leader-epoch-checkpoint): "0" (version), the
// target offset, and "cut" or "full", one per line.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// truncationMarkerFile is the marker of a truncation in progress (see above).
const truncationMarkerFile = ".truncating"

// Truncation steps, as a test's Log.truncHook sees them.
const (
	truncStepBefore    = "before"    // nothing done yet
	truncStepMarker    = "marker"    // the marker is durable
	truncStepRetired   = "retired"   // one more segment above the target is retired
	truncStepCut       = "cut"       // the .log holding the target is cut and synced
	truncStepIndexes   = "indexes"   // its index files are rewritten, the segment active again
	truncStepCreated   = "created"   // full truncation: the new empty segment exists
	truncStepProducers = "producers" // snapshots above the end removed, producer state rebuilt
	truncStepEpochs    = "epochs"    // the leader-epoch checkpoint is cut
	truncStepDone      = "done"      // the marker is removed
)

// truncationMarker is the content of truncationMarkerFile.
type truncationMarker struct {
	target int64
	full   bool
}

// appendTruncationMarker appends the marker text for m to dst.
func appendTruncationMarker(dst []byte, m truncationMarker) []byte {
	dst = append(dst, "0\n"...)
	dst = strconv.AppendInt(dst, m.target, 10)
	if m.full {
		return append(dst, "\nfull\n"...)
	}
	return append(dst, "\ncut\n"...)
}

// parseTruncationMarker decodes truncationMarkerFile's content.
func parseTruncationMarker(b []byte) (truncationMarker, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var lines []string
	for sc.Scan() {
		if len(lines) == 3 {
			return truncationMarker{}, fmt.Errorf("more than 3 lines")
		}
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return truncationMarker{}, err
	}
	if len(lines) != 3 || lines[0] != "0" {
		return truncationMarker{}, fmt.Errorf("want lines %q, <offset>, cut|full; got %q", "0", lines)
	}
	target, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || target < 0 || strconv.FormatInt(target, 10) != lines[1] {
		return truncationMarker{}, fmt.Errorf("bad target offset %q", lines[1])
	}
	m := truncationMarker{target: target}
	switch lines[2] {
	case "cut":
	case "full":
		m.full = true
	default:
		return truncationMarker{}, fmt.Errorf("bad mode %q, want cut or full", lines[2])
	}
	return m, nil
}

// readTruncationMarker returns the marker of an unfinished truncation, if any.
func (l *Log) readTruncationMarker() (truncationMarker, bool, error) {
	path := filepath.Join(l.dir, truncationMarkerFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return truncationMarker{}, false, nil
	}
	if err != nil {
		return truncationMarker{}, false, fmt.Errorf("cannot read truncation marker %q: %w", path, err)
	}
	m, err := parseTruncationMarker(b)
	if err != nil {
		return truncationMarker{}, false, fmt.Errorf("cannot parse truncation marker %q: %w", path, err)
	}
	return m, true, nil
}

// TruncateTo removes the records at and above offset (Kafka's
// UnifiedLog.truncateTo; replication calls it with a follower's divergence
// point). Only whole batches are removed: when offset falls inside a
// batch, that batch goes too, so LogEndOffset afterwards is offset or the
// base offset of the batch that held it (or, in a gap that compaction
// left, the end of the last batch below offset). Segments wholly above
// are deleted (after file.delete.delay.ms, like retired ones), the
// segment holding offset becomes the active one, its indexes are cut, the
// producer state and transaction index are rebuilt from the producer
// snapshots at or below the new end plus the log, the leader-epoch cache
// drops the entries starting at or past the new end (Kafka's
// LeaderEpochFileCache.truncateFromEnd), and the tail view and the
// written end offset follow the new end; LastStableOffset is recomputed.
// A CleanJob prepared before is stale at CommitClean when it read a
// segment that was cut or deleted. Callers clamp what they keep of the
// log (high watermark, parked fetches) to LogEndOffset afterwards.
//
// An offset at or above the log end offset changes no record; as in
// Kafka, the leader-epoch entries starting at or past the log end offset
// are dropped still (a leader that assigned an epoch and lost the
// leadership before appending in it). An offset below the first segment's
// base (below the log start offset, as the log start is never below that
// base) truncates fully, as Kafka's truncateTo then does
// (truncateFullyAndStartAt): every segment, producer snapshot and
// leader-epoch entry goes, and the log restarts empty at offset, which
// becomes its start and end offset. An offset below the log start offset
// but not below the first segment's base truncates normally and moves the
// log start offset down to the new end, as Kafka's min(target, logStart)
// does.
//
// Crash safety: see the steps above truncationMarkerFile; a kill at any
// moment leaves a directory that Open turns into the log as it was before
// the call or as the call leaves it, never anything between.
//
// Errors: ErrOffsetOutOfRange (wrapped) for a negative offset;
// ErrLogClosed; a failure to write the truncation marker (nothing
// changed, the log stays online); an I/O error after it takes the log
// offline (ErrLogClosed wrapping it) and the next Open finishes the
// truncation.
func (l *Log) TruncateTo(offset int64) error {
	if err := l.usable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: cannot truncate %q to negative offset %d", ErrOffsetOutOfRange, l.dir, offset)
	}
	leo := l.LogEndOffset()
	if offset >= leo {
		if l.dropEpochsFrom(leo) {
			if err := l.persistEpochs(); err != nil {
				return err
			}
		}
		return nil
	}
	m := truncationMarker{target: offset, full: offset < l.segs[0].base}
	l.truncStep(truncStepBefore)
	if err := writeFileAtomic(l.dir, truncationMarkerFile, appendTruncationMarker(nil, m)); err != nil {
		return fmt.Errorf("cannot truncate %q to %d: %w", l.dir, offset, err)
	}
	l.truncStep(truncStepMarker)
	var err error
	if m.full {
		err = l.truncateFully(offset)
	} else {
		err = l.truncateCut(offset)
	}
	if err != nil {
		return l.fail(fmt.Errorf("cannot truncate %q to %d: %w", l.dir, offset, err))
	}
	l.logger.Info("truncated log", "target", offset, "logEndOffset", l.LogEndOffset(), "logStartOffset", l.startOffset, "full", m.full)
	return nil
}

// finishTruncation completes, at Open, the truncation whose marker m was
// found (steps 2 to 6; each does nothing if it was done).
func (l *Log) finishTruncation(m truncationMarker) error {
	var err error
	switch {
	case m.full:
		err = l.truncateFully(m.target)
	case m.target < l.LogEndOffset():
		err = l.truncateCut(m.target)
	default:
		err = l.finishTruncationState(l.LogEndOffset())
	}
	if err != nil {
		return fmt.Errorf("cannot finish the truncation of %q to %d: %w", l.dir, m.target, err)
	}
	l.logger.Info("finished an interrupted log truncation", "target", m.target, "full", m.full, "logEndOffset", l.LogEndOffset())
	return nil
}

func (l *Log) truncStep(step string) {
	if l.truncHook != nil {
		l.truncHook(step)
	}
}

// settleActive waits for the active segment's ring writes (direct mode).
func (l *Log) settleActive() error {
	if d, ok := l.active().log.(*directFile); ok {
		return d.settle()
	}
	return nil
}

// retireForTruncation retires segment s (steps 2): its files are renamed
// to *.deleted and closed after file.delete.delay.ms.
func (l *Log) retireForTruncation(s *segment) error {
	err := l.retireSegment(s)
	s.idx, s.tidx, s.recent = nil, nil, nil // closed by retireSegment
	return err
}

// truncateCut is steps 2 to 6 of a truncation to target, which is at or
// above the first segment's base and below the log end offset.
func (l *Log) truncateCut(target int64) error {
	if err := l.settleActive(); err != nil {
		return err
	}
	k := l.segmentIndex(target)
	retired := len(l.segs) - 1 - k
	for i := len(l.segs) - 1; i > k; i-- {
		s := l.segs[i]
		l.segs = l.segs[:i]
		if err := l.retireForTruncation(s); err != nil {
			return err
		}
		l.truncStep(truncStepRetired)
	}
	if retired > 0 {
		// The renames are durable before the cut: a power loss never
		// leaves the cut segment with a segment above it.
		if err := syncDir(l.dir); err != nil {
			return err
		}
	}
	s := l.segs[k]
	pos, err := s.findBatch(target, l.hdr[:])
	if err != nil {
		return err
	}
	newEnd := s.next
	if pos < s.size {
		r, err := s.readBatchRef(pos, l.hdr[:])
		if err != nil {
			return err
		}
		newEnd = r.baseOffset
	}
	fresh, err := l.cutSegment(s, pos, newEnd)
	if err != nil {
		return err
	}
	l.segs[k] = fresh
	l.clearMarks()
	l.publishTail()
	l.startOffset = min(l.startOffset, l.LogEndOffset())
	return l.finishTruncationState(l.LogEndOffset())
}

// cutSegment cuts segment s at pos (a batch start; newEnd is the offset of
// that batch, or s.next when pos is the end) and returns it opened again
// as the active segment (step 3). The old segment's descriptor is closed
// after file.delete.delay.ms.
func (l *Log) cutSegment(s *segment, pos, newEnd int64) (*segment, error) {
	// The cut entries: Kafka's OffsetIndex and TimeIndex truncateTo.
	keepIdx := slices.Clone(s.offIdx[:entryAtPos(s.offIdx, pos)])
	keepTime := slices.Clone(s.timeIdx)
	keepTime = slices.DeleteFunc(keepTime, func(e timeEntry) bool { return s.base+int64(e.rel) >= newEnd })

	if err := s.log.Truncate(pos); err != nil {
		return nil, fmt.Errorf("cannot cut segment %q at %d: %w", s.path(logSuffix), pos, err)
	}
	if err := s.log.Datasync(); err != nil {
		return nil, fmt.Errorf("cannot fdatasync segment %q: %w", s.path(logSuffix), err)
	}
	l.truncStep(truncStepCut)

	// Let go of the old segment: index files (reopened below), cached
	// blocks and tail buffer; its descriptor stays open for the chunks
	// of fetches in flight.
	for _, f := range []file{s.idx, s.tidx} {
		if f != nil {
			f.Close()
		}
	}
	s.idx, s.tidx, s.recent = nil, nil, nil
	s.forgetCached()
	if d, ok := s.log.(*directFile); ok {
		d.dropTail()
		d.writable = false
	}
	old := s.log
	closeOld := func() { old.Close() }
	if d := l.opts.FileDeleteDelay; d > 0 {
		time.AfterFunc(d, closeOld)
	} else {
		closeOld()
	}

	ns := newSegmentState(l.dir, s.base, l.opts.Now().UnixMilli())
	ns.offIdx, ns.timeIdx = keepIdx, keepTime
	fileSize, err := l.openSegmentLog(ns, false)
	if err != nil {
		return nil, err
	}
	if fileSize != pos {
		ns.closeFiles()
		return nil, fmt.Errorf("segment %q is %d bytes after its cut at %d", s.path(logSuffix), fileSize, pos)
	}
	if err := l.rescanTail(ns, pos); err != nil {
		l.logger.Warn("recovering a cut segment", "segment", ns.path(logSuffix), "reason", err.Error())
		ns.closeFiles()
		return l.recoverActiveSegment(s.base, false)
	}
	if err := ns.rewriteIndexFiles(l.open, true); err != nil {
		ns.closeFiles()
		return nil, err
	}
	l.truncStep(truncStepIndexes)
	l.preallocate(ns)
	return ns, nil
}

// entryAtPos is the number of offset index entries of batches that start
// before pos.
func entryAtPos(es []offsetEntry, pos int64) int {
	i := len(es)
	for i > 0 && int64(es[i-1].pos) >= pos {
		i--
	}
	return i
}

// rescanTail completes the in-memory state of s, whose .log is size bytes
// and whose index entries were kept from before a cut: it scans the
// batches from the last offset index entry on (the batches before it are
// accounted by the entries: the time entries kept hold their largest
// timestamp), and reads the first batch's timestamp for segment.ms.
func (l *Log) rescanTail(s *segment, size int64) error {
	var from int64
	if n := len(s.offIdx); n > 0 {
		from = int64(s.offIdx[n-1].pos)
	}
	s.size = from
	r := &segReader{f: s.log, buf: make([]byte, 64<<10), end: size, off: -1}
	res, err := l.scan(s, r, from, size, false)
	if err != nil {
		return err
	}
	if res.reason != "" {
		return fmt.Errorf("scan from the last index entry stopped: %s", res.reason)
	}
	if s.size != size {
		return fmt.Errorf("scan ended at %d, the segment has %d bytes", s.size, size)
	}
	if n := len(s.timeIdx); n > 0 {
		last := s.timeIdx[n-1]
		if last.ts >= s.maxTs {
			s.maxTs, s.maxTsOffset = last.ts, s.base+int64(last.rel)
		}
	}
	if from > 0 {
		hb, err := r.get(0, BatchHeaderSize)
		if err != nil {
			return err
		}
		s.firstTs = decodeHeader(hb).MaxTimestamp
	}
	return nil
}

// truncateFully is steps 2 to 6 of a full truncation: every segment is
// retired (highest first) and an empty one is created at target, which
// becomes the log start offset.
func (l *Log) truncateFully(target int64) error {
	if len(l.segs) == 1 && l.segs[0].base == target && l.segs[0].size == 0 {
		// Done already (Open after a crash past the creation).
		l.startOffset = target
		return l.finishFullState()
	}
	if err := l.settleActive(); err != nil {
		return err
	}
	for i := len(l.segs) - 1; i >= 0; i-- {
		if err := l.retireForTruncation(l.segs[i]); err != nil {
			return err
		}
		l.truncStep(truncStepRetired)
	}
	s := newSegmentState(l.dir, target, l.opts.Now().UnixMilli())
	size, err := l.openSegmentLog(s, true)
	if err != nil {
		return err
	}
	if size != 0 {
		s.closeFiles()
		return fmt.Errorf("segment %q already exists with %d bytes", s.path(logSuffix), size)
	}
	if err := s.rewriteIndexFiles(l.open, true); err != nil {
		s.closeFiles()
		return err
	}
	l.preallocate(s)
	l.segs = []*segment{s}
	l.startOffset = target
	l.clearMarks()
	l.publishTail()
	l.truncStep(truncStepCreated)
	return l.finishFullState()
}

// finishFullState is steps 4 to 6 of a full truncation.
func (l *Log) finishFullState() error {
	l.deleteSnapshotsBelow(math.MaxInt64)
	l.producers = map[int64]*ProducerEntry{}
	l.txn.open, l.txn.aborted, l.txn.recovered = map[int64]struct{}{}, nil, nil
	l.truncStep(truncStepProducers)
	if len(l.epochs) > 0 {
		l.epochs = nil
		if err := l.persistEpochs(); err != nil {
			return err
		}
	}
	l.truncStep(truncStepEpochs)
	return l.removeTruncationMarker()
}

// finishTruncationState is steps 4 to 6 of a truncation whose log now
// ends at end.
func (l *Log) finishTruncationState(end int64) error {
	for _, off := range l.snapshotOffsets() {
		if off > end {
			if err := os.Remove(filepath.Join(l.dir, segmentFileName(off, snapshotSuffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cannot remove producer snapshot: %w", err)
			}
		}
	}
	l.txn.open, l.txn.aborted, l.txn.recovered = nil, nil, nil
	if err := l.loadProducerState(); err != nil {
		return fmt.Errorf("cannot rebuild producer state: %w", err)
	}
	if err := l.loadTxnIndexes(); err != nil {
		return err
	}
	l.truncStep(truncStepProducers)
	if l.dropEpochsFrom(end) {
		if err := l.persistEpochs(); err != nil {
			return err
		}
	}
	l.truncStep(truncStepEpochs)
	return l.removeTruncationMarker()
}

// removeTruncationMarker is step 6: what the truncation did is made
// durable (renames, removals), then the marker is removed durably.
func (l *Log) removeTruncationMarker() error {
	if err := syncDir(l.dir); err != nil {
		return err
	}
	path := filepath.Join(l.dir, truncationMarkerFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove truncation marker %q: %w", path, err)
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	l.truncStep(truncStepDone)
	return nil
}

// dropEpochsFrom removes the leader-epoch entries that start at or past
// end (Kafka's LeaderEpochFileCache.truncateFromEnd) and reports whether
// any went.
func (l *Log) dropEpochsFrom(end int64) bool {
	n := len(l.epochs)
	l.epochs = slices.DeleteFunc(l.epochs, func(e EpochEntry) bool { return e.StartOffset >= end })
	return len(l.epochs) != n
}

// clearMarks forgets the appends waiting for ring writes: the truncation
// waited for the writes of the files it kept, and the files it dropped
// hold no offset of the log any more.
func (l *Log) clearMarks() {
	clear(l.marks)
	l.marks, l.markHead = l.marks[:0], 0
}
