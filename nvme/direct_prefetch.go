package nvme

import (
	"github.com/ringbroker/ringbroker/ioring"
)

// Asynchronous block reads (direct mode, io.engine=uring): a fetch whose
// bytes are not in the shard's BlockCache was read with a blocking 1 MiB
// O_DIRECT pread on the shard, which meanwhile served none of its
// connections: at catch-up (a 200 MB backlog, 64 MiB caches) uring's
// publish p99 was 16-30 ms against netpoll's 12-14, and 8.5-9.7 ms for
// both with caches large enough for the backlog. Log.Prefetch lists the
// blocks a read would miss, BlockPrefetch.Start reads them through the
// shard's ring into new cache blocks, and the caller runs the read again
// when they are in (appliance.fetchState.step); what is still missing then
// (evicted meanwhile, or past the estimate) is read as before.

// PrefetchBlocks bounds the blocks one BlockPrefetch reads at a time (4
// MiB): with 16 in flight, a shard's segment writes queued behind them on
// the device and the publish p99 at catch-up reached 41-120 ms in 2 of 4
// runs.
const PrefetchBlocks = 4

// BlockPrefetch is a reusable set of block reads for one fetch pass. Owner
// shard only; it must not be reused before its done callback has run.
type BlockPrefetch struct {
	reads  [PrefetchBlocks]blockRead
	n      int // reads listed by Prefetch
	left   int // reads in flight
	budget int // blocks Prefetch may still list before the next Begin
	done   func()
}

// Begin starts a pass that may read up to half of cache's blocks in all,
// over as many Start rounds as it takes: more would evict the pass's own
// earlier blocks before its read uses them. A cache of two or three blocks
// still gets two, so a batch that crosses a block boundary is read whole
// (with one, the second block of every such batch was read with a
// blocking pread: 476 of 935 block reads with a 2 MiB cache and ~1 MB
// batches); a one-block cache gets one.
func (pf *BlockPrefetch) Begin(cache *BlockCache) {
	pf.budget = max(min(2, cache.capacity), cache.capacity/2)
}

// blockRead is one block to read: its completion handler lives in the
// BlockPrefetch, so submitting it allocates only the block's buffer.
type blockRead struct {
	pf   *BlockPrefetch
	d    *directFile
	gen  uint64 // d.gen when listed: a truncate or forget since discards the bytes
	base int64  // file offset of the block
	need int64  // bytes of data in it
	blk  *BlockBuf
}

// Complete puts the block into the cache when the read returned all of
// its data and the file has not been truncated or forgotten meanwhile;
// otherwise the block stays missing and the caller's read fetches it.
func (r *blockRead) Complete(cq ioring.CQE) {
	d := r.d
	if cq.Res >= 0 && int64(cq.Res) >= r.need && d.gen == r.gen {
		want := roundUp(r.need, d.align)
		clear(r.blk.b[r.need:want])
		d.cache.stats.ReadBytes += uint64(want)
		d.cache.stats.AsyncReads++
		d.cache.put(cacheKey{d.id, r.base / d.bs}, r.blk, int(r.need))
	} else {
		r.blk.Release() // the read is over: the kernel no longer writes it
	}
	pf := r.pf
	*r = blockRead{}
	pf.left--
	if pf.left == 0 {
		pf.done()
	}
}

// Pending reports the blocks listed and not yet started.
func (pf *BlockPrefetch) Pending() int { return pf.n }

// Full reports whether Prefetch can list no more blocks this round.
func (pf *BlockPrefetch) Full() bool { return pf.n == len(pf.reads) || pf.budget <= 0 }

// Start reads the listed blocks through ring (the owner shard's) and runs
// done on the ring's loop when every read has completed, whatever their
// results. It returns the reads started; with 0, done never runs. The list
// is empty afterwards.
func (pf *BlockPrefetch) Start(ring *ioring.Ring, done func()) int {
	if pf.left > 0 {
		panic("nvme: BlockPrefetch started while in flight")
	}
	pf.done = done
	started := 0
	for i := 0; i < pf.n; i++ {
		r := &pf.reads[i]
		d := r.d
		r.blk = d.cache.newBlock(d.align)
		fd := int(d.raw.OSFile().Fd())
		fixed, err := r.blk.ringRead(ring, fd, r.blk.b[:roundUp(r.need, d.align)], r.base, r)
		if err != nil {
			r.blk.Release()
			*r = blockRead{}
			continue
		}
		if fixed {
			d.cache.stats.FixedReads++
		}
		started++
	}
	pf.n = 0
	if started > 0 {
		// Count them all before any completes (Complete runs only on the
		// ring's loop, after this returns).
		pf.left = started
	}
	return started
}

// Prefetch lists in pf the cache blocks of the segment holding offset that
// a read of up to maxBytes from offset would have to read from the device:
// from where the batch search starts to maxBytes plus a batch header past
// the latest position the batch holding offset can start at
// (segment.batchSpan), within the segment. It returns the bytes the read
// may take, at most maxBytes (0 where nothing applies: buffered mode, an
// offset outside the log, an offline log). The tail block of the active
// segment is in memory and never listed; a read that goes on into the next
// segment, or whose first batch is larger than maxBytes (KIP-74), reads
// that part as before.
func (l *Log) Prefetch(pf *BlockPrefetch, offset int64, maxBytes int32) int64 {
	if !l.sf.direct || l.usable() != nil || offset < l.startOffset || offset >= l.LogEndOffset() || maxBytes <= 0 {
		return 0
	}
	s := l.segs[l.segmentIndex(offset)]
	d, ok := s.log.(*directFile)
	if !ok || offset >= s.next {
		return 0
	}
	var pos, last int64
	if offset > s.base {
		pos, last = s.batchSpan(offset)
	}
	// The read's last header read is that of the batch after the last it
	// returns, within maxBytes of where it starts.
	end := min(s.size, last+int64(maxBytes)+int64(offLastOffsetDelta+4))
	for base := pos - pos%d.bs; base < end && !pf.Full(); base += d.bs {
		if d.writable && base+d.bs > d.size {
			break // the tail block: in memory
		}
		need := min(d.bs, d.size-base)
		if e := d.cache.entries[cacheKey{d.id, base / d.bs}]; e != nil && int64(e.valid) >= need {
			continue
		}
		if base+need > d.written {
			continue // not all on the device yet: in memory (directFile.submit)
		}
		if pf.listed(d, base) {
			continue
		}
		pf.reads[pf.n] = blockRead{pf: pf, d: d, gen: d.gen, base: base, need: need}
		pf.n++
		pf.budget--
	}
	return min(end-pos, int64(maxBytes))
}

// listed reports whether block base of d is already in the list (two
// partitions of one fetch never share a file, but one may be asked twice).
func (pf *BlockPrefetch) listed(d *directFile, base int64) bool {
	for i := 0; i < pf.n; i++ {
		if pf.reads[i].d == d && pf.reads[i].base == base {
			return true
		}
	}
	return false
}
