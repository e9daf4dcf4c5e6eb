package nvme

import (
	"os"
	"sync/atomic"
)

// TailView is what a Log publishes of its active segment's
// last batches for goroutines other than its owner: where each batch lies
// (position, size, base and last offset) and the block buffers that hold
// those bytes (a buffered log: the segment file), so that a fetch near the log end can be answered on the
// goroutine that received it, with Chunks that point into the owner's
// buffers, instead of a hop to the owner shard and back.
//
// Why: with two shards at 100 MB/s (bench r100, uring engine) every fetch
// whose partitions have records on the other shard crossed to it and its
// answer crossed back; those crossings were ~600 of the ~1200 eventfd
// wake-ups a second, each an eventfd write and a context switch into a
// sleeping loop (~35 us of CPU on the development VM).
//
// Covered: up to recentBatches batches of the active segment, those whose
// bytes lie in its last tailBlocks cache blocks (the tail block and the
// one before it while a cache entry or an unwritten block still has it).
// A buffered log publishes its segment file instead of blocks, and all of
// the remembered batches: a read gives one Chunk of the file, as the
// owner's read does (its bytes are in the page cache once Append has
// returned, and the connection's send takes its own descriptor of the
// file). A fetch offset outside that, or a read_committed fetch (aborted
// transactions come from the owner), reads on the owner shard as before.
//
// Publication is a sequence lock: the owner (Log.Append, roll, Close)
// makes seq odd, stores, makes it even. A reader loads seq, reads, takes a
// hold on each block it hands out (BlockBuf.tryHold) and loads seq again;
// a change means it may have read a mix or held a buffer the view had
// already let go, so it releases and gives up. The view keeps its own
// hold on the blocks it names and drops it only after the publish that
// stops naming them, so a buffer a reader finds unchanged at its second
// load was still held by the view when the reader's hold was taken: it
// cannot have gone back to the pool and into another block.
//
// The zero value is an empty view. Ownership: the publishing Log's shard
// writes; any goroutine reads (Read).
type TailView struct {
	seq     atomic.Uint64
	head    atomic.Int32 // slot of the oldest published batch
	n       atomic.Int32 // batches published, from head on, wrapping
	batches [recentBatches]tailBatch
	blocks  [tailBlocks]tailBlock
	file    atomic.Pointer[os.File] // buffered mode: the active segment's file (no blocks)

	// The owner's copy of the slots as published, and the view's holds.
	pub      [recentBatches]batchRef
	pubN     int
	held     [tailBlocks]*BlockBuf
	heldBase [tailBlocks]int64
	heldFile uint64 // directFile.id of the held blocks
	heldGen  uint64 // and its gen (a Truncate makes them stale)
}

// tailBlocks is how many blocks a TailView names: the tail block and the
// full one before it, so a fetch of the batches just behind a block
// boundary still finds them.
const tailBlocks = 2

type tailBatch struct {
	pos, size, base, last atomic.Int64
}

type tailBlock struct {
	base atomic.Int64 // file offset of the block's first byte
	buf  atomic.Pointer[BlockBuf]
}

// SetTailView makes v the view the log publishes its tail to (nil: none),
// and publishes. A view another log published to before starts empty.
// Call on the owner shard.
func (l *Log) SetTailView(v *TailView) {
	if l.tail == v {
		return
	}
	if l.tail != nil {
		l.tail.clear()
	}
	l.tail = v
	if v != nil {
		v.clear()
		l.publishTail()
	}
}

// publishTail publishes the active segment's remembered batches and their
// blocks to l.tail (owner shard; after each append and roll).
func (l *Log) publishTail() {
	v := l.tail
	if v == nil {
		return
	}
	s := l.active()
	if s.recent == nil || s.recent.n == 0 || l.closed || l.failure != nil {
		v.clear()
		return
	}
	d, ok := s.log.(*directFile)
	if !ok {
		v.publishFile(s.log.OSFile(), s.recent)
		return
	}
	q := s.recent
	newest := q.at(q.n - 1)
	end := newest.pos + newest.size
	var bufs [tailBlocks]*BlockBuf
	var bases [tailBlocks]int64
	low := end // the first byte the named blocks cover, contiguously up to end
	base := (end - 1) - (end-1)%d.bs
	for k := 0; k < tailBlocks && base >= 0; k++ {
		b := v.heldBlock(d, base)
		if b == nil {
			b = d.blockBuf(base)
		}
		if b == nil {
			break
		}
		bufs[k], bases[k], low = b, base, base
		base -= d.bs
	}
	first := q.n // the oldest remembered batch whose bytes the blocks hold
	for first > 0 && q.at(first-1).pos >= low {
		first--
	}
	// Hold the new blocks before they are published; let go of the old
	// holds only after (see the type's comment).
	for _, b := range bufs {
		b.hold()
	}
	n := v.seq.Load()
	v.seq.Store(n + 1)
	for k := range v.blocks {
		if v.blocks[k].buf.Load() != bufs[k] || v.blocks[k].base.Load() != bases[k] {
			v.blocks[k].base.Store(bases[k])
			v.blocks[k].buf.Store(bufs[k])
		}
	}
	// The slots are the recent ring's, so an append stores one batch (and
	// the head and count), however full the ring is.
	v.storeSlots(q, first)
	v.head.Store(int32((q.head + first) % recentBatches))
	v.n.Store(int32(q.n - first))
	v.seq.Store(n + 2)
	for _, b := range v.held {
		b.Release()
	}
	v.pubN, v.held, v.heldBase, v.heldFile, v.heldGen = q.n-first, bufs, bases, d.id, d.gen
}

// publishFile publishes q's batches and the file that holds them (a
// buffered log; owner shard).
func (v *TailView) publishFile(f *os.File, q *recentRing) {
	n := v.seq.Load()
	v.seq.Store(n + 1)
	if v.file.Load() != f {
		v.file.Store(f)
		v.pubN = 0 // another segment: store every slot
	}
	v.storeSlots(q, 0)
	v.head.Store(int32(q.head))
	v.n.Store(int32(q.n))
	v.seq.Store(n + 2)
	v.pubN = q.n
}

// storeSlots stores the slots of q's batches from the first on that
// differ from what the view published (owner shard, seq odd).
func (v *TailView) storeSlots(q *recentRing, first int) {
	for i := first; i < q.n; i++ {
		k := (q.head + i) % recentBatches
		if r := q.b[k]; v.pubN == 0 || v.pub[k] != r {
			t := &v.batches[k]
			t.pos.Store(r.pos)
			t.size.Store(r.size)
			t.base.Store(r.baseOffset)
			t.last.Store(r.lastOf)
			v.pub[k] = r
		}
	}
}

// heldBlock is the full block of d at base that the view holds already:
// full blocks never change, so the held buffer serves again without a
// cache lookup, evicted or not (the tail block is d's wref, found first).
func (v *TailView) heldBlock(d *directFile, base int64) *BlockBuf {
	if v.heldFile != d.id || v.heldGen != d.gen || d.wblk != nil && d.wbase == base {
		return nil
	}
	for k, b := range v.held {
		if b != nil && v.heldBase[k] == base && base+d.bs <= d.size {
			return b
		}
	}
	return nil
}

// clear publishes an empty view and lets go of its blocks (owner shard).
func (v *TailView) clear() {
	if v.pubN == 0 && v.held == [tailBlocks]*BlockBuf{} && v.file.Load() == nil {
		return
	}
	n := v.seq.Load()
	v.seq.Store(n + 1)
	v.n.Store(0)
	for k := range v.blocks {
		v.blocks[k].buf.Store(nil)
	}
	v.file.Store(nil)
	v.seq.Store(n + 2)
	for _, b := range v.held {
		b.Release()
	}
	v.pubN, v.held, v.heldFile = 0, [tailBlocks]*BlockBuf{}, 0
}

// blockBuf is the buffer that holds the block at base (a multiple of the
// block size) without reading or touching the cache's recency: the tail
// block, a cached block, or a full block not yet on the device; nil when
// none is in memory.
func (d *directFile) blockBuf(base int64) *BlockBuf {
	if d.wblk != nil && d.wbase == base {
		return d.wref
	}
	if e := d.cache.entries[cacheKey{d.id, base / d.bs}]; e != nil && int64(e.valid) == min(d.bs, d.size-base) {
		return e.blk
	}
	return d.unwrittenBlk(base)
}

// Read appends to dst the whole batches from the one that holds offset, as
// Log.ReadBatchesInto would (never a batch whose base offset is >=
// maxOffset; at most maxBytes, except the first batch whole with
// minOneBatch, KIP-74), with each batch's end, in bytes from the first, to
// ends (both reused from their first element). Each Chunk points into a
// block buffer and holds it (Chunk.Ref), or, for a buffered log, is the
// range of the segment file (Chunk.File, no hold). It reports false, with nothing
// held, when the view cannot answer: offset outside the published batches,
// or a publish during the read. Any goroutine.
func (v *TailView) Read(dst []Chunk, ends []int32, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, []int32, bool) {
	res := ReadResult{Chunks: dst[:0]}
	ends = ends[:0]
	seq := v.seq.Load()
	if seq&1 != 0 {
		return res, ends, false
	}
	head, n := int(v.head.Load()), int(v.n.Load())
	if n <= 0 || n > recentBatches || head < 0 || head >= recentBatches || offset < v.batches[head].base.Load() {
		return res, ends, false
	}
	i := 0
	for i < n && v.batches[(head+i)%recentBatches].last.Load() < offset {
		i++
	}
	if i == n {
		return res, ends, false
	}
	start := v.batches[(head+i)%recentBatches].pos.Load()
	pos := start
	for ; i < n; i++ {
		b := &v.batches[(head+i)%recentBatches]
		size := b.size.Load()
		if b.base.Load() >= maxOffset {
			break
		}
		if pos+size-start > int64(maxBytes) && !(pos == start && minOneBatch) {
			res.Limited = true
			break
		}
		if b.pos.Load() != pos || size <= 0 {
			return res, ends[:0], false // a mix of two publishes
		}
		pos += size
		ends = append(ends, int32(pos-start))
	}
	if pos == start {
		return res, ends, v.seq.Load() == seq
	}
	if tailFileHook != nil {
		tailFileHook()
	}
	if f := v.file.Load(); f != nil {
		// Buffered: the bytes [start, pos) of the segment file.
		res.Chunks = append(res.Chunks, Chunk{File: f, Pos: start, Len: int32(pos - start)})
		if v.seq.Load() != seq {
			return undoTail(res, ends)
		}
		res.Bytes = int32(pos - start)
		return res, ends, true
	}
	// The bytes [start, pos) over the named blocks.
	for at := start; at < pos; {
		var blk *BlockBuf
		var base int64
		for k := range v.blocks {
			b := v.blocks[k].buf.Load()
			bb := v.blocks[k].base.Load()
			if b != nil && at >= bb && at < bb+int64(len(b.b)) {
				blk, base = b, bb
				break
			}
		}
		if tailReadHook != nil {
			tailReadHook()
		}
		if blk == nil || !blk.tryHold() {
			return undoTail(res, ends)
		}
		to := min(pos, base+int64(len(blk.b)))
		res.Chunks = append(res.Chunks, Chunk{Mem: blk.b[at-base : to-base], Ref: blk, Pos: at, Len: int32(to - at)})
		at = to
	}
	if v.seq.Load() != seq {
		return undoTail(res, ends)
	}
	res.Bytes = int32(pos - start)
	return res, ends, true
}

// tailReadHook, when set (tests), runs in Read between finding a block and
// holding it: where a publish that lets go of the block could come.
var tailReadHook func()

// tailFileHook, when set (tests), runs in Read between reading the slots
// and loading the file: where a roll to another segment could come.
var tailFileHook func()

// undoTail releases the chunks a failed Read took and reports failure.
func undoTail(res ReadResult, ends []int32) (ReadResult, []int32, bool) {
	res.Chunks, res.Limited = ReleaseChunks(res.Chunks), false
	return res, ends[:0], false
}

// ReleaseChunks drops the holds of chunks that will not be sent (each
// Chunk.Ref once) and returns chunks emptied, its capacity kept and its
// elements cleared. Any goroutine.
func ReleaseChunks(chunks []Chunk) []Chunk {
	for _, c := range chunks {
		c.Ref.Release()
	}
	clear(chunks)
	return chunks[:0]
}

// TailBlockHolders is the number of holders of the buffer of the active
// segment's last block in direct mode (0 in buffered mode, or when the
// block has no buffer yet): the segment file's own, its tail view's,
// writes in flight, and the chunks of fetch answers not yet sent. For
// tests and diagnostics (a fetch that drops chunks without releasing them
// shows here); call on the owner shard.
func (l *Log) TailBlockHolders() int32 {
	d, ok := l.active().log.(*directFile)
	if !ok || d.wref == nil {
		return 0
	}
	return d.wref.refs.Load()
}
