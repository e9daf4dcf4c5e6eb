package nvme

import (
	"encoding/binary"
	"fmt"
)

// Recompressor rewrites a produced record batch to a topic's codec, as
// Kafka's LogValidator does when a topic's compression.type is not
// `producer` and differs from the batch's codec (KIP-390 for the levels):
// the records are decompressed and compressed again with the target codec,
// or stored uncompressed for `uncompressed`. Everything else in the batch
// header is kept (base and max timestamp, producer id, epoch and base
// sequence, the transactional bit, the record count and last offset
// delta), and the records themselves are byte for byte those the producer
// sent, so offsets, timestamps and keys read back the same; only the codec
// bits, the batch length and the CRC change.
//
// It is CPU work of up to tens of milliseconds for a large batch at a high
// gzip level, so callers run it off the shard loops (the produce handler,
// on the connection's goroutine) and hand the shard the rewritten batch,
// which Log.Append validates again as any other. A Recompressor is owned by
// one goroutine at a time; the zero value is ready to use; Close releases
// the zstd encoder and decoder.
type Recompressor struct {
	dec decompressor
	enc compressor
}

// Close releases the encoders' and decoders' memory.
func (r *Recompressor) Close() {
	r.dec.close()
	r.enc.close()
}

// Recompress returns records rewritten to codec (Compression*) at levels,
// in a new slice that the caller owns, and true; or records itself and
// false when nothing is to change or records are not one whole valid batch
// v2: a batch already in codec (Kafka keeps it as it is), a control batch,
// zero or several batches, or one whose framing, CRC or records validation
// refuses (then Log.Append refuses it with the error validation gives, as
// if it had not been looked at). An error is returned only when the
// encoder fails.
func (r *Recompressor) Recompress(records []byte, codec int, levels Levels) ([]byte, bool, error) {
	h, err := ParseBatchHeader(records)
	if err != nil || h.Size() != int64(len(records)) || h.IsControl() || h.Compression() == codec {
		return records, false, nil
	}
	if codec < CompressionNone || codec > CompressionZstd {
		return nil, false, fmt.Errorf("cannot recompress to unknown codec %d", codec)
	}
	if got := batchCRC(records); got != h.CRC || h.RecordCount <= 0 || h.LastOffsetDelta != h.RecordCount-1 {
		return records, false, nil
	}
	raw := records[BatchHeaderSize:]
	switch c := h.Compression(); c {
	case CompressionNone:
	case CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd:
		if raw, err = r.dec.decompress(c, raw); err != nil {
			return records, false, nil
		}
	default:
		return records, false, nil
	}
	if checkRecords(raw, h, recordRules{}) != nil {
		return records, false, nil
	}
	body := raw
	if codec != CompressionNone {
		r.enc.setLevels(levels)
		if body, err = r.enc.compress(codec, raw); err != nil {
			return nil, false, err
		}
	}
	out := make([]byte, BatchHeaderSize+len(body))
	copy(out, records[:BatchHeaderSize])
	copy(out[BatchHeaderSize:], body)
	be := binary.BigEndian
	be.PutUint32(out[offBatchLength:], uint32(len(out)-batchLengthBase))
	attrs := be.Uint16(out[offAttributes:])&^AttrCompressionMask | uint16(codec)
	be.PutUint16(out[offAttributes:], attrs)
	be.PutUint32(out[offCRC:], batchCRC(out))
	return out, true, nil
}
