package nvme

import (
	"fmt"
)

// OffsetForTimestamp answers ListOffsets by timestamp (KIP-79): the first
// offset at or above the log start offset whose record timestamp is >= ts,
// with that record's timestamp. The time index narrows the search, batch
// headers find the first batch whose maxTimestamp is >= ts, and its records
// are walked (decompressed if needed) for the exact record; LogAppendTime
// batches answer with their first offset. ok is false when no record
// qualifies, the log is closed or an I/O error occurs.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	if l.usable() != nil {
		return -1, -1, false
	}
	for _, s := range l.segs {
		if s.maxTs < ts || s.next <= l.startOffset {
			continue
		}
		off, rts, found, err := l.searchSegment(s, ts, l.startOffset)
		if err != nil {
			l.logger.Warn("timestamp lookup failed", "segment", s.path(logSuffix), "err", err)
			return -1, -1, false
		}
		if found {
			return off, rts, true
		}
	}
	return -1, -1, false
}

// MaxTimestamp answers ListOffsets with timestamp -3 (KIP-734): the largest
// record timestamp in the log and the offset of the first record that has
// it. An empty log returns (-1, -1).
func (l *Log) MaxTimestamp() (timestamp int64, offset int64) {
	if l.usable() != nil {
		return -1, -1
	}
	var best *segment
	for _, s := range l.segs {
		if s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if best == nil {
		return -1, -1
	}
	off, _, found, err := l.searchSegment(best, best.maxTs, best.base)
	if err != nil || !found {
		return best.maxTs, best.maxTsOffset
	}
	return best.maxTs, off
}

// searchSegment finds in s the first record with offset >= minOffset and
// timestamp >= ts.
func (l *Log) searchSegment(s *segment, ts, minOffset int64) (offset, timestamp int64, found bool, err error) {
	var pos int64
	if rel, ok := timeFloor(s.timeIdx, ts); ok {
		pos = floorPosition(s.offIdx, int64(rel))
	}
	if minOffset > s.base {
		p, err := s.findBatch(minOffset, l.hdr[:])
		if err != nil {
			return 0, 0, false, err
		}
		pos = max(pos, p)
	}
	for pos < s.size {
		r, err := s.readBatchRef(pos, l.hdr[:])
		if err != nil {
			return 0, 0, false, err
		}
		if err := readFull(s.log, l.hdr[:], pos); err != nil {
			return 0, 0, false, fmt.Errorf("cannot read segment %q at %d: %w", s.path(logSuffix), pos, err)
		}
		h := decodeHeader(l.hdr[:])
		if h.MaxTimestamp >= ts && h.LastOffset() >= minOffset {
			off, rts := l.recordAtOrAfter(s, pos, h, ts, minOffset)
			return off, rts, true, nil
		}
		pos += r.size
	}
	return 0, 0, false, nil
}

// recordAtOrAfter walks the batch h at pos for the first record with offset
// >= minOffset and timestamp >= ts. When the records cannot be read it falls
// back to the batch's first eligible offset and maxTimestamp.
func (l *Log) recordAtOrAfter(s *segment, pos int64, h BatchHeader, ts, minOffset int64) (int64, int64) {
	fallback := max(h.BaseOffset, minOffset)
	if h.IsLogAppendTime() {
		return fallback, h.MaxTimestamp
	}
	buf := make([]byte, h.Size())
	if err := readFull(s.log, buf, pos); err != nil {
		return fallback, h.MaxTimestamp
	}
	body := buf[BatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		raw, err := l.dec.decompress(c, body)
		if err != nil {
			return fallback, h.MaxTimestamp
		}
		body = raw
	}
	it := recordIter{b: body}
	for i := int32(0); i < h.RecordCount; i++ {
		r, ok := it.next()
		if !ok {
			break
		}
		off := h.BaseOffset + int64(r.offsetDelta)
		rts := h.BaseTimestamp + r.timestampDelta
		if off >= minOffset && rts >= ts {
			return off, rts
		}
	}
	return fallback, h.MaxTimestamp
}
