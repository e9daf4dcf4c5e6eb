package config

import (
	"strconv"
	"sync"

	"github.com/ringbroker/ringbroker/nvme"
)

// Recompressors applies a topic's compression.type to produced batches,
// as Kafka's LogValidator does: a topic whose compression.type is not
// "producer" stores each batch in that codec ("uncompressed": none), at
// its compression.gzip.level, compression.lz4.level or
// compression.zstd.level (KIP-390); a batch already in it is kept as sent.
// It pools nvme.Recompressor values, whose zstd encoders are costly to
// make, so any number of goroutines may call Records at once. The produce
// handler calls it on the connection's goroutine, never on a shard loop:
// a large batch at a high level takes milliseconds of CPU. The zero value
// is ready to use.
type Recompressors struct {
	pool sync.Pool
}

// Records returns records as the log stores them for a topic whose
// configs are overrides over defaults (the broker's TopicDefaults):
// records itself for "producer" (no allocation) and for records that
// nvme.Recompressor leaves alone (a batch already in the codec, or one
// that validation will refuse), else the rewritten batch in a new slice.
// Should an encoder fail (it does not at validated levels), the batch is
// stored as sent.
func (r *Recompressors) Records(overrides, defaults map[string]string, records []byte) []byte {
	get := func(k string) string {
		if v, ok := overrides[k]; ok {
			return v
		}
		return defaults[k]
	}
	codec := CompressionCodec(get("compression.type"))
	if codec < 0 {
		return records
	}
	level := func(k string, def int) int {
		if v, err := strconv.Atoi(get(k)); err == nil {
			return v
		}
		return def
	}
	var lv nvme.Levels
	switch codec {
	case nvme.CompressionGzip:
		lv.Gzip = level("compression.gzip.level", nvme.GzipLevelDefault)
	case nvme.CompressionLZ4:
		lv.LZ4 = level("compression.lz4.level", nvme.LZ4LevelDefault)
	case nvme.CompressionZstd:
		lv.Zstd = level("compression.zstd.level", nvme.ZstdLevelDefault)
	}
	rc, _ := r.pool.Get().(*nvme.Recompressor)
	if rc == nil {
		rc = new(nvme.Recompressor)
	}
	out, _, err := rc.Recompress(records, codec, lv)
	r.pool.Put(rc)
	if err != nil {
		return records
	}
	return out
}
