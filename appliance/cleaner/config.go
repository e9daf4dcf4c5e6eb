package cleaner

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// mapEntryBytes is what one offset map entry costs in memory (a 16-byte
// key hash, an 8-byte offset and Go map overhead), to turn
// log.cleaner.dedupe.buffer.size into a number of entries.
const mapEntryBytes = 40

// Config holds the log.cleaner.* broker properties.
type Config struct {
	Enable      bool          // log.cleaner.enable, default true
	Threads     int           // log.cleaner.threads, default 1; 0 disables the cleaner
	IOMaxBytes  float64       // log.cleaner.io.max.bytes.per.second, default unlimited (math.MaxFloat64)
	Backoff     time.Duration // log.cleaner.backoff.ms, default 15 s
	DedupeBytes int64         // log.cleaner.dedupe.buffer.size, default 128 MiB
}

// DefaultConfig is Kafka's defaults for the log.cleaner.* properties.
func DefaultConfig() Config {
	return Config{Enable: true, Threads: 1, IOMaxBytes: math.MaxFloat64, Backoff: 15 * time.Second, DedupeBytes: 128 << 20}
}

// ConfigFromProps parses the log.cleaner.* keys of props (broker
// properties, server.properties names) over DefaultConfig. It returns the
// first malformed value as an error naming the key and value.
func ConfigFromProps(props map[string]string) (Config, error) {
	c := DefaultConfig()
	var err error
	get := func(k string) (string, bool) {
		v, ok := props[k]
		return strings.TrimSpace(v), ok && err == nil
	}
	if v, ok := get("log.cleaner.enable"); ok {
		if c.Enable, err = parseBool(v); err != nil {
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
		if c.DedupeBytes, err = strconv.ParseInt(v, 10, 64); err != nil || c.DedupeBytes < mapEntryBytes {
			err = fmt.Errorf("cannot parse log.cleaner.dedupe.buffer.size=%q: want an integer >= %d", v, mapEntryBytes)
		}
	}
	return c, err
}

// parseBool accepts Kafka's boolean spellings: true or false, any case.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("want true or false")
}
