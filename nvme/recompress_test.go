package nvme

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// recompressBatch is a transactional, idempotent batch of n records with
// keys, values and a header, as a producer sends it.
func recompressBatch(n int) []byte {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{
			Key:     []byte(fmt.Sprintf("key-%d", i)),
			Value:   bytes.Repeat([]byte(fmt.Sprintf("value %d; ", i)), 20),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}},
		}
	}
	return AppendBatch(nil, 1_700_000_000_123, AttrTransactional, 7, 3, 41, recs)
}

func TestRecompressRoundTripKeepsHeaderAndRecords(t *testing.T) {
	orig := recompressBatch(50)
	var r Recompressor
	defer r.Close()
	levels := Levels{Gzip: 9, LZ4: 17, Zstd: 19}
	for _, codec := range []int{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			c, changed, err := r.Recompress(orig, codec, levels)
			if err != nil || !changed {
				t.Fatalf("Recompress to %d: changed %v, err %v", codec, changed, err)
			}
			h, err := ParseBatchHeader(c)
			if err != nil {
				t.Fatal(err)
			}
			if h.Compression() != codec || !h.IsTransactional() || h.ProducerID != 7 || h.ProducerEpoch != 3 || h.BaseSequence != 41 ||
				h.RecordCount != 50 || h.LastOffsetDelta != 49 || h.BaseTimestamp != 1_700_000_000_123 || h.MaxTimestamp != 1_700_000_000_123 {
				t.Fatalf("header after recompression: %+v", h)
			}
			if len(c) >= len(orig) {
				t.Errorf("codec %d: %d bytes, not smaller than the %d uncompressed", codec, len(c), len(orig))
			}
			if _, _, err := ValidateBatches(c, AppendOptions{RequireKeys: true}); err != nil {
				t.Fatalf("recompressed batch does not validate: %v", err)
			}
			// Through another codec and back to none: byte for byte the
			// batch the producer sent.
			other := CompressionZstd
			if codec == CompressionZstd {
				other = CompressionSnappy
			}
			c2, changed, err := r.Recompress(c, other, Levels{})
			if err != nil || !changed {
				t.Fatalf("Recompress %d to %d: changed %v, err %v", codec, other, changed, err)
			}
			back, changed, err := r.Recompress(c2, CompressionNone, Levels{})
			if err != nil || !changed {
				t.Fatalf("Recompress to none: changed %v, err %v", changed, err)
			}
			if !bytes.Equal(back, orig) {
				t.Fatalf("round trip through %d and %d changed the batch", codec, other)
			}
		})
	}
}

func TestRecompressLeavesWhatItMustNotTouch(t *testing.T) {
	var r Recompressor
	defer r.Close()
	orig := recompressBatch(3)
	zstdBatch, _, err := r.Recompress(orig, CompressionZstd, Levels{})
	if err != nil {
		t.Fatal(err)
	}
	badCRC := append([]byte(nil), zstdBatch...)
	badCRC[len(badCRC)-1] ^= 0xff
	control := AppendBatch(nil, 1, AttrControl|AttrTransactional, 7, 3, -1, []kmsg.Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	twoBatches := append(append([]byte(nil), orig...), orig...)
	badCount := append([]byte(nil), orig...)
	binary.BigEndian.PutUint32(badCount[offRecordCount:], 4)
	binary.BigEndian.PutUint32(badCount[offCRC:], batchCRC(badCount))
	for _, tc := range []struct {
		name  string
		in    []byte
		codec int
	}{
		{"same codec", zstdBatch, CompressionZstd},
		{"already uncompressed", orig, CompressionNone},
		{"bad CRC", badCRC, CompressionGzip},
		{"control batch", control, CompressionGzip},
		{"two batches", twoBatches, CompressionGzip},
		{"record count disagrees", badCount, CompressionGzip},
		{"short", orig[:40], CompressionGzip},
	} {
		out, changed, err := r.Recompress(tc.in, tc.codec, Levels{})
		if err != nil || changed || !bytes.Equal(out, tc.in) {
			t.Errorf("%s: changed %v, err %v, same bytes %v; want the input untouched", tc.name, changed, err, bytes.Equal(out, tc.in))
		}
	}
	if _, _, err := r.Recompress(orig, 9, Levels{}); err == nil {
		t.Error("Recompress to codec 9 gave no error")
	}
}

// BenchmarkRecompress measures a produced batch's rewrite to each codec:
// 200 records of ~200 bytes, snappy-compressed as a producer sends them
// (bytes/s counts the uncompressed records).
func BenchmarkRecompress(b *testing.B) {
	var r Recompressor
	defer r.Close()
	orig := recompressBatch(200)
	snappyBatch, _, err := r.Recompress(orig, CompressionSnappy, Levels{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		codec  int
		levels Levels
	}{
		{"none", CompressionNone, Levels{}},
		{"gzip-default", CompressionGzip, Levels{Gzip: GzipLevelDefault}},
		{"gzip-1", CompressionGzip, Levels{Gzip: 1}},
		{"lz4-9", CompressionLZ4, Levels{LZ4: 9}},
		{"zstd-3", CompressionZstd, Levels{Zstd: 3}},
		{"zstd-19", CompressionZstd, Levels{Zstd: 19}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(orig)))
			for i := 0; i < b.N; i++ {
				if _, _, err := r.Recompress(snappyBatch, tc.codec, tc.levels); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTimestampBounds: with CheckTimestamps a CreateTime record outside
// [now-before, now+after] refuses the batch with ErrInvalidTimestamp,
// naming every such record (Kafka's INVALID_TIMESTAMP with its record
// errors), compressed or not; LogAppendTime skips the check, as Kafka
// checks CreateTime only.
func TestTimestampBounds(t *testing.T) {
	const now = 1_700_000_000_000
	mk := func(codec int, offsets ...int64) []byte {
		recs := make([]kmsg.Record, len(offsets))
		for i := range recs {
			recs[i] = kmsg.Record{Key: []byte{byte(i)}, Value: []byte("v")}
		}
		b := AppendBatch(nil, now, 0, -1, -1, -1, recs)
		// AppendBatch stamps every record ts; give each its own delta.
		pos := BatchHeaderSize
		for _, off := range offsets {
			l, n := binary.Varint(b[pos:])
			body := b[pos+n : pos+n+int(l)]
			if body[1] != 0 {
				t.Fatalf("unexpected record layout %x", body)
			}
			// Rebuild the record with the delta (a longer varint).
			rec := append([]byte{body[0]}, binary.AppendVarint(nil, off)...)
			rec = append(rec, body[2:]...)
			nb := append(append(append([]byte(nil), b[:pos]...), binary.AppendVarint(nil, int64(len(rec)))...), rec...)
			nb = append(nb, b[pos+n+int(l):]...)
			pos = len(nb) - len(b[pos+n+int(l):])
			b = nb
		}
		binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLengthBase))
		binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		if codec != CompressionNone {
			var r Recompressor
			defer r.Close()
			out, _, err := r.Recompress(b, codec, Levels{})
			if err != nil {
				t.Fatal(err)
			}
			b = out
		}
		return b
	}
	var d decompressor
	defer d.close()
	o := AppendOptions{CheckTimestamps: true, TimestampBeforeMaxMs: 1000, TimestampAfterMaxMs: 500}
	for _, c := range []struct {
		name    string
		offsets []int64
		o       AppendOptions
		bad     []int32
	}{
		{"in bounds", []int64{-1000, 0, 500}, o, nil},
		{"one too old", []int64{0, -1001, 10}, o, []int32{1}},
		{"too old and too new", []int64{-5000, 0, 501}, o, []int32{0, 2}},
		{"LogAppendTime is not checked", []int64{-5000, 9000}, AppendOptions{CheckTimestamps: true, LogAppendTime: true}, nil},
		{"unchecked", []int64{-5000, 9000}, AppendOptions{}, nil},
		{"unbounded", []int64{-1 << 40, 1 << 40}, AppendOptions{CheckTimestamps: true, TimestampBeforeMaxMs: 1<<63 - 1, TimestampAfterMaxMs: 1<<63 - 1}, nil},
	} {
		for _, codec := range []int{CompressionNone, CompressionLZ4} {
			_, _, err := validateBatches(mk(codec, c.offsets...), c.o, &d, now)
			if c.bad == nil {
				if err != nil {
					t.Errorf("%s, codec %d: %v", c.name, codec, err)
				}
				continue
			}
			var re *RecordsError
			if !errors.Is(err, ErrInvalidTimestamp) || !errors.As(err, &re) {
				t.Errorf("%s, codec %d: %v, want ErrInvalidTimestamp", c.name, codec, err)
				continue
			}
			var idx []int32
			for _, r := range re.Records {
				idx = append(idx, r.Index)
			}
			if fmt.Sprint(idx) != fmt.Sprint(c.bad) {
				t.Errorf("%s, codec %d: records %v refused, want %v (%v)", c.name, codec, idx, c.bad, err)
			}
		}
	}
}
