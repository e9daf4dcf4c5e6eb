package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressed bounds one batch's decompressed records.
const maxDecompressed = 256 << 20

// decompress returns a batch's records bytes for codec (nvme's
// Compression* values: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func decompress(codec int, src []byte) ([]byte, error) {
	switch codec {
	case 0:
		return src, nil
	case 1:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readAll(r)
	case 2:
		return unsnappy(src)
	case 3:
		return readAll(lz4.NewReader(bytes.NewReader(src)))
	case 4:
		r, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderMaxMemory(maxDecompressed))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return readAll(r)
	}
	return nil, fmt.Errorf("unknown codec %d", codec)
}

func readAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDecompressed {
		return nil, fmt.Errorf("more than %d bytes decompressed", maxDecompressed)
	}
	return b, nil
}

// xerialMagic opens snappy-java's framing: 8-byte magic, two int32
// versions, then (int32 length, raw snappy block) pairs.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func unsnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappy.Decode(nil, src)
	}
	if len(src) < 16 {
		return nil, fmt.Errorf("xerial snappy header truncated")
	}
	var out []byte
	for p := src[16:]; len(p) > 0; {
		if len(p) < 4 {
			return nil, fmt.Errorf("xerial snappy block length truncated")
		}
		n := int(binary.BigEndian.Uint32(p))
		p = p[4:]
		if n > len(p) {
			return nil, fmt.Errorf("xerial snappy block of %d bytes, %d left", n, len(p))
		}
		blk, err := snappy.Decode(nil, p[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, blk...)
		if len(out) > maxDecompressed {
			return nil, fmt.Errorf("more than %d bytes decompressed", maxDecompressed)
		}
		p = p[n:]
	}
	return out, nil
}
