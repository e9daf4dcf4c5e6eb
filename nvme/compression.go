package nvme

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressedBytes bounds what one batch may decompress to, so a
// decompression bomb cannot exhaust memory. Kafka has no such limit; 256 MiB
// is far above any batch a client can build under max.message.bytes limits
// of real deployments.
const maxDecompressedBytes = 256 << 20

// xerialMagic opens snappy data in the xerial (snappy-java) framing that
// Kafka producers use: magic, then version and compatible-version int32s,
// then blocks of (int32 length, raw snappy block).
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// decompressor decompresses the records section of compressed batches. It
// keeps its zstd decoder (expensive to create) between calls; it is owned by
// one goroutine. The zero value is ready to use.
type decompressor struct {
	zstd *zstd.Decoder
	zbuf []byte
	buf  bytes.Buffer
}

// close releases the zstd decoder's goroutines and memory.
func (d *decompressor) close() {
	if d.zstd != nil {
		d.zstd.Close()
		d.zstd = nil
	}
}

// decompress returns the records of a compressed batch body. The result is
// valid until the next call.
func (d *decompressor) decompress(codec int, src []byte) ([]byte, error) {
	switch codec {
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("cannot read gzip header: %w", err)
		}
		return d.readAll(zr, "gzip")
	case CompressionSnappy:
		return d.snappy(src)
	case CompressionLZ4:
		return d.readAll(lz4.NewReader(bytes.NewReader(src)), "lz4")
	case CompressionZstd:
		if d.zstd == nil {
			dec, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(maxDecompressedBytes),
				zstd.WithDecoderLowmem(true))
			if err != nil {
				return nil, fmt.Errorf("cannot create zstd decoder: %w", err)
			}
			d.zstd = dec
		}
		out, err := d.zstd.DecodeAll(src, d.zbuf[:0])
		if err != nil {
			return nil, fmt.Errorf("cannot decompress zstd: %w", err)
		}
		d.zbuf = out
		return out, nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func (d *decompressor) readAll(r io.Reader, name string) ([]byte, error) {
	d.buf.Reset()
	n, err := d.buf.ReadFrom(io.LimitReader(r, maxDecompressedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot decompress %s: %w", name, err)
	}
	if n > maxDecompressedBytes {
		return nil, fmt.Errorf("cannot decompress %s: more than %d bytes", name, maxDecompressedBytes)
	}
	return d.buf.Bytes(), nil
}

// snappy handles both raw snappy blocks and xerial framing.
func (d *decompressor) snappy(src []byte) ([]byte, error) {
	if len(src) < xerialHeaderLen || !bytes.Equal(src[:len(xerialMagic)], xerialMagic[:]) {
		return d.snappyBlock(nil, src)
	}
	var out []byte
	for p := xerialHeaderLen; p < len(src); {
		if len(src)-p < 4 {
			return nil, errors.New("cannot decompress snappy: truncated xerial block length")
		}
		n := int64(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n > int64(len(src)-p) {
			return nil, fmt.Errorf("cannot decompress snappy: xerial block of %d bytes exceeds the %d left", n, len(src)-p)
		}
		var err error
		if out, err = d.snappyBlock(out, src[p:p+int(n)]); err != nil {
			return nil, err
		}
		p += int(n)
	}
	return out, nil
}

// snappyBlock appends the decoding of one raw snappy block to dst.
func (d *decompressor) snappyBlock(dst, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("cannot decompress snappy: %w", err)
	}
	if n < 0 || int64(n)+int64(len(dst)) > maxDecompressedBytes {
		return nil, fmt.Errorf("cannot decompress snappy: more than %d bytes", maxDecompressedBytes)
	}
	out, err := snappy.Decode(nil, block)
	if err != nil {
		return nil, fmt.Errorf("cannot decompress snappy: %w", err)
	}
	if dst == nil {
		return out, nil
	}
	return append(dst, out...), nil
}
