package nvme

import (
	"fmt"
	"sync/atomic"

	"github.com/ringbroker/ringbroker/ioring"
	"golang.org/x/sys/unix"
)

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
	slot int32 // its registered buffer slot on the pool's fixed table + 1; 0: not registered
}

// hold adds a holder and returns b (nil-safe).
func (b *BlockBuf) hold() *BlockBuf {
	if b != nil {
		b.refs.Add(1)
	}
	return b
}

// tryHold adds a holder unless the buffer has none left (it is in its
// pool, or on its way there); any goroutine (TailView.Read).
func (b *BlockBuf) tryHold() bool {
	for {
		n := b.refs.Load()
		if n <= 0 {
			return false
		}
		if b.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
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
	free        chan *BlockBuf // buffers not registered with a ring
	fixed       atomic.Pointer[fixedTable]
	allocs      atomic.Uint64
	reuses      atomic.Uint64
	badReleases atomic.Uint64
}

// fixedTable is a pool's buffers registered with its owner shard's ring
// (BlockCache.UseFixedBuffers). A ring read or write from a registered
// buffer (IORING_OP_READ_FIXED / WRITE_FIXED) skips what the kernel does
// for every O_DIRECT I/O from plain user memory: look up and pin each of
// its pages (get_user_pages, bio_iov_iter_get_pages) and unpin them at
// completion. Profiled at maximum rate (uring, direct, shards=2) that
// pinning was 4% of the broker's samples, most of it the interrupt
// re-enable inside gup_fast, which the development VM's hypervisor makes
// expensive.
//
// A buffer is registered when it is made, on the ring's thread (the ring
// is single-issuer), into the next empty slot, and stays registered for
// the pool's life: registered buffers are never handed to the garbage
// collector, so at most slots of them exist, and its free list always has
// room for them.
type fixedTable struct {
	ring   *ioring.Ring
	tid    int            // the ring's thread: only it may register
	free   chan *BlockBuf // registered buffers not in use; cap slots
	slots  int32
	used   atomic.Int32                    // slots filled
	failed atomic.Bool                     // an update failed (ENOMEM past RLIMIT_MEMLOCK): register no more
	onFail func(registered int, err error) // told once, on the ring's thread, when an update fails
}

// register tries to put b into the table's next empty slot. Call only on
// the ring's thread.
func (f *fixedTable) register(b *BlockBuf) bool {
	n := f.used.Load()
	if n >= f.slots || f.failed.Load() {
		return false
	}
	if err := f.ring.UpdateBuffers(int(n), [][]byte{b.b}); err != nil {
		f.failed.Store(true)
		if f.onFail != nil {
			f.onFail(int(n), err)
		}
		return false
	}
	b.slot = n + 1
	f.used.Store(n + 1)
	return true
}

// canRegister reports whether a buffer made now could be registered.
func (f *fixedTable) canRegister() bool {
	return f.used.Load() < f.slots && !f.failed.Load() && unix.Gettid() == f.tid
}

func newBlockPool(size, align, keep int) *blockPool {
	return &blockPool{size: size, align: align, free: make(chan *BlockBuf, keep)}
}

// get returns a buffer with one holder: a free one (its bytes are what
// its last block held) or a new, zeroed one.
func (p *blockPool) get() *BlockBuf {
	f := p.fixed.Load()
	if f != nil {
		if b := p.reuse(f.free); b != nil {
			return b
		}
	}
	register := f != nil && f.canRegister()
	if !register {
		if b := p.reuse(p.free); b != nil {
			return b
		}
	}
	p.allocs.Add(1)
	b := &BlockBuf{b: alignedBuf(p.size, p.align), pool: p}
	if register {
		f.register(b)
	}
	b.refs.Store(1)
	return b
}

// reuse takes a free buffer from free, if one is there, with one holder.
func (p *blockPool) reuse(free chan *BlockBuf) *BlockBuf {
	select {
	case b := <-free:
		b.refs.Store(1)
		p.reuses.Add(1)
		return b
	default:
		return nil
	}
}

// useFixed registers a table of slots buffers with ring, on the calling
// thread, which must be the ring's, and moves the free buffers into it.
func (p *blockPool) useFixed(ring *ioring.Ring, slots int, onFail func(int, error)) error {
	if p.fixed.Load() != nil {
		return fmt.Errorf("the block buffers are already registered")
	}
	if err := ring.RegisterBufferTable(slots); err != nil {
		return err
	}
	f := &fixedTable{ring: ring, tid: unix.Gettid(), free: make(chan *BlockBuf, slots), slots: int32(slots), onFail: onFail}
	p.fixed.Store(f)
	for moved := 0; moved < slots; moved++ {
		select {
		case b := <-p.free:
			if !f.register(b) {
				p.put(b)
				return nil
			}
			f.free <- b
			continue
		default:
		}
		break
	}
	return nil
}

// prefault puts up to n new buffers into the free list, each of their pages
// written once from the calling thread, and returns how many it added
// (fewer when the free list is full). The writes are the pages' first
// touch: the kernel takes its fault now, and allocates each page on the
// NUMA node the thread's memory policy prefers (a pinned shard's).
//
// With a fixed table (useFixed) on this thread, the buffers go into its
// empty slots first.
func (p *blockPool) prefault(n int) int {
	f := p.fixed.Load()
	for i := 0; i < n; i++ {
		b := &BlockBuf{b: alignedBuf(p.size, p.align), pool: p}
		for off := 0; off < len(b.b); off += pageSize {
			b.b[off] = 0
		}
		if f != nil && f.canRegister() && f.register(b) {
			f.free <- b // room: one per slot
			p.allocs.Add(1)
			continue
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
	if b.slot > 0 {
		select {
		case p.fixed.Load().free <- b: // room: one per slot
		default: // only a buffer put twice finds it full
			p.badReleases.Add(1)
		}
		return
	}
	if f := p.fixed.Load(); f != nil && f.used.Load() >= f.slots {
		return // registered buffers serve the pool now; the garbage collector takes it
	}
	select {
	case p.free <- b:
	default: // full: the garbage collector takes it
	}
}

// ringRead starts a read into buf, a slice of b, at file offset off
// through ring: READ_FIXED when b is registered with ring (fixed true).
func (b *BlockBuf) ringRead(ring *ioring.Ring, fd int, buf []byte, off int64, h ioring.Handler) (fixed bool, err error) {
	if slot, ok := b.fixedSlot(ring); ok {
		_, err = ring.ReadFixed(fd, buf, off, slot, false, h)
		return true, err
	}
	_, err = ring.Read(fd, buf, off, false, h)
	return false, err
}

// ringWrite starts a write of buf, a slice of b, at file offset off
// through ring: WRITE_FIXED when b is registered with ring (fixed true).
func (b *BlockBuf) ringWrite(ring *ioring.Ring, fd int, buf []byte, off int64, h ioring.Handler) (fixed bool, err error) {
	if slot, ok := b.fixedSlot(ring); ok {
		_, err = ring.WriteFixed(fd, buf, off, slot, false, h)
		return true, err
	}
	_, err = ring.Write(fd, buf, off, false, h)
	return false, err
}

// fixedSlot returns b's registered buffer slot on ring, if it has one.
func (b *BlockBuf) fixedSlot(ring *ioring.Ring) (uint16, bool) {
	if b.slot == 0 || b.pool == nil {
		return 0, false
	}
	if f := b.pool.fixed.Load(); f == nil || f.ring != ring {
		return 0, false
	}
	return uint16(b.slot - 1), true
}
