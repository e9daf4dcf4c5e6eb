package appliance

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUringDirectReadAsync writes ~27 MB over 4 partitions on 2 uring
// shards with direct I/O and 8 MiB block caches, then consumes it all from
// the start, with io.uring.direct.read.async on and off. Every record must
// come back byte for byte; on, the blocks the fetches missed were read
// through the shards' rings (and no fetch read one itself); off, none was.
func TestUringDirectReadAsync(t *testing.T) {
	for _, async := range []string{"true", "false"} {
		t.Run("async="+async, func(t *testing.T) {
			b := uringDirectBroker(t, map[string]string{"num.partitions": "4", "io.uring.direct.read.async": async,
				"log.io.cache.bytes": "8388608", "segment.bytes": "8388608"})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			const n = 6000
			value := func(i int) []byte {
				v := make([]byte, 1000+i%7000) // batches start and end anywhere in the blocks
				r := rand.New(rand.NewPCG(uint64(i), 7))
				for k := 0; k+8 <= len(v); k += 8 {
					binary.BigEndian.PutUint64(v[k:], r.Uint64())
				}
				return v
			}
			produceAll(ctx, t, b, "ra", n, func(i int) *kgo.Record {
				return &kgo.Record{Key: binary.BigEndian.AppendUint32(nil, uint32(i)), Value: value(i)}
			})
			before := cacheStats(b)
			consumeAll(ctx, t, b, "ra", n, func(r *kgo.Record) int {
				i := int(binary.BigEndian.Uint32(r.Key))
				if i < 0 || i >= n || !bytes.Equal(r.Value, value(i)) {
					t.Fatalf("record %d at %d/%d: bad", i, r.Partition, r.Offset)
				}
				return i
			})
			after := cacheStats(b)
			var prefetches uint64
			for _, s := range b.shards {
				prefetches += s.fetchPrefetches.Load()
			}
			ring, misses, read := after.AsyncReads-before.AsyncReads, after.Misses-before.Misses, after.ReadBytes-before.ReadBytes
			t.Logf("consume: %d MiB read from disk, %d blocks through the rings in %d passes, %d misses read by fetches", read>>20, ring, prefetches, misses)
			if read < 4<<20 {
				t.Fatalf("only %d bytes read from disk: the test needs fetches that miss the caches", read)
			}
			if async == "true" && (ring == 0 || prefetches == 0 || ring*nvme.DefaultCacheBlockBytes < read/2) {
				t.Fatalf("%d of %d bytes read through the rings: want most", ring*nvme.DefaultCacheBlockBytes, read)
			}
			if async == "false" && (ring != 0 || prefetches != 0) {
				t.Fatalf("%d blocks read through the rings with io.uring.direct.read.async=false", ring)
			}
		})
	}
}

// cacheStats sums the shards' block-cache counters.
func cacheStats(b *Broker) nvme.CacheStats {
	var sum nvme.CacheStats
	for _, s := range b.shards {
		var x nvme.CacheStats
		s.loop.Call(func() { x = s.cache.Stats() })
		sum.Hits += x.Hits
		sum.Misses += x.Misses
		sum.ReadBytes += x.ReadBytes
		sum.AsyncReads += x.AsyncReads
		sum.Evictions += x.Evictions
		sum.BufAllocs += x.BufAllocs
		sum.BufReuses += x.BufReuses
		sum.BufBadReleases += x.BufBadReleases
	}
	return sum
}
