package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// CleanerMapEntryBytes is what one entry of the log cleaner's offset map
// costs in memory (a 16-byte key hash, an 8-byte offset and Go map
// overhead), to turn log.cleaner.dedupe.buffer.size into a number of
// entries.
const CleanerMapEntryBytes = 40

// Cleaner holds the log.cleaner.* broker properties, Kafka's names and
// defaults (DefaultCleaner).
type Cleaner struct {
	Enable      bool          // log.cleaner.enable, default true
	Threads     int           // log.cleaner.threads, default 1; 0 disables the cleaner
	IOMaxBytes  float64       // log.cleaner.io.max.bytes.per.second, default unlimited (math.MaxFloat64)
	Backoff     time.Duration // log.cleaner.backoff.ms, default 15 s
	DedupeBytes int64         // log.cleaner.dedupe.buffer.size, default 128 MiB
}

// DefaultCleaner is Kafka's defaults for the log cleaner.
func DefaultCleaner() Cleaner {
	return Cleaner{Enable: true, Threads: 1, IOMaxBytes: math.MaxFloat64, Backoff: 15 * time.Second, DedupeBytes: 128 << 20}
}

// CleanerFromProps reads the log.cleaner.* properties over DefaultCleaner;
// an error names the first bad key and its value.
func CleanerFromProps(props map[string]string) (Cleaner, error) {
	c := DefaultCleaner()
	var err error
	get := func(k string) (string, bool) {
		v, ok := props[k]
		return strings.TrimSpace(v), ok && err == nil
	}
	if v, ok := get("log.cleaner.enable"); ok {
		if c.Enable, err = ParseBool(v); err != nil {
			err = fmt.Errorf("cannot parse log.cleaner.enable=%q: %w", v, err)
		}
	}
	if v, ok := get("log.cleaner.threads"); ok {
		if c.Threads, err = strconv.Atoi(v); err != nil || c.Threads < 0 {
			err = fmt.Errorf("cannot parse log.cleaner.threads=%q: want an integer >= 0", v)
		}
	}
	if v, ok := get("log.cleaner.io.max.bytes.per.second"); ok {
		if c.IOMaxBytes, err = strconv.ParseFloat(v, 64); err != nil || c.IOMaxBytes <= 0 {
			err = fmt.Errorf("cannot parse log.cleaner.io.max.bytes.per.second=%q: want a number > 0", v)
		}
	}
	if v, ok := get("log.cleaner.backoff.ms"); ok {
		ms, e := strconv.ParseInt(v, 10, 64)
		if e != nil || ms < 0 {
			err = fmt.Errorf("cannot parse log.cleaner.backoff.ms=%q: want an integer >= 0", v)
		}
		c.Backoff = time.Duration(ms) * time.Millisecond
	}
	if v, ok := get("log.cleaner.dedupe.buffer.size"); ok {
		if c.DedupeBytes, err = strconv.ParseInt(v, 10, 64); err != nil || c.DedupeBytes < CleanerMapEntryBytes {
			err = fmt.Errorf("cannot parse log.cleaner.dedupe.buffer.size=%q: want an integer >= %d", v, CleanerMapEntryBytes)
		}
	}
	return c, err
}

// CleanerDynamic are the log.cleaner.* properties a broker applies without
// a restart (dynamic broker configs; Cleaner.Reconfigure in package
// cleaner): the backoff and the I/O rate.
var CleanerDynamic = []string{"log.cleaner.backoff.ms", "log.cleaner.io.max.bytes.per.second"}

// CleanerWith is static with the CleanerDynamic properties of dyn (the
// dynamic broker configs in force) on top; values that do not parse are
// skipped (they are validated when set, with CleanerFromProps).
func CleanerWith(static Cleaner, dyn map[string]string) Cleaner {
	out := static
	for _, k := range CleanerDynamic {
		v, ok := dyn[k]
		if !ok {
			continue
		}
		c, err := CleanerFromProps(map[string]string{k: v})
		if err != nil {
			continue
		}
		switch k {
		case "log.cleaner.backoff.ms":
			out.Backoff = c.Backoff
		case "log.cleaner.io.max.bytes.per.second":
			out.IOMaxBytes = c.IOMaxBytes
		}
	}
	return out
}

// InternalSegmentBytes parses the segment.bytes of an internal topic from
// its broker property k (offsets.topic.segment.bytes,
// transaction.state.log.segment.bytes): def when unset or empty, else an
// int validated as the topic config segment.bytes is; an error names k.
func InternalSegmentBytes(props map[string]string, k string, def int32) (int32, error) {
	v := strings.TrimSpace(props[k])
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %s=%q: want an integer", k, v)
	}
	if err := ValidateTopic("segment.bytes", v); err != nil {
		return 0, fmt.Errorf("cannot parse %s=%q: %w", k, v, err)
	}
	return int32(n), nil
}
