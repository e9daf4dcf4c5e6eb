package appliance

import (
	"fmt"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds what the coordinators of the internal topics share.

// replayLog reads an internal topic's partition log from its log start
// offset to its end and calls fn for every record, in offset order. It runs
// on the partition's shard. Cleaned logs have gaps and may hold batches with
// no records (cleaner.go); direct-mode chunks are memory. name is used in
// errors ("__consumer_offsets-7").
func replayLog(l *nvme.Log, name string, fn func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error) error {
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		res, err := l.Read(off, 8<<20, end, true)
		if err != nil {
			return fmt.Errorf("cannot read %s at offset %d: %w", name, off, err)
		}
		if len(res.Chunks) == 0 {
			break
		}
		next := off
		for _, c := range res.Chunks {
			buf, err := chunkBytes(c)
			if err != nil {
				return fmt.Errorf("cannot read %s: %w", name, err)
			}
			next = max(next, batchesEnd(buf))
			err = readBatches(buf, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
				if offset >= off {
					if err := fn(b, offset, r); err != nil {
						return fmt.Errorf("%s offset %d: %w", name, offset, err)
					}
				}
				next = max(next, b.FirstOffset+int64(b.LastOffsetDelta)+1)
				return nil
			})
			if err != nil {
				return err
			}
		}
		if next <= off {
			break
		}
		off = next
	}
	return nil
}

// postUnlessClosing runs fn on st's loop unless the broker is shutting down
// (the coordinators' timers and loops must not post into stopped shards).
func (b *Broker) postUnlessClosing(st *shardState, fn func()) {
	select {
	case <-b.closing:
		return
	default:
	}
	st.loop.Post(fn)
}

// every calls fn every d until the broker closes; it blocks, so callers run
// it on its own goroutine.
func (b *Broker) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-t.C:
			fn()
		}
	}
}
