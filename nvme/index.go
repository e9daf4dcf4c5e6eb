package nvme

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Index entry sizes on disk (big-endian, as Kafka writes them).
const (
	offsetEntrySize = 8  // relative offset int32, position int32
	timeEntrySize   = 12 // timestamp int64, relative offset int32
)

// offsetEntry maps a batch's last offset (relative to the segment base) to
// the file position where that batch starts, as Kafka's OffsetIndex does.
type offsetEntry struct {
	rel int32
	pos int32
}

// timeEntry records the largest batch maxTimestamp seen so far in a segment
// and the (relative) last offset of the batch that carried it.
type timeEntry struct {
	ts  int64
	rel int32
}

func appendOffsetEntry(dst []byte, e offsetEntry) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(e.rel))
	return binary.BigEndian.AppendUint32(dst, uint32(e.pos))
}

func appendTimeEntry(dst []byte, e timeEntry) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.ts))
	return binary.BigEndian.AppendUint32(dst, uint32(e.rel))
}

// decodeOffsetIndex parses and checks an offset index file's bytes against
// its segment: entries strictly increasing in offset and position, positions
// inside the log file of logSize bytes.
func decodeOffsetIndex(b []byte, logSize int64) ([]offsetEntry, error) {
	if len(b)%offsetEntrySize != 0 {
		return nil, fmt.Errorf("offset index size %d is not a multiple of %d", len(b), offsetEntrySize)
	}
	es := make([]offsetEntry, 0, len(b)/offsetEntrySize)
	for p := 0; p < len(b); p += offsetEntrySize {
		e := offsetEntry{rel: int32(binary.BigEndian.Uint32(b[p:])), pos: int32(binary.BigEndian.Uint32(b[p+4:]))}
		if e.rel < 0 || e.pos < 0 || int64(e.pos) >= logSize {
			return nil, fmt.Errorf("offset index entry %d (%d, %d) outside the segment of %d bytes", len(es), e.rel, e.pos, logSize)
		}
		if n := len(es); n > 0 && (e.rel <= es[n-1].rel || e.pos <= es[n-1].pos) {
			return nil, fmt.Errorf("offset index entry %d (%d, %d) does not follow (%d, %d)", n, e.rel, e.pos, es[n-1].rel, es[n-1].pos)
		}
		es = append(es, e)
	}
	return es, nil
}

// decodeTimeIndex parses and checks a time index file's bytes: timestamps
// strictly increasing, offsets non-decreasing and non-negative.
func decodeTimeIndex(b []byte) ([]timeEntry, error) {
	if len(b)%timeEntrySize != 0 {
		return nil, fmt.Errorf("time index size %d is not a multiple of %d", len(b), timeEntrySize)
	}
	es := make([]timeEntry, 0, len(b)/timeEntrySize)
	for p := 0; p < len(b); p += timeEntrySize {
		e := timeEntry{ts: int64(binary.BigEndian.Uint64(b[p:])), rel: int32(binary.BigEndian.Uint32(b[p+8:]))}
		if e.rel < 0 {
			return nil, fmt.Errorf("time index entry %d has negative offset %d", len(es), e.rel)
		}
		if n := len(es); n > 0 && (e.ts <= es[n-1].ts || e.rel < es[n-1].rel) {
			return nil, fmt.Errorf("time index entry %d (%d, %d) does not follow (%d, %d)", n, e.ts, e.rel, es[n-1].ts, es[n-1].rel)
		}
		es = append(es, e)
	}
	return es, nil
}

// entryPast is the index of the first entry whose (relative) last offset
// is > rel, len(es) when there is none.
func entryPast(es []offsetEntry, rel int64) int {
	return sort.Search(len(es), func(i int) bool { return int64(es[i].rel) > rel })
}

// floorPosition returns the position of the last indexed batch whose
// (relative) last offset is <= rel, or 0 when there is none. Scanning from
// there reaches the batch holding rel.
func floorPosition(es []offsetEntry, rel int64) int64 {
	i := entryPast(es, rel)
	if i == 0 {
		return 0
	}
	return int64(es[i-1].pos)
}

// timeFloor returns the relative offset of the last time entry whose
// timestamp is strictly below ts, and false when there is none. All batches up
// to that offset have maxTimestamp < ts.
func timeFloor(es []timeEntry, ts int64) (int32, bool) {
	i := sort.Search(len(es), func(i int) bool { return es[i].ts >= ts })
	if i == 0 {
		return 0, false
	}
	return es[i-1].rel, true
}
