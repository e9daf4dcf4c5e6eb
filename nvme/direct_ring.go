package nvme

import (
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/ringbroker/ringbroker/ioring"
	"golang.org/x/sys/unix"
)

// Ring writes (direct mode, io.engine=uring): an append copies its bytes
// into the segment's tail buffer and queues the aligned range it touched
// on its file; the file hands what it has queued to the shard's ring as one
// round of writes as soon as no round of its is in flight, and the next
// round when that one completes. The shard never waits for the device:
// Log.WrittenEndOffset tells how far the log is on the device, and the
// Log's written hook (Log.SetWrittenHook) runs when that moves, so the
// caller acknowledges, publishes and fdatasyncs an append only once its
// bytes are written, as it did after a pwrite(2). Appends that come while a
// round is in flight go out together in the next one.
//
// One round at a time per file: a round rewrites the partly filled block
// the previous one ended in, and two writes of one block in flight at once
// may reach the device in either order. Within a round the ranges are of
// different blocks. The device may read a range's buffer while later
// appends fill it (the buffer only grows), so a round can write more than
// it counts; what it counts (the file's size when it was submitted) is
// what Log.WrittenEndOffset reports.
//
// A range that starts in a block that already holds bytes on the device
// (the partly filled block the previous round ended in) is sent as two
// writes: that block, and the blocks after it. ext4 issues an O_DIRECT
// write without blocking (IOCB_NOWAIT, which io_uring tries first) only
// when the range maps to one extent; the old block is written and the new
// ones are still unwritten (fallocated), so as one write it got -EAGAIN and
// io_uring handed it to an io-wq worker thread: ~80% of the ring writes at
// maximum rate (io_uring:io_uring_queue_async_work) when writes were
// batched per produce, and 4x the time per batch of 8 appends in a test of
// the pattern. Split, none are handed off.
//
// Contiguous ranges of new blocks in one round (an append that filled one
// cache block and went on in the next: the two blocks' buffers are
// separate) go out as one writev, not as a write per buffer. ext4 marks
// the fallocated (unwritten) range a write lands in as written when the
// write completes, on a kworker; two such writes of one file in flight at
// once may be converted in either order, and the later range converted
// first leaves an unwritten gap between two written extents. When that
// takes the file past the four extents its inode holds, ext4 allocates an
// extent-tree block, and the conversion that closes the gap frees it
// again: on a filesystem mounted with discard, with a synchronous discard
// inside the completion. In the catch-up bench (perf, sched_switch with
// stacks) one block was freed and allocated again ~40 times a second once
// the second preallocation chunk was fallocated, a discard took 30-500 ms
// on this machine's virtio disk, and the file's later completions waited
// behind it (i_data_sem): rounds of 80-140 ms, publish p99 200-500 ms with
// uring against 30-280 ms with netpoll, whose pwrite(2)s convert one range
// at a time, in order. With one writev per contiguous range the
// conversions of a file stay in file order. Such a write is not
// WRITE_FIXED (several buffers); there is about one per cache block
// filled. In-order conversions still churn while a file's third chunk
// fills (two written chunks elsewhere on the disk, then the one being
// converted: each conversion needs a fifth extent for a moment), with
// either engine: ~3400 discards in 15 s at 100 MB/s over 16 partitions.
// Chunks past the first are therefore written with zeros before the data
// reaches them (directFile.zeroFill, Log.growAllocation), and the data writes
// convert nothing.
//
// Waits: rolling, closing and truncating a file need its writes done; they
// wait on the ring (settle) with ioring.Ring.WaitFor, which runs only the
// write completions (writePart is ioring.Urgent) and holds every other CQE
// for the loop. The written hooks of what completes during such a wait run
// from a NOP the wait leaves on the ring, not inside the caller's Log call.
//
// Before (one message per produce per shard, its writes submitted together
// and waited for): the shard blocked on the device for every produce, up to
// 103 ms behind catch-up reads in one traced run, and at 10 MB/s each
// shard spent ~10% of its time in pwrite(2) (single ranges went by pwrite).

// pendingWrite is a queued range: blk.b[from:to], aligned, at file offset
// base+from; it holds blk.
type pendingWrite struct {
	blk      *BlockBuf
	base     int64
	from, to int64
}

// writePart is one ring write of a round and its completion handler. It
// lives in its file's parts, which change only between rounds, so
// submitting a round allocates nothing once the slice has grown.
type writePart struct {
	d    *directFile
	blk  *BlockBuf // held until the write completes
	buf  []byte
	off  int64
	head bool        // rewrites a block that already holds bytes on the device
	more []writePart // the parts after this one that its writev writes (nil: a plain write)
}

// Complete records the write's result; the last part of a round ends it.
func (w *writePart) Complete(cq ioring.CQE) {
	d := w.d
	want := len(w.buf)
	for _, m := range w.more {
		want += len(m.buf)
	}
	if cq.Res < 0 {
		d.noteWrite(0, want, fmt.Errorf("io_uring write: %w", syscall.Errno(-cq.Res)))
	} else {
		d.noteWrite(int(cq.Res), want, nil)
	}
	w.release()
	d.flight--
	d.cache.wb.flight--
	if d.flight == 0 {
		d.finishRound(true)
	}
}

// Urgent lets a settle's ioring.Ring.WaitFor run the completion.
func (*writePart) Urgent() {}

// release drops the holds of w and of the parts its writev wrote.
func (w *writePart) release() {
	for i := range w.more {
		m := &w.more[i]
		m.blk.Release()
		m.buf, m.blk = nil, nil
	}
	w.blk.Release()
	w.buf, w.blk, w.more = nil, nil, nil
}

// maxWritevParts bounds the buffers one writev takes (IOV_MAX is 1024).
const maxWritevParts = 64

// run is how many parts from i on one ring write takes: i alone when it is
// a head part, else it and the parts after it that continue its range in
// the file, none of them a head.
func run(parts []writePart, i int) int {
	n := 1
	if parts[i].head {
		return n
	}
	for j := i + 1; j < len(parts) && n < maxWritevParts; j++ {
		p, q := &parts[j-1], &parts[j]
		if q.head || p.off+int64(len(p.buf)) != q.off {
			break
		}
		n++
	}
	return n
}

// unwrittenBlock is a block that is no longer a file's tail buffer but
// still holds bytes not yet on the device: should the cache evict it
// before they are written, reads take it from here, never from the disk.
type unwrittenBlock struct {
	base int64
	blk  *BlockBuf // held by the list
}

// writeQueue is a BlockCache's ring writes (owner shard only).
type writeQueue struct {
	ring   *ioring.Ring
	nested int            // > 0 while a settle waits: written hooks wait for the kick
	ready  []*directFile  // files whose written hooks are due
	spare  []*directFile  // ready's other buffer while its hooks run
	kicked bool           // a NOP that runs ready's hooks is on the ring
	kickH  ioring.Handler // that NOP's handler, made once
	flight int            // ring writes in flight, all files
	stats  WriteStats
}

// WriteStats counts a BlockCache's ring writes, and the zero fills of its
// files' preallocated chunks (directFile.zeroFill), which both engines make.
type WriteStats struct {
	Rounds      uint64 // rounds submitted
	Ranges      uint64 // queued ranges they wrote
	RingWrites  uint64 // ring writes (a range that starts in a written block takes two)
	FixedWrites uint64 // of those, writes from registered buffers (UseFixedBuffers)
	Waits       uint64 // settles that waited for a round (roll, close, truncate)
	Pwrites     uint64 // parts written with pwrite(2) because the ring refused them
	Writevs     uint64 // ring writes that wrote contiguous ranges of several buffers in one writev

	ZeroFills     uint64 // zero fills started
	ZeroFillBytes uint64 // bytes they were asked to write
	ZeroFillWaits uint64 // appends, truncations and closes that waited for a fill still running
}

// settleTimeout bounds a settle's wait for the device. A write that takes
// longer is reported as failed, which takes its log offline.
const settleTimeout = 2 * time.Minute

// SetWriteRing makes the cache's files write through r, a ring owned by
// the shard that owns the cache (uring engine), without waiting for the
// device (see above). Call it on that shard before its logs append;
// without one (nil, the default) every append is a pwrite(2).
func (c *BlockCache) SetWriteRing(r *ioring.Ring) {
	c.wb.ring = r
	if c.wb.kickH == nil {
		wb := &c.wb
		c.wb.kickH = ioring.HandlerFunc(func(ioring.CQE) {
			wb.kicked = false
			wb.runReady()
		})
	}
}

// UseFixedBuffers registers the cache's block buffers with r, the owner
// shard's ring, as fixed buffers (io.uring.fixed.buffers): ring writes and
// prefetch reads from them are then WRITE_FIXED and READ_FIXED ops, for
// which the kernel pins no pages per I/O. It registers an empty table of
// as many slots as the cache's free list holds (at most 16384) and fills a
// slot as each buffer is made, so the pinned memory is what the pool
// would keep anyway. Call it on r's thread (the ring is single-issuer).
// Errors: the kernel's for IORING_REGISTER_BUFFERS2 (EINVAL before Linux
// 5.19, EBUSY when r has a table); the cache then works as before. A
// buffer the kernel refuses to register later (ENOMEM once the pinned
// memory reaches RLIMIT_MEMLOCK, for users without CAP_IPC_LOCK) ends the
// registering: onFail (optional) is called once, on r's thread, with the
// buffers registered until then and the error, and the buffers made from
// then on are plain ones.
func (c *BlockCache) UseFixedBuffers(r *ioring.Ring, onFail func(registered int, err error)) error {
	if r == nil {
		return fmt.Errorf("no ring")
	}
	return c.pool.useFixed(r, min(cap(c.pool.free), 1<<14), onFail)
}

// WriteStats returns the cache's ring-write counters (owner shard).
func (c *BlockCache) WriteStats() WriteStats { return c.wb.stats }

// WritesInFlight is the number of the cache's ring writes not yet
// completed (owner shard).
func (c *BlockCache) WritesInFlight() int { return c.wb.flight }

// queue records buf[from:to] (an aligned range of the tail buffer at base)
// for the file's next round, merged with the last queued range of the
// same block.
func (d *directFile) queue(blk *BlockBuf, base, from, to int64) {
	if n := len(d.queued); n > 0 {
		p := &d.queued[n-1]
		if p.blk == blk && p.base == base && from <= p.to {
			p.from, p.to = min(p.from, from), max(p.to, to)
			return
		}
	}
	d.queued = append(d.queued, pendingWrite{blk: blk.hold(), base: base, from: from, to: to})
}

// submit hands the queued ranges to the ring as one round, unless a round
// is in flight or a write has failed.
func (d *directFile) submit() {
	wb := &d.cache.wb
	if d.flight > 0 || len(d.queued) == 0 || d.werr != nil || wb.ring == nil {
		return
	}
	parts := d.parts[:0]
	for _, p := range d.queued {
		from := p.base + p.from
		if head := from + d.align; from < d.written && head < p.base+p.to {
			parts = append(parts, writePart{d: d, blk: p.blk.hold(), buf: p.blk.b[p.from : p.from+d.align], off: from, head: true})
			from = head
		}
		parts = append(parts, writePart{d: d, blk: p.blk, buf: p.blk.b[from-p.base : p.to], off: from, head: from < d.written}) // takes the range's hold
	}
	d.parts = parts
	wb.stats.Rounds++
	wb.stats.Ranges += uint64(len(d.queued))
	clear(d.queued)
	d.queued = d.queued[:0]
	d.flightEnd = d.size
	fd := int(d.raw.OSFile().Fd())
	if cap(d.iov) < len(d.parts) {
		d.iov = make([]unix.Iovec, len(d.parts))
	}
	for i := 0; i < len(d.parts); {
		w := &d.parts[i]
		n := run(d.parts, i)
		var fixed bool
		var err error
		if n == 1 {
			fixed, err = w.blk.ringWrite(wb.ring, fd, w.buf, w.off, w)
		} else {
			w.more = d.parts[i+1 : i+n]
			iov := d.iov[i : i+n]
			for k := range iov {
				b := d.parts[i+k].buf
				iov[k].Base = &b[0]
				iov[k].SetLen(len(b))
			}
			_, err = wb.ring.Writev(fd, iov, w.off, w)
		}
		if err != nil {
			// The ring refused (its SQ full even after a submit, a
			// submit error, the ring closing): write them here instead.
			// The parts of a round are of different blocks, so this
			// overlaps no write in flight.
			for k := i; k < i+n; k++ {
				p := &d.parts[k]
				written, err := d.raw.WriteAt(p.buf, p.off)
				d.noteWrite(written, len(p.buf), err)
				wb.stats.Pwrites++
			}
			w.release()
			i += n
			continue
		}
		d.flight++
		wb.flight++
		wb.stats.RingWrites++
		if fixed {
			wb.stats.FixedWrites++
		}
		if n > 1 {
			wb.stats.Writevs++
		}
		i += n
	}
	if d.flight == 0 {
		d.finishRound(false)
	}
}

// finishRound runs when a round's last write has completed: the file's
// written end moves to where the round ended, or, when a write failed, its
// log goes offline at once (later appends fail); its owner's hook is due,
// and what was queued meanwhile goes out. Only a completion (fromRing) may
// run the due hooks at once; a round that ended inside submit (written
// with pwrite) is inside a Log call, so its hooks wait for a kick.
func (d *directFile) finishRound(fromRing bool) {
	if d.werr != nil && d.owner != nil {
		d.owner.failWrite(d.werr)
	}
	if d.werr == nil {
		d.written = max(d.written, d.flightEnd)
		keep := d.unwritten[:0]
		for _, b := range d.unwritten {
			if b.base+d.bs > d.written {
				keep = append(keep, b)
			} else {
				b.blk.Release()
			}
		}
		clear(d.unwritten[len(keep):])
		d.unwritten = keep
	}
	clear(d.iov) // the buffers' pointers
	d.cache.wb.due(d, fromRing)
	d.submit()
}

// due marks d's owner's written hook as due. It runs the due hooks at once
// when called from a completion outside a settle's wait (now), else leaves
// them to a kick: a NOP whose completion runs them from the loop.
func (wb *writeQueue) due(d *directFile, now bool) {
	if d.owner == nil {
		return
	}
	if !d.hookDue {
		d.hookDue = true
		wb.ready = append(wb.ready, d)
	}
	if now && wb.nested == 0 {
		wb.runReady()
		return
	}
	if wb.nested == 0 {
		wb.kick()
	}
}

// kick puts a NOP on the ring whose completion runs the due hooks (once).
func (wb *writeQueue) kick() {
	if wb.kicked || len(wb.ready) == 0 || wb.ring == nil {
		return
	}
	if _, err := wb.ring.Nop(wb.kickH); err == nil {
		wb.kicked = true
	}
}

// runReady runs the due written hooks. A hook that makes more due (it
// cannot run them itself: hooks run from completions only) adds them to a
// fresh list, run in the next pass.
func (wb *writeQueue) runReady() {
	for len(wb.ready) > 0 {
		list := wb.ready
		wb.ready, wb.spare = wb.spare[:0], nil
		for i, d := range list {
			list[i] = nil
			d.hookDue = false
			d.owner.noteWritten(d)
		}
		wb.spare = list[:0]
	}
}

// settle submits d's queued ranges and waits until every write of d is
// done, then returns d's first failed write. Rolling, closing and
// truncating a file call it; without a write ring it does nothing.
func (d *directFile) settle() error {
	wb := &d.cache.wb
	if wb.ring == nil {
		return d.werr
	}
	d.submit()
	if d.flight == 0 {
		return d.werr
	}
	wb.stats.Waits++
	wb.nested++
	err := wb.ring.WaitFor(func() bool { return d.flight == 0 }, settleTimeout)
	wb.nested--
	if err != nil {
		d.noteWrite(0, 1, fmt.Errorf("cannot wait for the writes of %q: %w", d.name, err))
		if d.owner != nil {
			d.owner.failWrite(d.werr)
		}
	}
	if wb.nested == 0 {
		wb.kick() // the hooks of what completed meanwhile, from the loop
	}
	return d.werr
}

// unwrittenBlk returns the buffer of block base when it holds bytes not
// yet on the device and is no longer the tail buffer; nil otherwise.
func (d *directFile) unwrittenBlk(base int64) *BlockBuf {
	for _, b := range d.unwritten {
		if b.base == base {
			return b.blk
		}
	}
	return nil
}

// noteWrite records the outcome of a write of want bytes.
func (d *directFile) noteWrite(n, want int, err error) {
	if err == nil && n < want {
		err = io.ErrShortWrite
	}
	if err != nil && d.werr == nil {
		d.werr = fmt.Errorf("cannot write %q: %w", d.name, err)
	}
}

// writeMark is an append whose bytes were not all on the device when it
// returned: its file, where its bytes end in it, and its first offset.
type writeMark struct {
	d     *directFile
	end   int64
	first int64
}

// WrittenEndOffset is the offset up to which the log's records are on the
// device (or in its volatile cache: fdatasync still follows for acks=all):
// the log end offset, except while ring writes of appends are queued or in
// flight (direct mode, BlockCache.SetWriteRing), when it is the first
// offset of the oldest append not yet written. After a failed ring write it
// stays there. Owner shard only.
func (l *Log) WrittenEndOffset() int64 {
	for l.markHead < len(l.marks) {
		m := &l.marks[l.markHead]
		if m.d.written < m.end {
			return min(m.first, l.LogEndOffset())
		}
		*m = writeMark{}
		l.markHead++
	}
	l.marks, l.markHead = l.marks[:0], 0
	return l.LogEndOffset()
}

// Failure is the I/O error that took the log offline, wrapped with
// ErrLogClosed as Append returns it; nil while the log is healthy (closed
// or not).
func (l *Log) Failure() error {
	if l.failure == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrLogClosed, l.failure)
}

// SetWrittenHook sets fn to run on the owner shard whenever
// WrittenEndOffset may have moved or a ring write of the log failed (the
// log is then offline: Append returns ErrLogClosed). It never runs inside
// a call to the log's methods.
func (l *Log) SetWrittenHook(fn func()) { l.onWritten = fn }

// failWrite takes the log offline after a failed ring write of one of its
// files (unless it is closed or already offline).
func (l *Log) failWrite(err error) {
	if l.failure == nil && !l.closed {
		_ = l.fail(err)
	}
}

// noteWritten runs the written hook once a round of d, one of the log's
// files, has ended (outside any call to the log's methods).
func (l *Log) noteWritten(d *directFile) {
	if l.onWritten != nil {
		l.onWritten()
	}
}

// markWrite records an append of the active segment that ends at end and
// starts at offset first, when its bytes are not all on the device yet.
func (l *Log) markWrite(s *segment, first int64) {
	d, ok := s.log.(*directFile)
	if !ok || d.written >= d.size {
		return
	}
	if l.markHead > 0 && l.markHead >= len(l.marks)/2 {
		// Under steady load the FIFO never empties: move what is left
		// down rather than grow the array forever.
		n := copy(l.marks, l.marks[l.markHead:])
		clear(l.marks[n:])
		l.marks, l.markHead = l.marks[:n], 0
	}
	l.marks = append(l.marks, writeMark{d: d, end: d.size, first: first})
}
