package nvme

// Log compaction (cleanup.policy=compact), as Kafka's log cleaner does it.
//
// A pass has three steps. Two run on the owner shard and are cheap; the
// middle one does the I/O and runs on a cleaner goroutine:
//
//	job, err := l.PrepareClean(state, cfg)  // owner: snapshot closed segments, open read-only fds
//	err = job.Run(stop, throttle)           // cleaner goroutine: offset map, rewrite to *.cleaned
//	state, err = l.CommitClean(job)         // owner: swap the new segments in (or job.Abort())
//
// The log is split at the cleaner checkpoint (CleanerState.FirstDirty): the
// clean part below it was compacted before, the dirty part above it up to
// the first uncleanable offset (the active segment's base, lowered to the
// segment holding the last stable offset and to the first segment newer
// than min.compaction.lag.ms) was not. Run builds an offset map key ->
// latest offset over the dirty part, then rewrites every segment from the
// log's first one up to the end of the dirty part, keeping a record when it
// is the latest for its key (or its key is not in the map). Offsets are
// preserved: a partly cleaned batch keeps its baseOffset, lastOffsetDelta,
// baseSequence and timestamps and only loses records, so its
// producer's sequence state stays computable; a batch left with no record
// is dropped unless it is the last batch of an active producer, which is
// kept with zero records (Kafka's RETAIN_EMPTY). Compressed batches that
// lose records are recompressed with their own codec; untouched batches are
// copied byte for byte.
//
// Tombstones (null values) and transaction markers are removed only once
// they have been on the clean side for delete.retention.ms: each pass
// records (end offset, time) in CleanerState.Points, and a tombstone at an
// offset below an end cleaned at least delete.retention.ms ago may go.
// Aborted transactional data (from the transaction index) is removed at
// once, as are keyless records; an ABORT marker stays until a pass sees
// none of its data and the delete horizon passed, a COMMIT marker until a
// pass sees none of its transaction's batches before it and the horizon
// passed.
//
// Cleaned segments are merged into groups of consecutive segments whose
// total size fits segment.bytes (and whose offsets fit the int32 relative
// range and whose index entries fit segment.index.bytes). Each group is
// written as <base>.log.cleaned with its .index, .timeindex and .txnindex
// (and a <base>.cleanrange naming the end of the replaced range), fsynced,
// then CommitClean renames them to *.swap (the .log last: the commit point),
// retires the replaced segments as retention does (renamed to *.deleted,
// closed after file.delete.delay.ms, so fetch chunks in flight stay valid)
// and renames the swap files to their final names. Open completes a swap
// whose .log.swap exists and deletes *.cleaned and orphan *.swap files
// (Log.completeSwaps).

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// Cleaner errors.
var (
	// ErrCleanStopped: Run was stopped (broker shutdown) before it finished.
	ErrCleanStopped = errors.New("log cleaning stopped")
	// ErrCleanStale: the log changed under a job (retention or deletion
	// removed a segment it rewrote); the job was abandoned.
	ErrCleanStale = errors.New("log changed during cleaning")
)

// cleanRangeSuffix names the file that records, for a swap, the end
// (exclusive) of the offset range whose segments the swap replaces.
const cleanRangeSuffix = ".cleanrange"

// maxCleanPoints bounds CleanerState.Points; older points are merged.
const maxCleanPoints = 32

// CleanConfig are a compacted topic's cleaner knobs (Kafka's names).
type CleanConfig struct {
	MinCleanableRatio  float64 // [min.cleanable.dirty.ratio] default 0.5
	MinCompactionLagMs int64   // [min.compaction.lag.ms] default 0
	MaxCompactionLagMs int64   // [max.compaction.lag.ms] <= 0 or MaxInt64: never forces a pass
	DeleteRetentionMs  int64   // [delete.retention.ms] default 1 day
	// MaxMapEntries bounds the offset map (log.cleaner.dedupe.buffer.size
	// divided by the cleaner threads and the bytes an entry takes); when
	// the dirty part has more keys, the pass ends where the map filled up
	// and the next pass continues from there. 0 means no bound.
	MaxMapEntries int
}

// CleanPoint says that every offset below EndOffset was on the clean side
// of the log by CleanedMs (ms since the epoch).
type CleanPoint struct {
	EndOffset int64
	CleanedMs int64
}

// CleanerState is what the cleaner remembers of one log between passes;
// the caller persists it (Kafka's cleaner-offset-checkpoint holds
// FirstDirty). The zero value means "never cleaned".
type CleanerState struct {
	FirstDirty int64        // first offset not cleaned yet
	Points     []CleanPoint // ascending EndOffset and CleanedMs
}

// Cleanable describes how much of a log a pass would clean.
type Cleanable struct {
	FirstDirty       int64   // where the dirty part starts
	FirstUncleanable int64   // where it ends (a segment base)
	CleanBytes       int64   // bytes of segments below the dirty part
	DirtyBytes       int64   // bytes of segments in the dirty part
	Ratio            float64 // DirtyBytes / (CleanBytes + DirtyBytes)
	Forced           bool    // max.compaction.lag.ms is exceeded
	Needed           bool    // a pass is due: dirty bytes and (ratio reached or forced)
}

// CleanStats reports one pass.
type CleanStats struct {
	SegmentsIn, SegmentsOut  int
	BytesRead, BytesWritten  int64
	RecordsRead, RecordsKept int64
	MapEntries               int
	FirstDirty, EndDirty     int64
}

// cleanSource is one closed segment a job reads.
type cleanSource struct {
	seg        *segment // identity check at commit
	base, next int64
	size       int64
	idxEntries int
	f          *os.File // the job's own read-only descriptor
}

// cleanGroup is consecutive sources rewritten into one new segment.
type cleanGroup struct {
	first, n int      // sources[first : first+n]
	base     int64    // the new segment's base (the first source's)
	end      int64    // end (exclusive) of the replaced offset range
	out      *segment // state of the new segment (indexes in memory, no files open)
	txn      []AbortedTxn
	files    []string // *.cleaned files written, for Abort
}

// CleanJob is one prepared pass; see PrepareClean, Run, CommitClean.
type CleanJob struct {
	dir      string
	logger   *slog.Logger
	nowMs    int64
	cfg      CleanConfig
	segBytes int64
	interval int64
	maxIdx   int
	maxTime  int

	srcs           []cleanSource
	firstDirty     int64
	endDirty       int64
	nextBase       int64 // base of the first segment after the rewritten ones
	deletableBelow int64
	aborted        []AbortedTxn // overlapping the rewritten range, by FirstOffset
	producerLast   map[int64]int64
	state          CleanerState

	groups []*cleanGroup
	stats  CleanStats
	ran    bool
	closed bool
}

// Stats reports what the job did (after Run).
func (j *CleanJob) Stats() CleanStats { return j.stats }

// Cleanable computes the dirty part of the log for st and whether a pass
// is due under c at the log's clock. It runs on the owner shard.
func (l *Log) Cleanable(st CleanerState, c CleanConfig) Cleanable {
	var r Cleanable
	if l.usable() != nil || len(l.segs) < 2 {
		return r
	}
	nowMs := l.opts.Now().UnixMilli()
	r.FirstDirty = l.firstDirty(st)
	limit := l.uncleanableIndex(r.FirstDirty, c, nowMs)
	r.FirstUncleanable = l.segs[limit].base
	fd := l.segmentIndex(r.FirstDirty)
	for i := 0; i < limit; i++ {
		if i < fd {
			r.CleanBytes += l.segs[i].size
		} else {
			r.DirtyBytes += l.segs[i].size
		}
	}
	if r.FirstDirty >= r.FirstUncleanable {
		r.DirtyBytes = 0
	}
	if total := r.CleanBytes + r.DirtyBytes; total > 0 {
		r.Ratio = float64(r.DirtyBytes) / float64(total)
	}
	if r.DirtyBytes > 0 && c.MaxCompactionLagMs > 0 && c.MaxCompactionLagMs < math.MaxInt64 && fd < limit {
		s := l.segs[fd]
		ts := s.firstTs
		if ts < 0 {
			ts = l.largestTimestamp(s)
		}
		r.Forced = nowMs-ts > c.MaxCompactionLagMs
	}
	r.Needed = r.DirtyBytes > 0 && (r.Ratio >= c.MinCleanableRatio || r.Forced)
	return r
}

// firstDirty clamps the checkpoint to the log: below the log start offset
// or beyond the log end it starts over from the log start.
func (l *Log) firstDirty(st CleanerState) int64 {
	fd := st.FirstDirty
	if fd < l.startOffset || fd > l.LogEndOffset() {
		fd = l.startOffset
	}
	return fd
}

// uncleanableIndex returns the index of the first segment a pass must not
// touch: the active one, or earlier the one holding the last stable offset
// (open transactions are not cleaned) or the first dirty one newer than
// min.compaction.lag.ms.
func (l *Log) uncleanableIndex(firstDirty int64, c CleanConfig, nowMs int64) int {
	limit := len(l.segs) - 1
	if k := l.segmentIndex(l.LastStableOffset()); k < limit {
		limit = k
	}
	if c.MinCompactionLagMs > 0 {
		for i := l.segmentIndex(firstDirty); i < limit; i++ {
			if nowMs-l.largestTimestamp(l.segs[i]) < c.MinCompactionLagMs {
				limit = i
				break
			}
		}
	}
	return limit
}

// PrepareClean snapshots what a pass over the log needs: the closed
// segments from the first one up to the first uncleanable offset (each
// opened again read-only, so retention cannot pull them away mid-pass), the
// aborted transactions, each active producer's last batch and the delete
// horizon. It returns nil (and no error) when there is nothing dirty. It
// runs on the owner shard; the job's Run may then run on any goroutine.
// Errors: ErrLogClosed, and open errors of segment files.
func (l *Log) PrepareClean(st CleanerState, c CleanConfig) (*CleanJob, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if len(l.segs) < 2 {
		return nil, nil
	}
	nowMs := l.opts.Now().UnixMilli()
	fd := l.firstDirty(st)
	limit := l.uncleanableIndex(fd, c, nowMs)
	if limit == 0 || fd >= l.segs[limit].base {
		return nil, nil
	}
	maxIdx, maxTime := indexLimits(l.opts.MaxIndexBytes)
	j := &CleanJob{
		dir: l.dir, logger: l.logger, nowMs: nowMs, cfg: c,
		segBytes: l.opts.SegmentBytes, interval: int64(l.opts.IndexIntervalBytes), maxIdx: maxIdx, maxTime: maxTime,
		firstDirty: fd, endDirty: l.segs[limit].base, nextBase: l.segs[limit].base,
		producerLast: map[int64]int64{},
		state:        CleanerState{FirstDirty: st.FirstDirty, Points: append([]CleanPoint(nil), st.Points...)},
	}
	for _, s := range l.segs[:limit] {
		f, err := os.Open(s.path(logSuffix))
		if err != nil {
			j.Abort()
			return nil, fmt.Errorf("cannot open segment %q for cleaning: %w", s.path(logSuffix), err)
		}
		j.srcs = append(j.srcs, cleanSource{seg: s, base: s.base, next: s.next, size: s.size, idxEntries: len(s.offIdx), f: f})
	}
	for pid, e := range l.producers {
		if off := e.LastOffset(); off >= 0 {
			j.producerLast[pid] = off
		}
	}
	upper := l.segs[limit].base
	for _, a := range l.txn.aborted {
		if a.FirstOffset < upper && a.LastOffset >= l.segs[0].base {
			j.aborted = append(j.aborted, a)
		}
	}
	sort.Slice(j.aborted, func(a, b int) bool { return j.aborted[a].FirstOffset < j.aborted[b].FirstOffset })
	j.deletableBelow = deletableBelow(st.Points, c.DeleteRetentionMs, nowMs)
	return j, nil
}

// deletableBelow is the offset below which tombstones and markers have
// been clean for at least retentionMs at nowMs (0: none).
func deletableBelow(points []CleanPoint, retentionMs, nowMs int64) int64 {
	var below int64
	for _, p := range points {
		if p.CleanedMs <= nowMs-retentionMs {
			below = max(below, p.EndOffset)
		}
	}
	return below
}

// nextState is the cleaner state after a successful pass of j.
func (j *CleanJob) nextState() CleanerState {
	pts := append(append([]CleanPoint(nil), j.state.Points...), CleanPoint{EndOffset: j.endDirty, CleanedMs: j.nowMs})
	// Points old enough to be deletable collapse into one.
	retention := j.cfg.DeleteRetentionMs
	var merged []CleanPoint
	for _, p := range pts {
		if n := len(merged); n > 0 && merged[n-1].CleanedMs <= j.nowMs-retention && p.CleanedMs <= j.nowMs-retention {
			merged[n-1] = CleanPoint{EndOffset: max(merged[n-1].EndOffset, p.EndOffset), CleanedMs: max(merged[n-1].CleanedMs, p.CleanedMs)}
			continue
		}
		merged = append(merged, p)
	}
	// Too many: merge the oldest pairs, conservatively (later time, larger end).
	for len(merged) > maxCleanPoints {
		merged[1] = CleanPoint{EndOffset: max(merged[0].EndOffset, merged[1].EndOffset), CleanedMs: max(merged[0].CleanedMs, merged[1].CleanedMs)}
		merged = merged[1:]
	}
	return CleanerState{FirstDirty: j.endDirty, Points: merged}
}

// Abort closes the job's descriptors and removes the files Run wrote. It
// may be called on any goroutine, more than once.
func (j *CleanJob) Abort() {
	j.closeSources()
	for _, g := range j.groups {
		for _, p := range g.files {
			os.Remove(p)
		}
		g.files = nil
	}
}

func (j *CleanJob) closeSources() {
	if j.closed {
		return
	}
	j.closed = true
	for _, s := range j.srcs {
		if s.f != nil {
			s.f.Close()
		}
	}
}

// CommitClean swaps the segments a finished job wrote into the log, on the
// owner shard, and returns the cleaner state to persist. When the log
// changed under the job (a rewritten segment was retired or the log
// closed) the job is abandoned and ErrCleanStale or ErrLogClosed returned;
// the log is then as it was. An I/O error in the middle of the swap takes
// the log offline (ErrLogClosed): the next Open finishes the swap.
func (l *Log) CommitClean(j *CleanJob) (CleanerState, error) {
	defer j.closeSources()
	if err := l.usable(); err != nil {
		j.Abort()
		return j.state, err
	}
	if !j.ran {
		j.Abort()
		return j.state, fmt.Errorf("cannot commit a cleaning job that did not run")
	}
	n := len(j.srcs)
	if n >= len(l.segs) {
		j.Abort()
		return j.state, ErrCleanStale
	}
	for i, src := range j.srcs {
		if l.segs[i] != src.seg {
			j.Abort()
			return j.state, ErrCleanStale
		}
	}
	newSegs := make([]*segment, 0, len(j.groups))
	for gi, g := range j.groups {
		s, err := l.swapGroup(j, g)
		if err != nil {
			for _, g2 := range j.groups[gi+1:] {
				for _, p := range g2.files {
					os.Remove(p)
				}
			}
			// The replaced part of l.segs is inconsistent now: go offline,
			// the next Open completes or drops the swap.
			for _, ns := range newSegs {
				ns.closeFiles()
			}
			return j.state, l.fail(err)
		}
		newSegs = append(newSegs, s)
	}
	if err := syncDir(l.dir); err != nil {
		return j.state, l.fail(err)
	}
	l.segs = append(newSegs, l.segs[n:]...)
	l.startOffset = max(l.startOffset, l.segs[0].base)
	// Transaction index: entries of the rewritten range are those the new
	// segments carry.
	lo, hi := j.srcs[0].base, j.groups[len(j.groups)-1].end
	kept := l.txn.aborted[:0]
	for _, a := range l.txn.aborted {
		if a.LastOffset < lo || a.LastOffset >= hi {
			kept = append(kept, a)
		}
	}
	l.txn.aborted = kept
	for _, g := range j.groups {
		l.txn.aborted = append(l.txn.aborted, g.txn...)
	}
	sort.Slice(l.txn.aborted, func(a, b int) bool { return l.txn.aborted[a].LastOffset < l.txn.aborted[b].LastOffset })
	st := j.nextState()
	l.logger.Info("cleaned log", "segmentsIn", j.stats.SegmentsIn, "segmentsOut", j.stats.SegmentsOut,
		"bytesRead", j.stats.BytesRead, "bytesWritten", j.stats.BytesWritten, "recordsRead", j.stats.RecordsRead,
		"recordsKept", j.stats.RecordsKept, "firstDirty", j.firstDirty, "endDirty", j.endDirty)
	return st, nil
}

// swapGroup replaces the group's source segments with its new segment:
// *.cleaned -> *.swap (.log last), old segments retired, *.swap -> final.
func (l *Log) swapGroup(j *CleanJob, g *cleanGroup) (*segment, error) {
	ns := g.out
	sfxs := []string{cleanRangeSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}
	for _, sfx := range sfxs {
		from := ns.path(sfx) + cleanedSuffix
		if _, err := os.Stat(from); err != nil {
			if sfx == txnIndexSuffix && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("cannot find cleaned file %q: %w", from, err)
		}
		if sfx == logSuffix {
			if err := syncDir(l.dir); err != nil {
				return nil, err
			}
		}
		if err := os.Rename(from, ns.path(sfx)+swapSuffix); err != nil {
			return nil, fmt.Errorf("cannot rename %q to swap: %w", from, err)
		}
	}
	g.files = nil
	if err := syncDir(l.dir); err != nil {
		return nil, err
	}
	var errs []error
	for _, src := range j.srcs[g.first : g.first+g.n] {
		if err := l.retireSegment(src.seg); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, sfx := range sfxs[1:] {
		from := ns.path(sfx) + swapSuffix
		if err := os.Rename(from, ns.path(sfx)); err != nil {
			if sfx == txnIndexSuffix && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("cannot rename swap file %q: %w", from, err)
		}
	}
	if err := os.Remove(ns.path(cleanRangeSuffix) + swapSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot remove %q: %w", ns.path(cleanRangeSuffix)+swapSuffix, err)
	}
	size, err := l.openSegmentLog(ns, false)
	if err != nil {
		return nil, err
	}
	if size != ns.size {
		ns.closeFiles()
		return nil, fmt.Errorf("cannot swap in cleaned segment %q: %d bytes on disk, %d written", ns.path(logSuffix), size, ns.size)
	}
	return ns, nil
}

// cleanedPath is the *.cleaned name of a group's file.
func cleanedPath(dir string, base int64, sfx string) string {
	return filepath.Join(dir, segmentFileName(base, sfx)+cleanedSuffix)
}
