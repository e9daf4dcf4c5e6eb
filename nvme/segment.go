package nvme

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File name suffixes of a segment.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
)

// segment is one .log file with its offset and time indexes. The indexes are
// kept in memory; the active segment also keeps its index files open and
// appends to them, closed segments have only the .log open.
type segment struct {
	base int64
	dir  string
	log  file
	idx  file // nil unless active
	tidx file // nil unless active

	size int64 // bytes of whole batches in the .log
	next int64 // offset after the last batch; base when empty

	offIdx  []offsetEntry
	timeIdx []timeEntry
	// idxFlushed and timeFlushed count the entries already in the files.
	idxFlushed, timeFlushed int

	maxTs         int64 // largest batch maxTimestamp; -1 when none
	maxTsOffset   int64 // last offset of the first batch carrying maxTs
	bytesSinceIdx int64
	createdMs     int64 // when this process created or opened the segment
	firstTs       int64 // maxTimestamp of the first batch; -1 when empty or unknown
	preallocated  bool  // the .log was fallocated past size (Log.preallocate)
	allocated     int64 // bytes of the .log fallocated while preallocated

	// recent remembers the active segment's last appended batches
	// (recentRing); nil on closed segments.
	recent *recentRing
}

func segmentFileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentFileName(s.base, suffix))
}

// parseSegmentName returns the base offset of a "<20 digits>.log" name.
func parseSegmentName(name string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

func newSegmentState(dir string, base, nowMs int64) *segment {
	return &segment{base: base, dir: dir, next: base, maxTs: -1, maxTsOffset: -1, createdMs: nowMs, firstTs: -1}
}

// lastTimeIndexTs is the timestamp of the last time entry, -1 if none.
func (s *segment) lastTimeIndexTs() int64 {
	if n := len(s.timeIdx); n > 0 {
		return s.timeIdx[n-1].ts
	}
	return -1
}

// indexLimits returns how many entries each index may hold.
func indexLimits(maxIndexBytes int32) (offsets, times int) {
	return int(maxIndexBytes) / offsetEntrySize, int(maxIndexBytes) / timeEntrySize
}

// track accounts one batch stored at pos, following Kafka's LogSegment.append:
// an index entry (batch last offset -> batch position) once more than
// interval bytes were written since the previous one, and with it a time
// entry when the segment's max timestamp grew.
func (s *segment) track(pos, size, lastOffset, maxTs int64, interval int64, maxIdx, maxTime int) {
	if pos == 0 {
		s.firstTs = maxTs
	}
	if maxTs > s.maxTs {
		s.maxTs, s.maxTsOffset = maxTs, lastOffset
	}
	if s.bytesSinceIdx > interval && len(s.offIdx) < maxIdx {
		s.offIdx = append(s.offIdx, offsetEntry{rel: int32(lastOffset - s.base), pos: int32(pos)})
		s.maybeAppendTime(maxTime)
		s.bytesSinceIdx = 0
	}
	s.bytesSinceIdx += size
	s.next = lastOffset + 1
	s.size = pos + size
}

// maybeAppendTime adds a time entry for the current max timestamp if it is
// newer than the last entry.
func (s *segment) maybeAppendTime(maxTime int) {
	if s.maxTs > s.lastTimeIndexTs() && len(s.timeIdx) < maxTime {
		s.timeIdx = append(s.timeIdx, timeEntry{ts: s.maxTs, rel: int32(s.maxTsOffset - s.base)})
	}
}

// indexFlushBytes is how many bytes of new index entries an active
// segment gathers before Append writes them to its index files. Reads use
// the entries in memory, and recovery rebuilds the last segment's indexes
// from its batches (recoverActiveSegment), so the files of the active
// segment matter only once it is closed, when deactivate writes the rest.
// Writing each append's entry (one pwrite(2) per index file per append)
// took ~4% of the broker's CPU at 10 MB/s on 16 partitions; a page of
// entries is ~500 batches.
const indexFlushBytes = 4096

// indexBacklog is the size in bytes of the index entries of the larger
// index not yet in its file.
func (s *segment) indexBacklog() int {
	return max((len(s.offIdx)-s.idxFlushed)*offsetEntrySize, (len(s.timeIdx)-s.timeFlushed)*timeEntrySize)
}

// flushIndexes writes index entries not yet in the files (active segment).
// scratch is a reusable buffer; the grown buffer is returned.
func (s *segment) flushIndexes(scratch []byte) ([]byte, error) {
	if s.idx != nil && s.idxFlushed < len(s.offIdx) {
		scratch = scratch[:0]
		for _, e := range s.offIdx[s.idxFlushed:] {
			scratch = appendOffsetEntry(scratch, e)
		}
		if _, err := s.idx.WriteAt(scratch, int64(s.idxFlushed)*offsetEntrySize); err != nil {
			return scratch, fmt.Errorf("cannot write offset index %q: %w", s.path(indexSuffix), err)
		}
		s.idxFlushed = len(s.offIdx)
	}
	if s.tidx != nil && s.timeFlushed < len(s.timeIdx) {
		scratch = scratch[:0]
		for _, e := range s.timeIdx[s.timeFlushed:] {
			scratch = appendTimeEntry(scratch, e)
		}
		if _, err := s.tidx.WriteAt(scratch, int64(s.timeFlushed)*timeEntrySize); err != nil {
			return scratch, fmt.Errorf("cannot write time index %q: %w", s.path(timeIndexSuffix), err)
		}
		s.timeFlushed = len(s.timeIdx)
	}
	return scratch, nil
}

// rewriteIndexFiles replaces both index files with the in-memory entries.
// When the segment is not active the files are closed afterwards.
func (s *segment) rewriteIndexFiles(open opener, active bool) error {
	var buf []byte
	for _, e := range s.offIdx {
		buf = appendOffsetEntry(buf, e)
	}
	if err := s.rewriteFile(open, indexSuffix, buf, active, &s.idx); err != nil {
		return err
	}
	s.idxFlushed = len(s.offIdx)
	buf = buf[:0]
	for _, e := range s.timeIdx {
		buf = appendTimeEntry(buf, e)
	}
	if err := s.rewriteFile(open, timeIndexSuffix, buf, active, &s.tidx); err != nil {
		return err
	}
	s.timeFlushed = len(s.timeIdx)
	return nil
}

func (s *segment) rewriteFile(open opener, suffix string, data []byte, keep bool, dst *file) error {
	path := s.path(suffix)
	f, err := open(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create index %q: %w", path, err)
	}
	if len(data) > 0 {
		if _, err := f.WriteAt(data, 0); err != nil {
			f.Close()
			return fmt.Errorf("cannot write index %q: %w", path, err)
		}
	}
	if keep {
		*dst = f
		return nil
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot close index %q: %w", path, err)
	}
	return nil
}

// deactivate turns the active segment into a closed one: a final time entry
// with the segment's max timestamp, index files written and trimmed, the
// .log and the indexes fdatasynced, index files closed.
func (s *segment) deactivate(maxTime int, scratch []byte, sync bool) ([]byte, error) {
	if s.maxTs > s.lastTimeIndexTs() {
		// Kafka skips the full check for this final entry.
		s.timeIdx = append(s.timeIdx, timeEntry{ts: s.maxTs, rel: int32(s.maxTsOffset - s.base)})
	}
	scratch, err := s.flushIndexes(scratch)
	if err != nil {
		return scratch, err
	}
	var errs []error
	for _, x := range []struct {
		f    file
		size int64
		sfx  string
	}{{s.idx, int64(len(s.offIdx)) * offsetEntrySize, indexSuffix}, {s.tidx, int64(len(s.timeIdx)) * timeEntrySize, timeIndexSuffix}} {
		if x.f == nil {
			continue
		}
		if err := x.f.Truncate(x.size); err != nil {
			errs = append(errs, fmt.Errorf("cannot trim index %q: %w", s.path(x.sfx), err))
		}
		if sync {
			if err := x.f.Datasync(); err != nil {
				errs = append(errs, fmt.Errorf("cannot fdatasync index %q: %w", s.path(x.sfx), err))
			}
		}
		if err := x.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cannot close index %q: %w", s.path(x.sfx), err))
		}
	}
	s.idx, s.tidx, s.recent = nil, nil, nil
	if err := s.trimLog(); err != nil {
		errs = append(errs, err)
	}
	if sync {
		if err := s.log.Datasync(); err != nil {
			errs = append(errs, fmt.Errorf("cannot fdatasync segment %q: %w", s.path(logSuffix), err))
		}
	}
	return scratch, errors.Join(errs...)
}

// readAt reads exactly len(p) bytes at off.
func readFull(f file, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// batchRef is what scanning a header yields about one stored batch.
type batchRef struct {
	pos, size          int64
	baseOffset, lastOf int64
}

// readBatchRef reads the first 27 header bytes of the batch at pos into hdr
// (len >= 27) and checks that the batch lies inside the segment.
func (s *segment) readBatchRef(pos int64, hdr []byte) (batchRef, error) {
	if s.recent != nil {
		if r, ok := s.recent.get(pos); ok {
			return r, nil
		}
	}
	hdr = hdr[:offLastOffsetDelta+4]
	if pos+int64(len(hdr)) > s.size {
		return batchRef{}, fmt.Errorf("%w: segment %q: batch header at %d runs past the end %d", ErrCorruptMessage, s.path(logSuffix), pos, s.size)
	}
	if err := readFull(s.log, hdr, pos); err != nil {
		return batchRef{}, fmt.Errorf("cannot read segment %q at %d: %w", s.path(logSuffix), pos, err)
	}
	be := binary.BigEndian
	length := int64(int32(be.Uint32(hdr[offBatchLength:])))
	r := batchRef{pos: pos, size: batchLengthBase + length, baseOffset: int64(be.Uint64(hdr[offBaseOffset:]))}
	r.lastOf = r.baseOffset + int64(int32(be.Uint32(hdr[offLastOffsetDelta:])))
	if length < minBatchLength || pos+r.size > s.size {
		return batchRef{}, fmt.Errorf("%w: segment %q: batch at %d has batchLength %d, segment size %d", ErrCorruptMessage, s.path(logSuffix), pos, length, s.size)
	}
	return r, nil
}

// findBatch returns the position of the first batch whose last offset is >=
// offset, or s.size when there is none.
func (s *segment) findBatch(offset int64, hdr []byte) (int64, error) {
	if offset <= s.base {
		return 0, nil
	}
	if offset >= s.next {
		return s.size, nil
	}
	pos, exact := s.searchStart(offset)
	if exact {
		return pos, nil
	}
	for pos < s.size {
		r, err := s.readBatchRef(pos, hdr)
		if err != nil {
			return 0, err
		}
		if r.lastOf >= offset {
			return pos, nil
		}
		pos += r.size
	}
	return s.size, nil
}

// searchStart is where the search for the batch holding offset (base <
// offset < next) begins: the batch itself when the recent-batch list knows
// it (exact), else the offset index's position at or before it.
func (s *segment) searchStart(offset int64) (pos int64, exact bool) {
	if s.recent != nil {
		if pos, ok := s.recent.find(offset); ok {
			return pos, true
		}
	}
	return floorPosition(s.offIdx, offset-s.base), false
}

// batchSpan bounds, without reading a header, where the batch holding
// offset (base < offset < next) starts: at or after from, which is where
// findBatch begins its search (searchStart), and at or before to. Index
// entries map a batch's last offset to its position, so the batch holding
// offset starts at the floor entry when that entry's batch ends at offset,
// else after it and at the latest where the next entry's batch starts (that
// batch ends past offset); with no next entry, the end of the segment
// bounds it. The floor entry's batch may be as large as a batch can be
// (a 1 MB producer batch ends ~1 MB before the one a consumer asks for
// next), so from alone says nothing about where the read ends.
func (s *segment) batchSpan(offset int64) (from, to int64) {
	if s.recent != nil {
		if pos, ok := s.recent.find(offset); ok {
			return pos, pos
		}
	}
	rel := offset - s.base
	es := s.offIdx
	i := entryPast(es, rel)
	if i > 0 {
		from = int64(es[i-1].pos)
		if int64(es[i-1].rel) == rel {
			return from, from
		}
	}
	if i < len(es) {
		return from, int64(es[i].pos)
	}
	return from, s.size
}

// closeFiles closes every open file of the segment.
func (s *segment) closeFiles() error {
	s.forgetCached()
	s.recent = nil
	var errs []error
	for _, f := range []file{s.idx, s.tidx, s.log} {
		if f != nil {
			if err := f.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.idx, s.tidx = nil, nil
	return errors.Join(errs...)
}
