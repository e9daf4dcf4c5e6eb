package nvme

import (
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Kafka's defaults for Options (broker-level log.* properties).
const (
	DefaultSegmentBytes       = 1 << 30              // log.segment.bytes
	DefaultSegmentMs          = 7 * 24 * 3600 * 1000 // log.roll.ms (168 h)
	DefaultIndexIntervalBytes = 4096                 // log.index.interval.bytes
	DefaultMaxIndexBytes      = 10 << 20             // log.index.size.max.bytes
	DefaultRetentionMs        = 7 * 24 * 3600 * 1000 // log.retention.ms (168 h)
	DefaultFileDeleteDelay    = 60 * time.Second     // file.delete.delay.ms
	DefaultPreallocateChunk   = 16 << 20             // log.io.preallocate.chunk.bytes (ours: direct mode)
	minSegmentBytes           = BatchHeaderSize + 1  // Kafka's lower bound is 14; a batch header is the useful floor
	maxSegmentBytes           = math.MaxInt32        // index positions are int32
)

// withDefaults returns o with zero values replaced by Kafka's defaults.
// RetentionBytes 0 means the default -1 (no limit); SegmentMs, RetentionMs
// and FileDeleteDelay below zero keep their meaning (never / forever /
// delete at once).
func (o *Options) withDefaults() Options {
	c := *o
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.MaxIndexBytes == 0 {
		c.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = DefaultRetentionMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	if c.FileDeleteDelay == 0 {
		c.FileDeleteDelay = DefaultFileDeleteDelay
	}
	if c.PreallocateChunk <= 0 {
		c.PreallocateChunk = DefaultPreallocateChunk
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks options after defaults were applied (Open applies them).
func (o *Options) Validate() error {
	c := o.withDefaults()
	if c.SegmentBytes < minSegmentBytes || c.SegmentBytes > maxSegmentBytes {
		return fmt.Errorf("invalid segment.bytes %d: want [%d, %d]", c.SegmentBytes, minSegmentBytes, int64(maxSegmentBytes))
	}
	if c.IndexIntervalBytes < 0 {
		return fmt.Errorf("invalid index.interval.bytes %d: want >= 0", c.IndexIntervalBytes)
	}
	if c.MaxIndexBytes < 4*offsetEntrySize {
		return fmt.Errorf("invalid segment.index.bytes %d: want >= %d", c.MaxIndexBytes, 4*offsetEntrySize)
	}
	if c.RetentionMs < -1 {
		return fmt.Errorf("invalid retention.ms %d: want -1 or >= 0", c.RetentionMs)
	}
	if c.LogStartOffset < 0 {
		return fmt.Errorf("invalid log start offset %d: want >= 0", c.LogStartOffset)
	}
	return nil
}
