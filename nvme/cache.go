package nvme

import "unsafe"

// DefaultCacheBlockBytes is the size of one BlockCache block and of the
// O_DIRECT reads that fill it: 1 MiB, where sequential O_DIRECT reads reach
// the device's bandwidth on the development machine (see shared/limits.md).
const DefaultCacheBlockBytes = 1 << 20

// DefaultCacheBytes is the capacity of a BlockCache that NewBlockCache is
// given 0 for.
const DefaultCacheBytes = 64 << 20

// BlockCache holds blocks of direct-mode segment files in aligned buffers:
// data read with O_DIRECT for catch-up fetches, and the blocks that appends
// filled. Fetch responses send straight from these buffers (Chunk.Mem), so
// record bytes are never copied into other Go heap buffers. A buffer is
// immutable once cached; eviction only drops the cache's hold on it, so a
// response still sending from it keeps it (Chunk.Ref), and the last holder
// returns it to the cache's pool of free buffers (blockPool).
//
// Ownership: a BlockCache belongs to one shard goroutine (every Log that
// shares it runs there); it has no lock.
type BlockCache struct {
	blockSize int64
	capacity  int // blocks
	entries   map[cacheKey]*cacheEntry
	head      cacheEntry // sentinel of the LRU list: head.next is the most recent
	nextID    uint64
	stats     CacheStats
	wb        writeQueue // ring writes of the files (directFile.submit)
	pool      *blockPool // free block buffers (BlockBuf.Release)
}

// CacheStats counts a BlockCache's work, for metrics and benchmarks.
type CacheStats struct {
	Hits, Misses uint64 // block lookups
	ReadBytes    uint64 // bytes read with O_DIRECT to fill blocks
	AsyncReads   uint64 // of those reads, blocks read through the ring (BlockPrefetch)
	FixedReads   uint64 // ring reads started into registered buffers (UseFixedBuffers)
	Evictions    uint64
	Blocks       int // blocks held now

	// Block buffers: new ones allocated, free ones reused, and releases
	// past the last holder (a bug: must stay 0).
	BufAllocs, BufReuses, BufBadReleases uint64
	// BufFixed is the buffers registered with the owner shard's ring
	// (UseFixedBuffers).
	BufFixed int
}

type cacheKey struct {
	file  uint64
	block int64
}

type cacheEntry struct {
	key        cacheKey
	blk        *BlockBuf // blockSize bytes, aligned; the entry holds it
	valid      int       // bytes of blk that hold file data
	prev, next *cacheEntry
}

// NewBlockCache returns a cache of capacityBytes (0: DefaultCacheBytes)
// made of DefaultCacheBlockBytes blocks; it holds at least 2 blocks.
func NewBlockCache(capacityBytes int64) *BlockCache {
	if capacityBytes <= 0 {
		capacityBytes = DefaultCacheBytes
	}
	c := &BlockCache{blockSize: DefaultCacheBlockBytes, entries: map[cacheKey]*cacheEntry{}}
	c.capacity = max(2, int(capacityBytes/c.blockSize))
	c.head.next, c.head.prev = &c.head, &c.head
	// The free list can take every buffer the cache holds (Prefault, or a
	// deleted topic's blocks) and some that responses held past eviction;
	// it never holds more than were once in use.
	c.pool = newBlockPool(int(c.blockSize), poolAlign, c.capacity+max(8, c.capacity/4))
	return c
}

// Prefault allocates as many block buffers as the free list takes (the
// blocks the cache holds plus a quarter, at least 8: the tail blocks,
// writes in flight and responses that hold blocks past eviction), writes
// every 4 KiB page of each once from the calling thread, and keeps them in
// the free list, from which tail blocks and block reads take theirs
// (log.io.cache.prefault). It returns the bytes added. Without it the
// first fill of the cache faults its buffers in page by page: on the
// development VM, whose memory the host reclaims, ~40 us of CPU per page,
// 0.8 s while two shards' 64 MiB caches fill at 10 MB/s. As the JVM's
// -XX:+AlwaysPreTouch, it moves that cost to start-up; run on a pinned
// shard's thread it places the pages on the shard's NUMA node. Call on the
// owner shard, before the cache is used.
func (c *BlockCache) Prefault() int64 {
	return int64(c.pool.prefault(cap(c.pool.free))) * c.blockSize
}

// poolAlign is the alignment of pooled block buffers: a file whose
// O_DIRECT alignment is larger gets unpooled ones (newBlock).
const poolAlign = 4096

// newBlock returns a block buffer aligned for d, with one holder: from the
// pool when its alignment serves d. Its bytes are not zeroed.
func (c *BlockCache) newBlock(align int64) *BlockBuf {
	if align <= poolAlign {
		return c.pool.get()
	}
	b := &BlockBuf{b: alignedBuf(int(c.blockSize), int(align))}
	b.refs.Store(1)
	return b
}

// Stats returns the counters (call on the owner shard).
func (c *BlockCache) Stats() CacheStats {
	s := c.stats
	s.Blocks = len(c.entries)
	s.BufAllocs, s.BufReuses, s.BufBadReleases = c.pool.allocs.Load(), c.pool.reuses.Load(), c.pool.badReleases.Load()
	if f := c.pool.fixed.Load(); f != nil {
		s.BufFixed = int(f.used.Load())
	}
	return s
}

func (c *BlockCache) newFileID() uint64 {
	c.nextID++
	return c.nextID
}

func (c *BlockCache) unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (c *BlockCache) pushFront(e *cacheEntry) {
	e.prev, e.next = &c.head, c.head.next
	c.head.next.prev = e
	c.head.next = e
}

// get returns the block and marks it recently used; nil when absent.
func (c *BlockCache) get(k cacheKey) *cacheEntry {
	e := c.entries[k]
	if e == nil {
		c.stats.Misses++
		return nil
	}
	c.stats.Hits++
	c.unlink(e)
	c.pushFront(e)
	return e
}

// put stores blk (valid bytes of data) as block k, replacing an older copy
// and evicting the least recently used blocks beyond capacity. The entry
// takes over the caller's hold on blk.
func (c *BlockCache) put(k cacheKey, blk *BlockBuf, valid int) *cacheEntry {
	if old := c.entries[k]; old != nil {
		c.unlink(old)
		delete(c.entries, k)
		old.blk.Release()
	}
	e := &cacheEntry{key: k, blk: blk, valid: valid}
	c.entries[k] = e
	c.pushFront(e)
	for len(c.entries) > c.capacity {
		last := c.head.prev
		c.unlink(last)
		delete(c.entries, last.key)
		last.blk.Release()
		c.stats.Evictions++
	}
	return e
}

// dropFile forgets the blocks of file id from block `from` on.
func (c *BlockCache) dropFile(id uint64, from int64) {
	for k, e := range c.entries {
		if k.file == id && k.block >= from {
			c.unlink(e)
			delete(c.entries, k)
			e.blk.Release()
		}
	}
}

// alignedBuf returns a zeroed n-byte slice whose first byte is aligned to
// align (a power of two), for O_DIRECT. The backing array is Go memory that
// the garbage collector frees when no slice refers to it.
func alignedBuf(n, align int) []byte {
	b := make([]byte, n+align)
	off := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) & uintptr(align-1)); r != 0 {
		off = align - r
	}
	return b[off : off+n : off+n]
}
