package nvme

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"
)

// Record batch v2 layout (see the package comment). Offsets of the fields, in bytes from
// the start of the batch.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// BatchHeaderSize is the size in bytes of a record batch v2 header; the
	// records start right after it.
	BatchHeaderSize = 61
	// batchLengthBase is the number of bytes before the batch's length field
	// plus the field itself: batch size = batchLengthBase + batchLength.
	batchLengthBase = 12
	// minBatchLength is the smallest legal batchLength (a header, no records).
	minBatchLength = BatchHeaderSize - batchLengthBase

	// DefaultMaxMessageBytes is Kafka's default max.message.bytes.
	DefaultMaxMessageBytes = 1048588
)

// Attribute bits of a record batch v2 (KIP-98, KIP-32).
const (
	AttrCompressionMask = 0x07 // 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	AttrLogAppendTime   = 0x08 // timestamp type: 0 CreateTime, 1 LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
)

// Compression codecs as stored in the low three attribute bits.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLZ4    = 3
	CompressionZstd   = 4
)

// BatchHeader is the decoded 61-byte header of a record batch v2 (KIP-98).
// Timestamps are milliseconds since the Unix epoch.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32 // bytes after this field: the batch occupies 12+BatchLength bytes
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32 // CRC32C of bytes 21..end of the batch
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the batch's total size in bytes (12 + BatchLength).
func (h BatchHeader) Size() int64 { return batchLengthBase + int64(h.BatchLength) }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec in the low three attribute bits (Compression*).
func (h BatchHeader) Compression() int { return int(h.Attributes & AttrCompressionMask) }

// IsLogAppendTime reports whether the timestamp-type attribute bit is set.
func (h BatchHeader) IsLogAppendTime() bool { return h.Attributes&AttrLogAppendTime != 0 }

// IsTransactional reports whether the batch belongs to a transaction.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports whether the batch holds control records (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&AttrControl != 0 }

// ParseBatchHeader decodes the first 61 bytes of b as a record batch v2
// header. It checks only what the header alone can tell: a magic other than 2
// gives ErrUnsupportedMagic, fewer than 61 bytes or a batchLength below the
// header size give ErrCorruptMessage. It does not check the CRC or that b
// holds the whole batch.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if len(b) <= offMagic {
		return h, fmt.Errorf("%w: %d bytes, want at least %d for a batch header", ErrCorruptMessage, len(b), BatchHeaderSize)
	}
	if b[offMagic] != 2 {
		return h, fmt.Errorf("%w: got magic %d", ErrUnsupportedMagic, int8(b[offMagic]))
	}
	if len(b) < BatchHeaderSize {
		return h, fmt.Errorf("%w: %d bytes, want at least %d for a batch header", ErrCorruptMessage, len(b), BatchHeaderSize)
	}
	h = decodeHeader(b)
	if h.BatchLength < minBatchLength {
		return h, fmt.Errorf("%w: batchLength %d below the minimum %d", ErrCorruptMessage, h.BatchLength, minBatchLength)
	}
	return h, nil
}

// decodeHeader decodes a header without checks; b must hold 61 bytes.
func decodeHeader(b []byte) BatchHeader {
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}
}

// batchCRC computes the CRC32C a batch must carry; batch is the whole batch.
func batchCRC(batch []byte) uint32 { return CRC32C(batch[offAttributes:]) }

// ValidateBatches checks the records bytes of a produce request: one or more
// concatenated record batches v2. It returns the number of batches and
// records. Errors, as Kafka's ProduceRequest.validateRecords and
// LogValidator sort them: ErrUnsupportedMagic (magic not 2), ErrCorruptMessage
// (truncated batch, batchLength inconsistent with the bytes, CRC32C mismatch,
// undecompressable body, unknown codec), ErrMessageTooLarge (a batch larger
// than o.MaxMessageBytes, default DefaultMaxMessageBytes), ErrInvalidRecord
// (no batch at all, record count or lastOffsetDelta inconsistent, records
// that do not parse or do not fill the batch, offset deltas not 0..n-1, a
// keyless record when o.RequireKeys), ErrInvalidTimestamp (with
// o.CheckTimestamps, a record timestamp outside [now-before, now+after]).
// Compressed batches are decompressed to check their records (they are
// stored compressed, as sent). It never modifies records.
func ValidateBatches(records []byte, o AppendOptions) (batches, numRecords int, err error) {
	var d decompressor
	defer d.close()
	return validateBatches(records, o, &d, time.Now().UnixMilli())
}

// recordRules are the record-level checks of one append.
type recordRules struct {
	requireKeys  bool
	checkTs      bool
	minTs, maxTs int64 // with checkTs: the record timestamps allowed, inclusive
}

// rulesFor are o's record rules at nowMs.
func rulesFor(o AppendOptions, nowMs int64) recordRules {
	r := recordRules{requireKeys: o.RequireKeys, checkTs: o.CheckTimestamps && !o.LogAppendTime}
	if r.checkTs {
		r.minTs, r.maxTs = math.MinInt64, math.MaxInt64
		if o.TimestampBeforeMaxMs >= 0 && nowMs >= 0 { // cannot overflow
			r.minTs = nowMs - o.TimestampBeforeMaxMs
		}
		if o.TimestampAfterMaxMs >= 0 && math.MaxInt64-nowMs > o.TimestampAfterMaxMs {
			r.maxTs = nowMs + o.TimestampAfterMaxMs
		}
	}
	return r
}

func validateBatches(records []byte, o AppendOptions, d *decompressor, nowMs int64) (batches, numRecords int, err error) {
	if len(records) == 0 {
		return 0, 0, fmt.Errorf("%w: no record batches", ErrInvalidRecord)
	}
	rules := rulesFor(o, nowMs)
	maxBytes := int64(o.MaxMessageBytes)
	if maxBytes <= 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	for pos := 0; pos < len(records); {
		h, err := ParseBatchHeader(records[pos:])
		if err != nil {
			return 0, 0, fmt.Errorf("batch %d at byte %d: %w", batches, pos, err)
		}
		size := h.Size()
		if size > int64(len(records)-pos) {
			return 0, 0, fmt.Errorf("%w: batch %d at byte %d: batchLength %d exceeds the %d bytes left", ErrCorruptMessage, batches, pos, h.BatchLength, len(records)-pos-batchLengthBase)
		}
		if size > maxBytes {
			return 0, 0, fmt.Errorf("%w: batch %d is %d bytes, limit %d", ErrMessageTooLarge, batches, size, maxBytes)
		}
		batch := records[pos : pos+int(size)]
		if err := validateBatch(batch, h, rules, d); err != nil {
			return 0, 0, fmt.Errorf("batch %d at byte %d: %w", batches, pos, err)
		}
		batches++
		numRecords += int(h.RecordCount)
		pos += int(size)
	}
	return batches, numRecords, nil
}

// validateBatch checks one whole batch whose header h was parsed from it.
func validateBatch(batch []byte, h BatchHeader, rules recordRules, d *decompressor) error {
	if got := batchCRC(batch); got != h.CRC {
		return fmt.Errorf("%w: CRC32C is %#08x, header says %#08x", ErrCorruptMessage, got, h.CRC)
	}
	if h.RecordCount <= 0 {
		return fmt.Errorf("%w: record count %d", ErrInvalidRecord, h.RecordCount)
	}
	if h.LastOffsetDelta != h.RecordCount-1 {
		return fmt.Errorf("%w: lastOffsetDelta %d inconsistent with record count %d", ErrInvalidRecord, h.LastOffsetDelta, h.RecordCount)
	}
	body := batch[BatchHeaderSize:]
	switch c := h.Compression(); c {
	case CompressionNone:
		return checkRecords(body, h, rules)
	case CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd:
		// Decompressed to check the records, as Kafka's validator does: a
		// batch that cannot be decompressed would stop every consumer at its
		// offset. It is still stored as it came.
		raw, err := d.decompress(c, body)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
		}
		return checkRecords(raw, h, rules)
	default:
		return fmt.Errorf("%w: unknown compression codec %d", ErrCorruptMessage, c)
	}
}

// checkRecords walks the h.RecordCount records of batch h in b, which
// they must fill exactly. A refused record gives a *RecordsError naming it
// by its index in the batch; keyless records on a compacted topic and
// records whose timestamp is out of bounds are all named, as Kafka's
// LogValidator collects every record error of a batch (the error is
// ErrInvalidTimestamp when any timestamp is refused, as Kafka answers
// INVALID_TIMESTAMP then), while a record that does not parse or is
// misnumbered stops the walk.
func checkRecords(b []byte, h BatchHeader, rules recordRules) error {
	count := h.RecordCount
	it := recordIter{b: b}
	var refused []RecordError
	badTs := false
	for i := int32(0); i < count; i++ {
		r, ok := it.next()
		if !ok {
			return refuseRecord(i, fmt.Sprintf("record %d of %d: %s", i, count, it.err))
		}
		if r.offsetDelta != i {
			// A producer numbers its records 0..n-1; any other numbering
			// gives offsets outside [baseOffset, lastOffset] that consumers
			// cannot advance past (Kafka refuses it too, INVALID_RECORD).
			// Compacted batches have gaps, but they never come through a
			// produce request.
			return refuseRecord(i, fmt.Sprintf("record %d has offset delta %d; a produced batch numbers its records 0..n-1", i, r.offsetDelta))
		}
		if rules.requireKeys && r.keyLen < 0 {
			refused = append(refused, RecordError{Index: i, Message: fmt.Sprintf("record %d has no key, which a compacted topic requires", i)})
		}
		if rules.checkTs {
			if ts := h.BaseTimestamp + r.timestampDelta; ts < rules.minTs || ts > rules.maxTs {
				badTs = true
				refused = append(refused, RecordError{Index: i, Message: fmt.Sprintf("timestamp %d of record %d is out of range; the timestamp should be within [%d, %d]", ts, i, rules.minTs, rules.maxTs)})
			}
		}
	}
	if it.pos != len(b) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, len(b)-it.pos, count)
	}
	if refused != nil {
		if badTs {
			return &RecordsError{Err: ErrInvalidTimestamp, Records: refused}
		}
		return &RecordsError{Err: ErrInvalidRecord, Records: refused}
	}
	return nil
}

// refuseRecord is a *RecordsError for the one record i of a batch.
func refuseRecord(i int32, msg string) error {
	return &RecordsError{Err: ErrInvalidRecord, Records: []RecordError{{Index: i, Message: msg}}}
}

// RecordError is one record that validation refused: its index in its
// batch and why (Kafka's ProduceResponse RecordErrors, batch_index and
// batch_index_error_message, KIP-467).
type RecordError struct {
	Index   int32
	Message string
}

// RecordsError is a validation failure that names the records at fault,
// as Kafka's RecordValidationException does. It wraps Err, the sentinel
// that gives its error code (ErrInvalidRecord or ErrInvalidTimestamp).
type RecordsError struct {
	Err     error
	Records []RecordError
}

// Error names the sentinel and the first three refused records, as Kafka's
// message does.
func (e *RecordsError) Error() string {
	var sb strings.Builder
	sb.WriteString(e.Err.Error())
	fmt.Fprintf(&sb, ": %d record(s) refused", len(e.Records))
	for i, r := range e.Records {
		if i == 3 {
			sb.WriteString("; ...")
			break
		}
		sb.WriteString("; ")
		sb.WriteString(r.Message)
	}
	return sb.String()
}

// Unwrap returns the sentinel.
func (e *RecordsError) Unwrap() error { return e.Err }

// record is the part of a record v2 that the package looks at.
type record struct {
	attrs          int8
	timestampDelta int64
	offsetDelta    int32
	keyLen         int // -1 for a null key
}

// recordIter walks records v2 (varint length-prefixed, zigzag varints).
type recordIter struct {
	b   []byte
	pos int
	err string // why next returned false; a constant, so no allocation
}

func (it *recordIter) next() (record, bool) {
	var r record
	length, ok := it.varint(it.b, &it.pos)
	if !ok {
		return r, false
	}
	if length < 0 || int64(length) > int64(len(it.b)-it.pos) {
		it.err = "record length exceeds the batch"
		return r, false
	}
	body := it.b[it.pos : it.pos+int(length)]
	it.pos += int(length)
	p := 0
	if len(body) < 1 {
		it.err = "empty record"
		return r, false
	}
	r.attrs = int8(body[0])
	p++
	if len(body) > 1 && body[1] < 0x80 { // a one-byte timestampDelta
		c := body[1]
		r.timestampDelta = int64(c>>1) ^ -int64(c&1)
		p++
	} else {
		ts, n := binary.Varint(body[p:])
		if n <= 0 {
			it.err = "bad timestampDelta varint"
			return r, false
		}
		p += n
		r.timestampDelta = ts
	}
	od, ok := it.varint(body, &p)
	if !ok {
		return r, false
	}
	r.offsetDelta = od
	kl, ok := it.bytesField(body, &p)
	if !ok {
		return r, false
	}
	r.keyLen = kl
	if _, ok := it.bytesField(body, &p); !ok { // value
		return r, false
	}
	headers, ok := it.varint(body, &p)
	if !ok {
		return r, false
	}
	if headers < 0 {
		it.err = "negative header count"
		return r, false
	}
	for i := int32(0); i < headers; i++ {
		hk, ok := it.bytesField(body, &p)
		if !ok {
			return r, false
		}
		if hk < 0 {
			it.err = "null header key"
			return r, false
		}
		if _, ok := it.bytesField(body, &p); !ok {
			return r, false
		}
	}
	if p != len(body) {
		it.err = "record length does not match its fields"
		return r, false
	}
	return r, true
}

// varint reads a zigzag varint that must fit an int32. Encodings of one
// and two bytes (every field of a record under 8 KiB) are decoded inline:
// through binary.Varint they were ~40% of Append's record walk.
func (it *recordIter) varint(b []byte, p *int) (int32, bool) {
	if i := *p; i+1 < len(b) {
		if c := b[i]; c < 0x80 {
			*p = i + 1
			return int32(c>>1) ^ -int32(c&1), true
		} else if d := b[i+1]; d < 0x80 {
			u := uint32(c&0x7f) | uint32(d)<<7
			*p = i + 2
			return int32(u>>1) ^ -int32(u&1), true
		}
	}
	if *p > len(b) {
		it.err = "truncated varint"
		return 0, false
	}
	v, n := binary.Varint(b[*p:])
	if n <= 0 || v < -1<<31 || v > 1<<31-1 {
		it.err = "bad varint"
		return 0, false
	}
	*p += n
	return int32(v), true
}

// bytesField skips a varint length-prefixed byte string; a negative length
// is null. It returns the length (-1 for null).
func (it *recordIter) bytesField(b []byte, p *int) (int, bool) {
	l, ok := it.varint(b, p)
	if !ok {
		return 0, false
	}
	if l < 0 {
		return -1, true
	}
	if int64(l) > int64(len(b)-*p) {
		it.err = "byte field exceeds the record"
		return 0, false
	}
	*p += int(l)
	return int(l), true
}
