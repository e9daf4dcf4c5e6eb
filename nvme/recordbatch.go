package nvme

// Encoding and decoding of the uncompressed record batches that internal
// logs (the metadata log, __consumer_offsets, __transaction_state) hold.

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendBatch appends one uncompressed record batch v2 holding recs, with
// baseOffset 0 (the log assigns offsets) and every record stamped ts (ms).
// producerID -1 makes it a plain, non-idempotent batch. attrs may carry the
// control (0x20) and transactional (0x10) bits.
func AppendBatch(dst []byte, ts int64, attrs int16, producerID int64, producerEpoch int16, baseSeq int32, recs []kmsg.Record) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, 0)             // baseOffset
	dst = binary.BigEndian.AppendUint32(dst, 0)             // batchLength, patched below
	dst = binary.BigEndian.AppendUint32(dst, 0)             // partitionLeaderEpoch
	dst = append(dst, 2)                                    // magic
	dst = binary.BigEndian.AppendUint32(dst, 0)             // crc, patched below
	dst = binary.BigEndian.AppendUint16(dst, uint16(attrs)) // attributes
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(recs)-1))
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	dst = binary.BigEndian.AppendUint64(dst, uint64(producerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(producerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(baseSeq))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(recs)))
	for i := range recs {
		r := recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = 0
		r.TimestampDelta = 0
		r.Length = 0
		// Encode with a zero length (one varint byte), then prefix the real length.
		body := r.AppendTo(nil)[1:]
		dst = binary.AppendVarint(dst, int64(len(body)))
		dst = append(dst, body...)
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-12))
	binary.BigEndian.PutUint32(dst[start+17:], CRC32C(dst[start+21:]))
	return dst
}

// ReadBatches splits raw into record batches and decodes the records of
// each uncompressed one. fn is called once per record with the batch's
// absolute base offset applied. Compressed batches are an error: internal
// topics are written uncompressed.
func ReadBatches(raw []byte, fn func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error) error {
	for len(raw) > 0 {
		if len(raw) < 61 {
			return fmt.Errorf("cannot read record batch: %d trailing bytes", len(raw))
		}
		n := int(int32(binary.BigEndian.Uint32(raw[8:]))) + 12
		if n < 61 || n > len(raw) {
			return fmt.Errorf("cannot read record batch: length %d with %d bytes left", n, len(raw))
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:n]); err != nil {
			return fmt.Errorf("cannot read record batch: %w", err)
		}
		raw = raw[n:]
		if b.Attributes&0x7 != 0 {
			return fmt.Errorf("cannot read compressed internal batch at offset %d", b.FirstOffset)
		}
		recs := b.Records
		for i := int32(0); i < b.NumRecords; i++ {
			var r kmsg.Record
			if len(recs) == 0 {
				return fmt.Errorf("cannot read record %d of batch at %d: truncated", i, b.FirstOffset)
			}
			l, sz := binary.Varint(recs)
			if sz <= 0 || l < 0 || int(l) > len(recs)-sz {
				return fmt.Errorf("cannot read record %d of batch at %d: bad length", i, b.FirstOffset)
			}
			if err := r.ReadFrom(recs[:sz+int(l)]); err != nil {
				return fmt.Errorf("cannot read record %d of batch at %d: %w", i, b.FirstOffset, err)
			}
			recs = recs[sz+int(l):]
			if err := fn(&b, b.FirstOffset+int64(r.OffsetDelta), &r); err != nil {
				return err
			}
		}
	}
	return nil
}
