package nvme

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// SetLogStartOffset moves the log start offset forward to offset
// (DeleteRecords, KIP-107) and retires the segments wholly below it (those
// whose successor starts at or below offset; never the active one). A value
// at or below the current log start offset changes nothing. Errors:
// ErrOffsetOutOfRange when offset is beyond the log end offset, ErrLogClosed.
func (l *Log) SetLogStartOffset(offset int64) error {
	if err := l.usable(); err != nil {
		return err
	}
	if offset > l.LogEndOffset() {
		return fmt.Errorf("%w: new log start offset %d beyond the log end offset %d", ErrOffsetOutOfRange, offset, l.LogEndOffset())
	}
	if offset <= l.startOffset {
		return nil
	}
	l.startOffset = offset
	n := 0
	for n < len(l.segs)-1 && l.segs[n+1].base <= offset {
		n++
	}
	return l.retire(n)
}

// ApplyRetention retires old segments, oldest first, never the active one:
// those whose largest timestamp is more than retention.ms old (the file's
// modification time stands in when no batch has a timestamp), then while the
// log is more than retention.bytes over the limit by at least a whole
// segment, then those wholly below the log start offset. The log start
// offset moves up to the first remaining segment. Retired segments are
// renamed to *.deleted and their files closed and unlinked after
// FileDeleteDelay, so Chunks in flight stay readable. Errors: ErrLogClosed.
func (l *Log) ApplyRetention() (deletedSegments int, err error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	nowMs := l.opts.Now().UnixMilli()
	n := 0
	if l.opts.RetentionMs >= 0 {
		for n < len(l.segs)-1 && nowMs-l.largestTimestamp(l.segs[n]) > l.opts.RetentionMs {
			n++
		}
	}
	if l.opts.RetentionBytes >= 0 {
		var total int64
		for _, s := range l.segs[n:] {
			total += s.size
		}
		diff := total - l.opts.RetentionBytes
		for n < len(l.segs)-1 && diff-l.segs[n].size >= 0 {
			diff -= l.segs[n].size
			n++
		}
	}
	for n < len(l.segs)-1 && l.segs[n+1].base <= l.startOffset {
		n++
	}
	if err := l.retire(n); err != nil {
		return 0, err
	}
	return n, nil
}

// largestTimestamp is the retention clock of a segment, in ms.
func (l *Log) largestTimestamp(s *segment) int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	if st, err := os.Stat(s.path(logSuffix)); err == nil {
		return st.ModTime().UnixMilli()
	}
	return l.opts.Now().UnixMilli()
}

// retire removes the first n segments from the log: their files are renamed
// to *.deleted at once and closed and unlinked FileDeleteDelay later. The
// log start offset moves to the first remaining segment if it was below.
func (l *Log) retire(n int) error {
	if n <= 0 {
		if l.truncateEpochsFromStart(l.startOffset) {
			return l.persistEpochs()
		}
		return nil
	}
	gone := l.segs[:n]
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.startOffset = max(l.startOffset, l.segs[0].base)
	var errs []error
	for _, s := range gone {
		if err := l.retireSegment(s); err != nil {
			errs = append(errs, err)
		}
	}
	if l.truncateEpochsFromStart(l.startOffset) {
		if err := l.persistEpochs(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return l.fail(err)
	}
	l.deleteSnapshotsBelow(l.segs[0].base)
	l.logger.Info("retired segments", "count", n, "logStartOffset", l.startOffset)
	return nil
}

func (l *Log) retireSegment(s *segment) error {
	var paths []string
	var errs []error
	for _, sfx := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		from := s.path(sfx)
		to := from + deletedSuffix
		if err := os.Rename(from, to); err != nil {
			if !errors.Is(err, fs.ErrNotExist) || sfx == logSuffix {
				errs = append(errs, fmt.Errorf("cannot rename %q for deletion: %w", from, err))
			}
			continue
		}
		paths = append(paths, to)
	}
	f := s.log
	s.forgetCached()
	cleanup := func() {
		f.Close()
		for _, p := range paths {
			os.Remove(p)
		}
	}
	if s.idx != nil {
		s.idx.Close()
		s.tidx.Close()
	}
	if d := l.opts.FileDeleteDelay; d > 0 {
		time.AfterFunc(d, cleanup)
	} else {
		cleanup()
	}
	return errors.Join(errs...)
}
