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

// compressor compresses the records of batches the cleaner rewrote (with
// the batch's own codec) and of produced batches a topic's compression.type
// recompresses (Recompressor), in the framing Kafka's Java producer
// writes: gzip and lz4 frames, zstd frames, snappy in xerial (snappy-java
// stream) framing with 32 KiB blocks, which every client reads. It is
// owned by one goroutine; the zero value is ready to use and compresses at
// each codec's default level (SetLevels changes them).
type compressor struct {
	buf  bytes.Buffer
	gz   *gzip.Writer
	lz   *lz4.Writer
	zstd *zstd.Encoder
	out  []byte
	blk  []byte // one snappy block's encoding

	// Levels (KIP-390) the writers above were made with; the zero
	// Levels means each codec's default.
	gzLevel, lzLevel, zstdLevel int
	levels                      Levels
}

// Levels are the compression levels of KIP-390, Kafka's
// compression.gzip.level (-1 default, or 1..9), compression.lz4.level
// (1..17, default 9) and compression.zstd.level (-131072..22, default 3).
// Zero means the codec's default. The Go encoders have fewer levels than
// the C and Java ones Kafka uses: lz4 levels above 9 compress as 9, and
// zstd levels map to the nearest of the four levels klauspost/compress
// offers (zstd.EncoderLevelFromZstd).
type Levels struct {
	Gzip, LZ4, Zstd int
}

// Level defaults and bounds (KIP-390; Kafka's GzipCompression,
// Lz4Compression and ZstdCompression).
const (
	GzipLevelDefault = -1
	GzipLevelMin     = 1
	GzipLevelMax     = 9
	LZ4LevelDefault  = 9
	LZ4LevelMin      = 1
	LZ4LevelMax      = 17
	ZstdLevelDefault = 3
	ZstdLevelMin     = -131072
	ZstdLevelMax     = 22
)

// setLevels makes the next compress use l.
func (c *compressor) setLevels(l Levels) { c.levels = l }

// lz4Level maps Kafka's lz4 level (1..17) onto pierrec/lz4's levels.
func lz4Level(l int) lz4.CompressionLevel {
	switch {
	case l <= 0:
		l = LZ4LevelDefault
	case l > 9:
		l = 9
	}
	return lz4Levels[l-1]
}

var lz4Levels = [...]lz4.CompressionLevel{lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4, lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}

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
		lvl := c.levels.Gzip
		if lvl == 0 {
			lvl = GzipLevelDefault
		}
		if c.gz == nil || c.gzLevel != lvl {
			gz, err := gzip.NewWriterLevel(&c.buf, lvl)
			if err != nil {
				return nil, fmt.Errorf("cannot compress gzip at level %d: %w", lvl, err)
			}
			c.gz, c.gzLevel = gz, lvl
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
		if lvl := c.levels.LZ4; lvl != c.lzLevel {
			if err := c.lz.Apply(lz4.CompressionLevelOption(lz4Level(lvl))); err != nil {
				return nil, fmt.Errorf("cannot compress lz4 at level %d: %w", lvl, err)
			}
			c.lzLevel = lvl
		}
		if _, err := c.lz.Write(raw); err != nil {
			return nil, fmt.Errorf("cannot compress lz4: %w", err)
		}
		if err := c.lz.Close(); err != nil {
			return nil, fmt.Errorf("cannot compress lz4: %w", err)
		}
		return c.buf.Bytes(), nil
	case CompressionZstd:
		lvl := c.levels.Zstd
		if lvl == 0 {
			lvl = ZstdLevelDefault
		}
		if c.zstd == nil || c.zstdLevel != lvl {
			if c.zstd != nil {
				c.zstd.Close()
			}
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(lvl)))
			if err != nil {
				return nil, fmt.Errorf("cannot create zstd encoder: %w", err)
			}
			c.zstd, c.zstdLevel = enc, lvl
		}
		c.out = c.zstd.EncodeAll(raw, c.out[:0])
		return c.out, nil
	case CompressionSnappy:
		out := append(c.out[:0], xerialMagic[:]...)
		out = binary.BigEndian.AppendUint32(out, 1) // version
		out = binary.BigEndian.AppendUint32(out, 1) // compatible version
		for p := 0; p < len(raw); p += xerialBlock {
			src := raw[p:min(len(raw), p+xerialBlock)]
			if n := snappy.MaxEncodedLen(len(src)); cap(c.blk) < n {
				c.blk = make([]byte, n)
			}
			blk := snappy.Encode(c.blk[:cap(c.blk)], src)
			out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
			out = append(out, blk...)
		}
		c.out = out
		return out, nil
	}
	return nil, fmt.Errorf("cannot compress: unknown codec %d", codec)
}
