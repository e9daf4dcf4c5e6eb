package nvme

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CleanShutdownFile is the marker a Log leaves in its directory when Close
// finished without an error: every batch, index entry and the producer
// snapshot at the log end offset were fdatasynced first. Open trusts a
// marked directory's last segment as Kafka trusts a log directory's
// .kafka_cleanshutdown: it loads the segment's indexes and reads only the
// batch headers after the last index entry, instead of checking every
// batch's CRC32C from the start (a full read of up to segment.bytes per
// partition). Open removes the marker, and fsyncs the directory, before
// it returns, so a later crash is always followed by a full recovery. The
// marker is per partition rather than per log directory so that one log
// whose Close failed is recovered without the others.
const CleanShutdownFile = ".clean_shutdown"

// markCleanShutdown writes the marker and makes it durable.
func (l *Log) markCleanShutdown() error {
	path := filepath.Join(l.dir, CleanShutdownFile)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return fmt.Errorf("cannot write clean-shutdown marker %q: %w", path, err)
	}
	return syncDir(l.dir)
}

// hadCleanShutdown reports whether the marker is present.
func (l *Log) hadCleanShutdown() (bool, error) {
	_, err := os.Lstat(filepath.Join(l.dir, CleanShutdownFile))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("cannot stat clean-shutdown marker in %q: %w", l.dir, err)
	}
}

// clearCleanShutdown removes the marker durably; it runs before the log
// takes its first write. The directory is opened before the marker goes,
// so that running out of descriptors (a start with too low a limit)
// fails the Open with the marker still in place and the files as it
// vouches for them.
func (l *Log) clearCleanShutdown() error {
	d, err := os.Open(l.dir)
	if err != nil {
		return fmt.Errorf("cannot open directory %q: %w", l.dir, err)
	}
	defer d.Close()
	path := filepath.Join(l.dir, CleanShutdownFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove clean-shutdown marker %q: %w", path, err)
	}
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot fsync directory %q: %w", l.dir, err)
	}
	return nil
}

// reopenActiveSegment opens the last segment of a log that was closed
// cleanly: like a closed segment, its indexes are loaded and checked and
// only the batches after the last index entry are scanned (framing, no
// CRC32C); its index files are then kept open for appends and its tail is
// preallocated again. Indexes that do not check out fall back to the full
// recovery of recoverActiveSegment.
func (l *Log) reopenActiveSegment(base int64) (*segment, error) {
	s := newSegmentState(l.dir, base, l.opts.Now().UnixMilli())
	fileSize, err := l.openSegmentLog(s, false)
	if err != nil {
		return nil, err
	}
	r := &segReader{f: s.log, buf: make([]byte, 64<<10), end: fileSize, off: -1}
	err = l.loadIndexes(s, fileSize, r) // its scan reaches fileSize or errs
	if err == nil && s.size > 0 {
		// segment.ms rolls count from the first batch's timestamp.
		var hb []byte
		if hb, err = r.get(0, BatchHeaderSize); err == nil {
			s.firstTs = decodeHeader(hb).MaxTimestamp
		}
	}
	if err != nil && outOfDescriptors(err) {
		// Not damage: the open fails, the marker stays for the next start.
		s.closeFiles()
		return nil, err
	}
	if err != nil {
		l.logger.Warn("recovering the active segment after a clean shutdown", "segment", s.path(logSuffix), "reason", err.Error())
		s.closeFiles()
		return l.recoverActiveSegment(base, false)
	}
	if err := s.rewriteIndexFiles(l.open, true); err != nil {
		s.closeFiles()
		return nil, err
	}
	l.preallocate(s)
	return s, nil
}
