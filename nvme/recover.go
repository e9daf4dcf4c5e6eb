package nvme

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// scanBufSize is the read size of recovery scans.
const scanBufSize = 1 << 20

// segReader reads a file sequentially through one buffer, for scans.
type segReader struct {
	f   file
	buf []byte
	off int64 // file position of buf[0]
	n   int   // valid bytes in buf
	end int64 // readable end of the file
}

// get returns n bytes at pos; pos+n must be <= r.end.
func (r *segReader) get(pos int64, n int) ([]byte, error) {
	if pos >= r.off && pos+int64(n) <= r.off+int64(r.n) {
		return r.buf[pos-r.off : pos-r.off+int64(n)], nil
	}
	if n > len(r.buf) {
		r.buf = make([]byte, n)
	}
	want := int64(len(r.buf))
	if left := r.end - pos; left < want {
		want = left
	}
	m, err := r.f.ReadAt(r.buf[:want], pos)
	r.off, r.n = pos, m
	if m < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return r.buf[:n], nil
}

// scanResult says where and why a scan stopped.
type scanResult struct {
	validEnd int64  // end of the last good batch
	reason   string // empty when the scan reached the end
}

// scan walks the batches of s from pos to end, checking their framing (and
// CRC32C when checkCRC), and tracks each good one in s (indexes, next offset,
// max timestamp). It stops at the first bad batch. I/O errors are returned.
func (l *Log) scan(s *segment, r *segReader, pos, end int64, checkCRC bool) (scanResult, error) {
	maxIdx, maxTime := indexLimits(l.opts.MaxIndexBytes)
	interval := int64(l.opts.IndexIntervalBytes)
	expect := s.base
	for pos < end {
		if end-pos < BatchHeaderSize {
			return scanResult{pos, fmt.Sprintf("%d trailing bytes, less than a batch header", end-pos)}, nil
		}
		hb, err := r.get(pos, BatchHeaderSize)
		if err != nil {
			return scanResult{}, fmt.Errorf("cannot read segment %q at %d: %w", s.path(logSuffix), pos, err)
		}
		if isZeroHeader(hb) {
			return scanResult{pos, zeroTailReason}, nil
		}
		if hb[offMagic] != 2 {
			return scanResult{pos, fmt.Sprintf("magic %d at %d", int8(hb[offMagic]), pos)}, nil
		}
		h := decodeHeader(hb)
		size := h.Size()
		switch {
		case h.BatchLength < minBatchLength:
			return scanResult{pos, fmt.Sprintf("batchLength %d at %d", h.BatchLength, pos)}, nil
		case size > end-pos:
			return scanResult{pos, fmt.Sprintf("batch of %d bytes at %d runs past the end %d", size, pos, end)}, nil
		case h.LastOffsetDelta < 0 || h.BaseOffset < expect:
			return scanResult{pos, fmt.Sprintf("batch at %d has offsets %d..%d, expected >= %d", pos, h.BaseOffset, h.LastOffset(), expect)}, nil
		case h.LastOffset()-s.base > 1<<31-1:
			return scanResult{pos, fmt.Sprintf("batch at %d has offset %d beyond the segment's int32 range", pos, h.LastOffset())}, nil
		}
		if checkCRC {
			b, err := r.get(pos, int(size))
			if err != nil {
				return scanResult{}, fmt.Errorf("cannot read segment %q at %d: %w", s.path(logSuffix), pos, err)
			}
			if got := batchCRC(b); got != h.CRC {
				return scanResult{pos, fmt.Sprintf("CRC32C %#08x of batch at %d, header says %#08x", got, pos, h.CRC)}, nil
			}
		}
		s.track(pos, size, h.LastOffset(), h.MaxTimestamp, interval, maxIdx, maxTime)
		expect = h.LastOffset() + 1
		pos += size
	}
	return scanResult{validEnd: end}, nil
}

// openSegmentFiles opens (creating if asked) the .log of s and stats it.
func (l *Log) openSegmentLog(s *segment, create bool) (int64, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	path := s.path(logSuffix)
	f, err := l.openSegFile(path, flag)
	if err != nil {
		return 0, fmt.Errorf("cannot open segment %q: %w", path, err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("cannot stat segment %q: %w", path, err)
	}
	s.log = f
	return size, nil
}

// loadClosedSegment opens a segment that is not the last one: it loads its
// index files, checks them and scans the batches after the last index entry;
// missing or inconsistent indexes are rebuilt from a scan of the .log.
func (l *Log) loadClosedSegment(base int64) (*segment, error) {
	s := newSegmentState(l.dir, base, l.opts.Now().UnixMilli())
	fileSize, err := l.openSegmentLog(s, false)
	if err != nil {
		return nil, err
	}
	r := &segReader{f: s.log, buf: make([]byte, 64<<10), end: fileSize, off: -1}
	if err := l.loadIndexes(s, fileSize, r); err != nil {
		if outOfDescriptors(err) {
			// Not damage: rebuilding would fail the same way.
			s.closeFiles()
			return nil, err
		}
		l.logger.Warn("rebuilding segment indexes", "segment", s.path(logSuffix), "reason", err.Error())
		log := s.log
		*s = *newSegmentState(l.dir, base, s.createdMs)
		s.log = log
		r.buf = make([]byte, scanBufSize)
		res, err := l.scan(s, r, 0, fileSize, false)
		if err != nil {
			s.closeFiles()
			return nil, err
		}
		if err := l.truncateBad(s, fileSize, res); err != nil {
			s.closeFiles()
			return nil, err
		}
		s.maybeAppendTime(1 << 30)
		if err := s.rewriteIndexFiles(l.open, false); err != nil {
			s.closeFiles()
			return nil, err
		}
	}
	return s, nil
}

// loadIndexes reads a closed segment's index files and finishes its state
// by scanning from the last indexed batch. An error means: rebuild.
func (l *Log) loadIndexes(s *segment, fileSize int64, r *segReader) error {
	ib, err := os.ReadFile(s.path(indexSuffix))
	if err != nil {
		return err
	}
	tb, err := os.ReadFile(s.path(timeIndexSuffix))
	if err != nil {
		return err
	}
	if s.offIdx, err = decodeOffsetIndex(ib, fileSize); err != nil {
		return err
	}
	if s.timeIdx, err = decodeTimeIndex(tb); err != nil {
		return err
	}
	if fileSize > 0 && len(s.timeIdx) == 0 {
		return errors.New("empty time index for a non-empty segment")
	}
	var from int64
	if n := len(s.offIdx); n > 0 {
		from = int64(s.offIdx[n-1].pos)
	}
	s.size = from
	res, err := l.scan(s, r, from, fileSize, false)
	if err != nil {
		return err
	}
	if res.reason != "" {
		return fmt.Errorf("scan from the last index entry stopped: %s", res.reason)
	}
	if n := len(s.offIdx); n > 0 && s.next <= s.base+int64(s.offIdx[n-1].rel) {
		return fmt.Errorf("offset index points past the segment's last offset %d", s.next-1)
	}
	if n := len(s.timeIdx); n > 0 {
		last := s.timeIdx[n-1]
		if s.base+int64(last.rel) >= s.next {
			return fmt.Errorf("time index points past the segment's last offset %d", s.next-1)
		}
		if last.ts >= s.maxTs {
			s.maxTs, s.maxTsOffset = last.ts, s.base+int64(last.rel)
		}
	}
	s.idxFlushed, s.timeFlushed = len(s.offIdx), len(s.timeIdx)
	return nil
}

// truncateBad cuts the .log of s at the end of its last good batch when a
// scan stopped early, logging how many bytes were dropped.
func (l *Log) truncateBad(s *segment, fileSize int64, res scanResult) error {
	if res.validEnd >= fileSize {
		return nil
	}
	if err := s.log.Truncate(res.validEnd); err != nil {
		return fmt.Errorf("cannot truncate segment %q to %d: %w", s.path(logSuffix), res.validEnd, err)
	}
	if res.reason == zeroTailReason {
		l.logger.Debug("trimmed preallocated tail of segment", "segment", s.path(logSuffix), "validBytes", res.validEnd, "fileBytes", fileSize)
		return nil
	}
	l.logger.Warn("truncated invalid tail of segment",
		"segment", s.path(logSuffix), "droppedBytes", fileSize-res.validEnd, "validBytes", res.validEnd, "reason", res.reason)
	return nil
}

// recoverActiveSegment opens the last segment: every batch is checked from
// the start (framing and CRC32C), the file is truncated at the first bad one
// and both indexes are rebuilt; the index files stay open for appends.
func (l *Log) recoverActiveSegment(base int64, create bool) (*segment, error) {
	now := l.opts.Now().UnixMilli()
	s := newSegmentState(l.dir, base, now)
	fileSize, err := l.openSegmentLog(s, create)
	if err != nil {
		return nil, err
	}
	r := &segReader{f: s.log, buf: make([]byte, scanBufSize), end: fileSize, off: -1}
	start := time.Now()
	res, err := l.scan(s, r, 0, fileSize, true)
	if err == nil && fileSize > 0 {
		// Kafka logs its recovery of unflushed segments the same way.
		l.logger.Info("recovered active segment without a clean shutdown", "segment", s.path(logSuffix),
			"validBytes", res.validEnd, "took", time.Since(start).Round(time.Microsecond))
	}
	if err == nil {
		err = l.truncateBad(s, fileSize, res)
	}
	if err == nil {
		err = s.rewriteIndexFiles(l.open, true)
	}
	if err != nil {
		s.closeFiles()
		return nil, err
	}
	l.preallocate(s)
	return s, nil
}

// listDir completes interrupted cleaner swaps, removes leftovers of
// interrupted deletes and cleanings (and orphan swap and stray temporary
// files) and returns the segment base offsets, sorted.
func (l *Log) listDir() ([]int64, error) {
	if err := l.completeSwaps(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list partition directory %q: %w", l.dir, err)
	}
	var bases []int64
	have := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix),
			strings.HasSuffix(name, swapSuffix), strings.HasSuffix(name, ".tmp"):
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("cannot remove leftover %q: %w", name, err)
			}
			l.logger.Info("removed leftover file", "file", filepath.Join(l.dir, name))
			continue
		}
		if base, ok := parseSegmentName(name); ok {
			bases = append(bases, base)
			have[segmentFileName(base, "")] = true
		}
	}
	// Index files whose .log is gone are orphans.
	for _, e := range entries {
		name := e.Name()
		for _, sfx := range []string{indexSuffix, timeIndexSuffix} {
			if stem, ok := strings.CutSuffix(name, sfx); ok && len(stem) == 20 && !have[stem] {
				os.Remove(filepath.Join(l.dir, name))
			}
		}
	}
	slices.Sort(bases)
	return bases, nil
}
