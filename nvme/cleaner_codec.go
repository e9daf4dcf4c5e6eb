package nvme

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compressor recompresses the records of batches the cleaner rewrote, with
// the batch's own codec, in the framing Kafka's Java producer writes: gzip
// and lz4 frames, zstd frames, snappy in xerial (snappy-java stream) framing
// with 32 KiB blocks, which every client reads. It is owned by one
// goroutine; the zero value is ready to use.
type compressor struct {
	buf  bytes.Buffer
	gz   *gzip.Writer
	lz   *lz4.Writer
	zstd *zstd.Encoder
	out  []byte
}

// xerialBlock is the block size snappy-java's stream writes.
const xerialBlock = 32 << 10

func (c *compressor) close() {
	if c.zstd != nil {
		c.zstd.Close()
		c.zstd = nil
	}
}

// compress returns raw compressed with codec; the result is valid until
// the next call.
func (c *compressor) compress(codec int, raw []byte) ([]byte, error) {
	switch codec {
	case CompressionGzip:
		c.buf.Reset()
		if c.gz == nil {
			c.gz = gzip.NewWriter(&c.buf)
		} else {
			c.gz.Reset(&c.buf)
		}
		if _, err := c.gz.Write(raw); err != nil {
			return nil, fmt.Errorf("cannot compress gzip: %w", err)
		}
		if err := c.gz.Close(); err != nil {
			return nil, fmt.Errorf("cannot compress gzip: %w", err)
		}
		return c.buf.Bytes(), nil
	case CompressionLZ4:
		c.buf.Reset()
		if c.lz == nil {
			c.lz = lz4.NewWriter(&c.buf)
		} else {
			c.lz.Reset(&c.buf)
		}
		if _, err := c.lz.Write(raw); err != nil {
			return nil, fmt.Errorf("cannot compress lz4: %w", err)
		}
		if err := c.lz.Close(); err != nil {
			return nil, fmt.Errorf("cannot compress lz4: %w", err)
		}
		return c.buf.Bytes(), nil
	case CompressionZstd:
		if c.zstd == nil {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return nil, fmt.Errorf("cannot create zstd encoder: %w", err)
			}
			c.zstd = enc
		}
		c.out = c.zstd.EncodeAll(raw, c.out[:0])
		return c.out, nil
	case CompressionSnappy:
		out := append(c.out[:0], xerialMagic[:]...)
		out = binary.BigEndian.AppendUint32(out, 1) // version
		out = binary.BigEndian.AppendUint32(out, 1) // compatible version
		for p := 0; p < len(raw); p += xerialBlock {
			blk := snappy.Encode(nil, raw[p:min(len(raw), p+xerialBlock)])
			out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
			out = append(out, blk...)
		}
		c.out = out
		return out, nil
	}
	return nil, fmt.Errorf("cannot compress: unknown codec %d", codec)
}
