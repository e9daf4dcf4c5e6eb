package cleaner

import "github.com/ringbroker/ringbroker/appliance/config"

// mapEntryBytes is what one offset map entry costs in memory (a 16-byte
// key hash, an 8-byte offset and Go map overhead), to turn
// log.cleaner.dedupe.buffer.size into a number of entries.
const mapEntryBytes = 40

// Config holds the log.cleaner.* broker properties, parsed once at start
// (config.CleanerFromProps).
type Config = config.Cleaner

// DefaultConfig is Kafka's defaults for the log.cleaner.* properties.
func DefaultConfig() Config { return config.DefaultCleaner() }
