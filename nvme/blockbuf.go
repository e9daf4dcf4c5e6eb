package nvme

import "sync/atomic"

// Recycled block buffers (direct mode). Every tail block and every block
// read from the device used to be a fresh 1 MiB Go allocation: the runtime
// zeroes it (or the kernel does, page by page, on first touch), and the
// garbage collector frees it once the cache has evicted it and the last
// response that sent from it is gone. Profiled at maximum rate on the
// development VM (shards=2, steady state), that was 20% of a uring shard's
// CPU and 13% of netpoll's: memclr of the new span, page faults in the
// append's copy, and the host's faults behind them.
//
// A BlockBuf counts its holders instead: the file whose tail block it is,
// the cache entry, the list of blocks not yet on the device, each ring
// write or read in flight, and each Chunk a read handed out. The last
// Release puts it back into its cache's pool, from which the next tail
// block or block read takes it. Holders that never release (a reader that
// drops its Chunks) only keep a buffer from the pool: the garbage collector
// frees it as before. A release too many would hand a buffer to a new block
// while a holder still reads it. CacheStats.BufBadReleases counts releases
// past zero (tests assert 0); a stray release that comes after the buffer
// was reused is not seen there, only as wrong bytes, which the tests check
// byte for byte.
//
// Pooled buffers are not zeroed: every path that writes a block to the
// device or reads it from there clears the bytes past the data up to the
// write's or read's aligned end (directFile.WriteAt, loadTail, block,
// BlockPrefetch), and only bytes of data are ever handed out.

// BlockBuf is one block's aligned buffer with a count of its holders.
// Release is safe from any goroutine.
type BlockBuf struct {
	b    []byte
	refs atomic.Int32
	pool *blockPool
}

// hold adds a holder and returns b (nil-safe).
func (b *BlockBuf) hold() *BlockBuf {
	if b != nil {
		b.refs.Add(1)
	}
	return b
}

// Release drops one holder; the last one returns the buffer to its pool
// (or leaves it to the garbage collector when the pool is full). Nil-safe.
func (b *BlockBuf) Release() {
	if b == nil {
		return
	}
	switch n := b.refs.Add(-1); {
	case n == 0 && b.pool != nil:
		b.pool.put(b)
	case n < 0 && b.pool != nil:
		b.pool.badReleases.Add(1)
	}
}

// blockPool keeps a cache's free block buffers. Releases may come from any
// goroutine (a response sent by another shard or a netpoll connection), so
// the free list is a channel.
type blockPool struct {
	size, align int
	free        chan *BlockBuf
	allocs      atomic.Uint64
	reuses      atomic.Uint64
	badReleases atomic.Uint64
}

func newBlockPool(size, align, keep int) *blockPool {
	return &blockPool{size: size, align: align, free: make(chan *BlockBuf, keep)}
}

// get returns a buffer with one holder: a free one (its bytes are what
// its last block held) or a new, zeroed one.
func (p *blockPool) get() *BlockBuf {
	select {
	case b := <-p.free:
		b.refs.Store(1)
		p.reuses.Add(1)
		return b
	default:
	}
	p.allocs.Add(1)
	b := &BlockBuf{b: alignedBuf(p.size, p.align), pool: p}
	b.refs.Store(1)
	return b
}

// prefault puts up to n new buffers into the free list, each of their pages
// written once from the calling thread, and returns how many it added
// (fewer when the free list is full). The writes are the pages' first
// touch: the kernel takes its fault now, and allocates each page on the
// NUMA node the thread's memory policy prefers (a pinned shard's).
func (p *blockPool) prefault(n int) int {
	for i := 0; i < n; i++ {
		b := &BlockBuf{b: alignedBuf(p.size, p.align), pool: p}
		for off := 0; off < len(b.b); off += pageSize {
			b.b[off] = 0
		}
		select {
		case p.free <- b:
			p.allocs.Add(1)
		default:
			return i
		}
	}
	return n
}

// pageSize is the unit prefault touches: the smallest page size of the
// architectures we build for.
const pageSize = 4096

func (p *blockPool) put(b *BlockBuf) {
	select {
	case p.free <- b:
	default: // full: the garbage collector takes it
	}
}
