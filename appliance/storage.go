package appliance

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
)

// Storage: log.io.mode and the device under log.dirs.
//
// At start the broker probes the data directory's block device (sysfs
// facts and a trial O_DIRECT write, nvme.ProbeDevice). log.io.mode=direct on
// a filesystem that refuses O_DIRECT (tmpfs, some overlays) falls back to
// buffered with one warning; the start-up line then reports
// log.io.mode=buffered. Direct mode gives each shard a BlockCache of
// log.io.cache.bytes (fetches send from it) and aligns writes to the
// device's alignment; it always preallocates segments. Buffered mode
// preallocates when the topic's preallocate (log.preallocate) is true.

// probeStorage runs once in Start, before partitions are opened.
func (b *Broker) probeStorage() {
	dev, err := nvme.ProbeDevice(b.cfg.LogDir)
	if err != nil {
		b.log.Warn("cannot probe the log directory's device", "dir", b.cfg.LogDir, "err", err)
	}
	b.store.device = dev
	b.log.Info("log directory device", "dir", b.cfg.LogDir, "facts", dev.String(), "alignment", dev.Alignment())
	if b.cfg.LogIOMode == nvme.IOModeDirect && dev.DirectIO && dev.DirectIOErr != nil {
		b.log.Warn("cannot check O_DIRECT in log.dirs, the filesystem is full; keeping log.io.mode=direct", "dir", b.cfg.LogDir, "err", dev.DirectIOErr)
	}
	if b.cfg.LogIOMode == nvme.IOModeDirect && !dev.DirectIO {
		b.log.Warn("O_DIRECT refused in log.dirs; falling back to log.io.mode=buffered", "dir", b.cfg.LogDir, "err", dev.DirectIOErr)
		b.cfg.LogIOMode = nvme.IOModeBuffered
	}
}

// newShardCache returns a shard's block cache in direct mode, else nil.
func (b *Broker) newShardCache() *nvme.BlockCache {
	if b.cfg.LogIOMode != nvme.IOModeDirect {
		return nil
	}
	return nvme.NewBlockCache(b.cfg.LogIOCacheBytes)
}

// prefaultCaches fills every direct-mode shard's block cache with touched
// buffers, each on its own shard's loop and all shards at once
// (log.io.cache.prefault; nvme BlockCache.Prefault): a pinned ring shard's
// thread first-touches them, so they sit on its NUMA node, and the first
// fill of the caches takes no page faults. It also fills the free lists of
// large request buffers (prefaultFrameBufs), in either I/O mode; in
// buffered mode there is no cache, which it logs.
func (b *Broker) prefaultCaches() {
	if !b.cfg.LogIOCachePrefault {
		return
	}
	start := time.Now()
	var wg sync.WaitGroup
	var total, frames atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.Now()
		n := prefaultFrameBufs(frameBufPrefaultMin)
		frames.Store(n)
		b.log.Info("prefaulted request buffers", "bytes", n, "took", time.Since(t).Round(time.Millisecond))
	}()
	if b.cfg.LogIOMode != nvme.IOModeDirect {
		b.log.Info("log.io.cache.prefault prefaults no block cache: there is none with log.io.mode=buffered")
	}
	for _, st := range b.shards {
		if st.cache == nil {
			continue
		}
		wg.Add(1)
		st.loop.Post(func() {
			defer wg.Done()
			t := time.Now()
			n := st.cache.Prefault()
			total.Add(n)
			b.log.Info("prefaulted block cache", "shard", st.id, "bytes", n, "registered_buffers", st.cache.Stats().BufFixed, "took", time.Since(t).Round(time.Millisecond))
		})
	}
	wg.Wait()
	b.log.Info("prefaulted", "block_cache_bytes", total.Load(), "request_buffer_bytes", frames.Load(), "took", time.Since(start).Round(time.Millisecond))
}

// storageOptions adds the io mode, preallocation, cache and alignment to a
// partition's log options.
func (b *Broker) storageOptions(st *shardState, t *TopicImage, o nvme.Options) nvme.Options {
	o.IOMode = b.cfg.LogIOMode
	o.Preallocate = b.effectiveTopicConfigs(t)["preallocate"] == "true"
	o.PreallocateChunk = b.cfg.LogIOPreallocChunk
	o.PreallocateUnwritten = !b.cfg.LogIOPreallocZero
	o.Cache = st.cache
	o.Alignment = b.store.device.Alignment()
	return o
}

// startRingStorage sets up a ring shard's direct-mode I/O: fetches read
// the blocks they miss through the shard's own ring
// (io.uring.direct.read.async, fetchState.prefetch), and the block cache writes
// segments through it without waiting for the device
// (io.uring.direct.write.batch, nvme.BlockCache.SetWriteRing), set on the shard's
// thread, which alone may submit to the ring.
func (b *Broker) startRingStorage(st *shardState) error {
	st.asyncReads = st.cache != nil && st.loop.IsRing() && b.cfg.UringDirectReadAsync
	if st.cache != nil && st.loop.IsRing() && b.cfg.UringFixedBuffers {
		var err error
		onFail := func(registered int, err error) {
			b.log.Warn("the kernel registers no more block buffers with the ring; ring reads and writes from the others pin pages per I/O (raise the memlock limit, e.g. LimitMEMLOCK=infinity)",
				"shard", st.id, "registered_buffers", registered, "err", err)
		}
		st.loop.Call(func() { err = st.cache.UseFixedBuffers(st.loop.Ring(), onFail) })
		if err != nil {
			b.log.Warn("cannot register the block cache's buffers with the ring; ring reads and writes pin pages per I/O", "shard", st.id, "err", err)
		}
	}
	if st.cache == nil || !st.loop.IsRing() || !b.cfg.UringDirectWriteBatch {
		return nil
	}
	st.loop.Call(func() { st.cache.SetWriteRing(st.loop.Ring()) })
	st.batchWrites = true
	return nil
}
