package txn

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Topic is Kafka's internal topic for transaction state.
const Topic = "__transaction_state"

// ConfigFromProps reads the transaction settings from the broker properties.
func ConfigFromProps(props map[string]string) (Config, error) {
	c := DefaultConfig()
	var err error
	num := func(k string, def int64) int64 {
		v, ok := props[k]
		if !ok || err != nil {
			return def
		}
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil {
			err = fmt.Errorf("cannot parse %s=%q: %w", k, v, e)
			return def
		}
		return n
	}
	ms := func(k string, def time.Duration) time.Duration {
		return time.Duration(num(k, def.Milliseconds())) * time.Millisecond
	}
	c.NumPartitions = int32(num("transaction.state.log.num.partitions", int64(c.NumPartitions)))
	c.MaxTimeout = ms("transaction.max.timeout.ms", c.MaxTimeout)
	c.CleanupInterval = ms("transaction.abort.timed.out.transaction.cleanup.interval.ms", c.CleanupInterval)
	c.IDExpiration = ms("transactional.id.expiration.ms", c.IDExpiration)
	if err != nil {
		return c, err
	}
	if c.NumPartitions < 1 {
		return c, fmt.Errorf("transaction.state.log.num.partitions must be >= 1, got %d", c.NumPartitions)
	}
	if c.CleanupInterval <= 0 {
		c.CleanupInterval = 10 * time.Second
	}
	return c, nil
}

// FencedCode is err's code, with PRODUCER_FENCED answered as
// INVALID_PRODUCER_EPOCH to versions that predate it (KIP-588).
func FencedCode(err *kerr.Error, fencedKnown bool) int16 {
	if err == nil {
		return 0
	}
	if err == kerr.ProducerFenced && !fencedKnown {
		return kerr.InvalidProducerEpoch.Code
	}
	return err.Code
}
