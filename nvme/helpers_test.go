package nvme

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// testRecord is one record for buildBatch.
type testRecord struct {
	key, value []byte // key nil = null key
	tsDelta    int64
	headers    [][2][]byte
	// offsetDelta, when badDelta is set, replaces the record's index as
	// its offset delta.
	offsetDelta int64
	badDelta    bool
}

// batchSpec describes a batch for buildBatch.
type batchSpec struct {
	baseTs  int64
	codec   int
	xerial  bool // snappy in xerial framing
	control bool
}

// encodeRecords appends records v2 to dst.
func encodeRecords(dst []byte, recs []testRecord) []byte {
	for i, r := range recs {
		var body []byte
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, r.tsDelta)
		if r.badDelta {
			body = binary.AppendVarint(body, r.offsetDelta)
		} else {
			body = binary.AppendVarint(body, int64(i))
		}
		if r.key == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.key)))
			body = append(body, r.key...)
		}
		if r.value == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.value)))
			body = append(body, r.value...)
		}
		body = binary.AppendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = binary.AppendVarint(body, int64(len(h[0])))
			body = append(body, h[0]...)
			body = binary.AppendVarint(body, int64(len(h[1])))
			body = append(body, h[1]...)
		}
		dst = binary.AppendVarint(dst, int64(len(body)))
		dst = append(dst, body...)
	}
	return dst
}

func compress(t testing.TB, codec int, xerial bool, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case CompressionNone:
		return raw
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case CompressionSnappy:
		if !xerial {
			return snappy.Encode(nil, raw)
		}
		buf.Write(xerialMagic[:])
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		for len(raw) > 0 {
			n := min(len(raw), 7)
			blk := snappy.Encode(nil, raw[:n])
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(blk))))
			buf.Write(blk)
			raw = raw[n:]
		}
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case CompressionZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	default:
		t.Fatalf("codec %d", codec)
	}
	return buf.Bytes()
}

// buildBatch encodes one record batch v2 with base offset 0 and a valid CRC.
func buildBatch(t testing.TB, spec batchSpec, recs []testRecord) []byte {
	t.Helper()
	body := compress(t, spec.codec, spec.xerial, encodeRecords(nil, recs))
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(BatchHeaderSize-batchLengthBase+len(body)))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	attrs := uint16(spec.codec)
	if spec.control {
		attrs |= AttrControl
	}
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], uint32(len(recs)-1))
	be.PutUint64(b[offBaseTimestamp:], uint64(spec.baseTs))
	var maxDelta int64
	for _, r := range recs {
		maxDelta = max(maxDelta, r.tsDelta)
	}
	be.PutUint64(b[offMaxTimestamp:], uint64(spec.baseTs+maxDelta))
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], uint32(len(recs)))
	b = append(b, body...)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// simpleBatch builds an uncompressed batch of n records with keys, values of
// valueSize bytes and timestamps baseTs, baseTs+1, ...
func simpleBatch(t testing.TB, n, valueSize int, baseTs int64) []byte {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{key: []byte{'k', byte(i)}, value: bytes.Repeat([]byte{byte(i)}, valueSize), tsDelta: int64(i)}
	}
	return buildBatch(t, batchSpec{baseTs: baseTs}, recs)
}

// fakeClock is an injectable Options.Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func testOptions(t testing.TB) Options {
	// NVME_IO_MODE=direct runs the package's tests in direct mode.
	return Options{FileDeleteDelay: time.Millisecond, Logger: discardLogger(), IOMode: os.Getenv("NVME_IO_MODE")}
}

func mustOpen(t testing.TB, dir string, o Options) *Log {
	t.Helper()
	l, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, records []byte, o AppendOptions) AppendInfo {
	t.Helper()
	info, err := l.Append(records, o)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return info
}

// readChunks concatenates the bytes that a ReadResult points at.
func readChunks(t testing.TB, r ReadResult) []byte {
	t.Helper()
	var out []byte
	for _, c := range r.Chunks {
		if c.File == nil {
			out = append(out, c.Mem...)
			continue
		}
		b := make([]byte, c.Len)
		if _, err := c.File.ReadAt(b, c.Pos); err != nil && err != io.EOF {
			t.Fatalf("ReadAt: %v", err)
		}
		out = append(out, b...)
	}
	if len(out) != int(r.Bytes) {
		t.Fatalf("chunks hold %d bytes, Bytes says %d", len(out), r.Bytes)
	}
	return out
}

// batchesOf splits concatenated batches into their headers.
func batchesOf(t testing.TB, b []byte) []BatchHeader {
	t.Helper()
	var hs []BatchHeader
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatalf("ParseBatchHeader: %v", err)
		}
		if batchCRC(b[:h.Size()]) != h.CRC {
			t.Fatalf("stored batch at offset %d has a bad CRC", h.BaseOffset)
		}
		hs = append(hs, h)
		b = b[h.Size():]
	}
	return hs
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
