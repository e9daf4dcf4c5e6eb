package nvme

import "fmt"

// segFiles says how a Log opens its segment .log files: buffered or
// O_DIRECT, preallocated or not. Index files are always buffered (they are
// small, and rebuilt from the .log after an unclean stop).
type segFiles struct {
	direct   bool
	prealloc bool
	cache    *BlockCache
	align    int
}

func newSegFiles(o Options) segFiles {
	sf := segFiles{direct: o.IOMode == IOModeDirect, prealloc: o.Preallocate || o.IOMode == IOModeDirect, cache: o.Cache, align: o.Alignment}
	if sf.align <= 0 {
		sf.align = 4096
	}
	if sf.direct && sf.cache == nil {
		sf.cache = NewBlockCache(DefaultCacheBytes / 16)
	}
	return sf
}

// allocator is a file that can be preallocated (fallocate mode 0).
type allocator interface{ Allocate(size int64) error }

// Allocate preallocates a buffered segment file.
func (o osFile) Allocate(n int64) error { return fallocate(o.f, n) }

// openSegFile opens a segment .log in the log's mode.
func (l *Log) openSegFile(path string, flag int) (file, error) {
	if l.sf.direct {
		d, err := openDirect(l.open, path, flag, 0o644, l.sf.cache, l.sf.align)
		if err != nil {
			return nil, err
		}
		d.owner = l
		return d, nil
	}
	return l.open(path, flag, 0o644)
}

// preallocate extends the active segment's file when the log
// preallocates: to segment.bytes with log.preallocate (Kafka's way), else,
// in direct mode, PreallocateChunk past the data, growing as appends come
// near the end (growAllocation). Direct mode needs the blocks it writes
// allocated (an O_DIRECT write into allocated blocks is not an allocating
// write, which the rings would hand to io-wq), but fallocating segment.bytes
// (1 GiB by default) for every partition at once filled a 72 GB disk at
// the creation of a 64-partition topic. Blocks past the data read as zeros,
// which recovery takes as the end of the log. A refusal (a filesystem
// without fallocate, a full disk) is logged once and preallocation stops
// for this log.
func (l *Log) preallocate(s *segment) {
	if !l.sf.prealloc {
		return
	}
	if _, ok := s.log.(allocator); !ok {
		return
	}
	if s.size == 0 && !l.opts.Preallocate {
		// An empty segment (a new partition, a roll) is allocated at its
		// first append (growAllocation): idle partitions hold no blocks.
		// Allocating ahead at creation took 1.6 GiB for the internal
		// topics' 100 empty partitions, and a direct-mode broker could not
		// start on a small disk (found by the fresh-user disk-full test).
		s.preallocated = true
		return
	}
	size := l.allocationFor(s.size)
	if s.size > 0 && l.zeroFills(s) {
		// A reopened active segment (recovery): a chunk past its data now
		// would be left unwritten, for the appends to convert. Allocate
		// its tail block only; the first appends grow the allocation,
		// and that chunk is zero-filled like any other.
		size = max(roundUp(s.size, DefaultCacheBlockBytes), s.size)
	}
	if l.allocate(s, size) {
		s.preallocated = true
	}
}

// allocationFor is the file size a segment holding need bytes is
// fallocated to.
func (l *Log) allocationFor(need int64) int64 {
	if l.opts.Preallocate {
		return max(l.opts.SegmentBytes, need)
	}
	const unit = DefaultCacheBlockBytes // whole tail blocks: their O_DIRECT writes stay inside
	n := (need + l.opts.PreallocateChunk + unit - 1) / unit * unit
	return max(min(n, l.opts.SegmentBytes), need)
}

// growAllocation fallocates further ahead when an append of n bytes at
// pos would pass the segment's allocated end; when the log zero-fills
// (zeroFills), half a chunk before that, and the new chunk is then written
// with zeros in the background (directFile.zeroFill), so that the data
// writes that reach it are plain overwrites.
//
// Why zeros: an O_DIRECT write into fallocated (unwritten) blocks has ext4
// mark them written when it completes, on a kworker, splitting the
// unwritten extent at the write's end and merging the written part into
// the extent before it. Segments grow a chunk at a time, and chunks of
// different partitions interleave on the disk, so a file's third chunk
// starts it at three extents (two written chunks, one unwritten); each
// conversion then needs a fifth extent for a moment, more than the inode
// holds, and ext4 allocates an extent-tree block and frees it again in
// the merge. On a filesystem mounted with discard and without a journal
// (this project's VM) the free discards the block synchronously inside the
// write's completion: traced at 100 MB/s over 16 partitions (bench r100),
// ~3400 extent blocks freed and discarded in 15 s, write completions held
// up to 308 ms behind them, and the bench's publish p99 at 250-770 ms with
// either engine. Zeros written ahead cost one more write of each byte of
// a segment past its first chunk, in 16 MiB writes off the shard; the
// first chunk (at most two extents) converts without churn and is left
// unwritten, so that a roll never waits for a fill.
func (l *Log) growAllocation(s *segment, pos, n int64) {
	if !s.preallocated || !l.sf.prealloc {
		return
	}
	need := pos + n
	if s.allocated == 0 {
		// The first chunk of a segment preallocate left empty: left
		// unwritten, as preallocate's own would be.
		l.allocate(s, l.allocationFor(need))
		return
	}
	zero := l.zeroFills(s)
	if zero {
		need = min(need+l.opts.PreallocateChunk/2, max(l.opts.SegmentBytes, pos+n))
	}
	if need <= s.allocated {
		return
	}
	old := s.allocated
	if l.allocate(s, l.allocationFor(need)) && zero && s.allocated > old {
		s.log.(*directFile).zeroFill(old, s.allocated)
	}
}

// zeroFills reports whether the log writes zeros over the chunks it
// fallocates for s (growAllocation): direct mode, chunked preallocation
// (log.preallocate fallocates the whole segment at once, whose many
// extents never churn), and not turned off.
func (l *Log) zeroFills(s *segment) bool {
	if l.opts.Preallocate || l.opts.PreallocateUnwritten {
		return false
	}
	_, ok := s.log.(*directFile)
	return ok
}

func (l *Log) allocate(s *segment, size int64) bool {
	if err := s.log.(allocator).Allocate(size); err != nil {
		l.logger.Warn("cannot preallocate segment; continuing without preallocation", "segment", s.path(logSuffix), "bytes", size, "err", err)
		l.sf.prealloc = false
		return false
	}
	s.allocated = size
	return true
}

// trimLog cuts a preallocated .log to its real size (when the segment rolls
// or the log closes, so closed segments are plain Kafka segments) and
// turns a direct-mode tail buffer into a read-only cache block.
func (s *segment) trimLog() error {
	if d, ok := s.log.(*directFile); ok {
		if err := d.settle(); err != nil {
			return fmt.Errorf("cannot finish segment %q: %w", s.path(logSuffix), err)
		}
	}
	if d, ok := s.log.(*directFile); ok && d.wblk != nil {
		d.cache.put(cacheKey{d.id, d.wbase / d.bs}, d.wref, int(d.size-d.wbase)) // the cache takes the file's hold
		d.wblk, d.wref, d.writable = nil, nil, false
	}
	if !s.preallocated {
		return nil
	}
	if err := s.log.Truncate(s.size); err != nil {
		return fmt.Errorf("cannot trim preallocated segment %q to %d: %w", s.path(logSuffix), s.size, err)
	}
	s.preallocated = false
	return nil
}

// appendChunks appends the Chunks that send [pos, pos+n) of s: a file range
// for sendfile in buffered mode, cached memory in direct mode.
func (s *segment) appendChunks(dst []Chunk, pos, n int64) ([]Chunk, error) {
	if d, ok := s.log.(*directFile); ok {
		out, err := d.memChunks(dst, pos, n)
		if err != nil {
			return dst, fmt.Errorf("cannot read segment %q at %d: %w", s.path(logSuffix), pos, err)
		}
		return out, nil
	}
	return append(dst, Chunk{File: s.log.OSFile(), Pos: pos, Len: int32(n)}), nil
}

// forgetCached drops a retired segment's blocks from the shard's cache.
func (s *segment) forgetCached() {
	if d, ok := s.log.(*directFile); ok {
		d.forget()
	}
}

// isZeroHeader reports whether a batch header is all zeros: the unwritten,
// preallocated part of a segment, not a torn batch.
func isZeroHeader(h []byte) bool {
	for _, b := range h {
		if b != 0 {
			return false
		}
	}
	return true
}

// zeroTailReason is the scan stop reason for preallocated zeros.
const zeroTailReason = "preallocated zeros"
