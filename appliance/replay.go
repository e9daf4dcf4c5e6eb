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
// no records (the cleaner package). A read's chunks together hold whole batches, but
// one chunk need not: in direct mode they are block-cache memory, and a
// batch that straddles two cache blocks ends in one chunk and starts in the
// next, so the chunks of a read are copied into one buffer and parsed there. name is used in
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
		// A fresh buffer per read: fn may keep slices of the records.
		buf, err := appendChunks(nil, res.Chunks)
		nvme.ReleaseChunks(res.Chunks) // copied
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", name, err)
		}
		next := max(off, batchesEnd(buf))
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
			return fmt.Errorf("%s from offset %d: %w", name, off, err)
		}
		if next <= off {
			break
		}
		off = next
	}
	return nil
}

// appendChunks appends the bytes of chunks to dst, in order (the caller
// releases the chunks' holds).
func appendChunks(dst []byte, chunks []nvme.Chunk) ([]byte, error) {
	for _, c := range chunks {
		b, err := chunkBytes(c)
		if err != nil {
			return dst, err
		}
		dst = append(dst, b...)
	}
	return dst, nil
}

// postUnlessClosing runs fn on st's loop unless the broker is shutting down
// (the coordinators' timers and loops must not post into stopped shards).
func (b *Broker) postUnlessClosing(st *shardState, fn func()) {
	select {
	case <-b.life.closing:
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
		case <-b.life.closing:
			return
		case <-t.C:
			fn()
		}
	}
}
