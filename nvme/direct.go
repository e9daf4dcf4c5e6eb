package nvme

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// IO modes of Options.IOMode ([log.io.mode]).
const (
	IOModeBuffered = "buffered" // pwrite through the page cache, sendfile for fetches (Kafka's way)
	IOModeDirect   = "direct"   // O_DIRECT writes from aligned buffers, fetches from a BlockCache
)

// directFile is a segment .log opened with O_DIRECT (direct mode).
//
// Writes: the block of the file that holds the current end (the tail block,
// BlockCache-sized) lives in wblk, an aligned buffer owned by the file. An
// append copies the bytes into wblk once and writes the range of
// alignment-sized blocks it touched with one pwrite, so the partial last
// block is written again, with more bytes, by the next append; bytes past
// the end are zeros. A full wblk becomes an immutable cache block and a new
// buffer is started. The write returns when the device has the bytes (or
// its volatile cache: fdatasync still follows for acks=all).
//
// Reads (ReadAt and memChunks) come from wblk for the tail block and from
// the BlockCache for the others, filled with aligned O_DIRECT reads of whole
// blocks. The file is never read through the page cache.
//
// Ownership: like its Log, one shard goroutine; OSFile may be fdatasynced
// from the group-commit goroutine.
type directFile struct {
	raw      file // opened with O_DIRECT
	name     string
	id       uint64 // key of its blocks in cache
	cache    *BlockCache
	align    int64
	bs       int64 // cache block size, a multiple of align
	size     int64 // logical size: bytes of data
	writable bool  // the active segment: the tail block is kept in wblk
	wblk     []byte
	wref     *BlockBuf // wblk's buffer, held by the file
	wbase    int64     // file offset of wblk[0]
	gen      uint64    // bumped by Truncate and forget: block reads started before are stale (blockRead.Complete)

	// Ring writes (directFile.queue, directFile.submit): the bytes known to be on the device,
	// the ranges queued for the next round, the round in flight (its ring
	// writes, how many are outstanding, the size it makes written), full
	// blocks still holding unwritten bytes, the Log to notify, and the
	// first failed write.
	written   int64
	queued    []pendingWrite
	parts     []writePart
	iov       []unix.Iovec // the round's writev vectors, by part index
	flight    int
	flightEnd int64
	unwritten []unwrittenBlock
	owner     *Log
	hookDue   bool
	werr      error

	// Zero fill (directFile.zeroFill): the start of the fill running, closed when
	// it ends, its error (read after zeroDone is closed).
	zeroFrom   int64
	zeroDone   chan struct{}
	zeroErr    error
	zeroWarned bool
}

// openDirect opens path with O_DIRECT through open (which a test may make
// fault-injecting) and wraps it.
func openDirect(open opener, path string, flag int, perm os.FileMode, cache *BlockCache, align int) (*directFile, error) {
	raw, err := open(path, flag|syscall.O_DIRECT, perm)
	if err != nil {
		return nil, err
	}
	size, err := raw.Size()
	if err != nil {
		raw.Close()
		return nil, err
	}
	return &directFile{raw: raw, name: path, id: cache.newFileID(), cache: cache, align: int64(align),
		bs: cache.blockSize, size: size, written: size, writable: flag&(os.O_WRONLY|os.O_RDWR) != 0}, nil
}

func (d *directFile) OSFile() *os.File     { return d.raw.OSFile() }
func (d *directFile) Datasync() error      { return d.raw.Datasync() }
func (d *directFile) Size() (int64, error) { return d.size, nil }

// Close closes the descriptor, after waiting for the file's ring writes
// (a ring write prepared but not yet submitted names the descriptor by
// number, which a later open could reuse). Blocks stay in the cache until
// evicted or dropped by forget (Close may run on a timer goroutine for a
// retired segment, which has no writes, and must not touch the cache).
func (d *directFile) Close() error {
	if d.flight > 0 || len(d.queued) > 0 {
		_ = d.settle()
	}
	d.waitZero()
	return d.raw.Close()
}

// forget drops the file's blocks from the cache (owner shard only).
func (d *directFile) forget() {
	d.gen++
	d.cache.dropFile(d.id, 0)
	d.dropUnwritten()
}

// dropUnwritten empties the list of blocks not yet on the device.
func (d *directFile) dropUnwritten() {
	for _, b := range d.unwritten {
		b.blk.Release()
	}
	clear(d.unwritten)
	d.unwritten = d.unwritten[:0]
}

// dropTail lets go of the tail buffer.
func (d *directFile) dropTail() {
	d.wref.Release()
	d.wblk, d.wref = nil, nil
}

// Allocate preallocates the file to n bytes (fallocate mode 0: the size
// becomes n, the new blocks read as zeros); the logical size is unchanged.
func (d *directFile) Allocate(n int64) error { return fallocate(d.raw.OSFile(), n) }

// Truncate sets the file's size (and logical size) to n.
func (d *directFile) Truncate(n int64) error {
	if err := d.settle(); err != nil {
		return err
	}
	d.waitZero() // zeros written after would extend the file again
	d.gen++
	if err := d.raw.Truncate(n); err != nil {
		return err
	}
	if d.wblk != nil {
		if n < d.wbase || n >= d.wbase+d.bs {
			d.dropTail()
		} else {
			clear(d.wblk[n-d.wbase:])
		}
	}
	if n < d.size {
		d.cache.dropFile(d.id, n/d.bs)
	}
	d.size = n
	d.written = min(d.written, n)
	d.dropUnwritten()
	return nil
}

// loadTail makes wblk the block that holds the end of the file.
func (d *directFile) loadTail() error {
	base := d.size - d.size%d.bs
	if d.wblk != nil && d.wbase == base {
		return nil
	}
	blk := d.cache.newBlock(d.align) // not zeroed: WriteAt clears what it writes past the data
	buf := blk.b
	if n := d.size - base; n > 0 {
		want := roundUp(n, d.align)
		if err := d.preadFull(buf[:want], base, n); err != nil {
			blk.Release()
			return err
		}
		clear(buf[n:want])
	}
	d.cache.dropFile(d.id, base/d.bs) // the tail block is served from wblk only
	d.dropTail()
	d.wblk, d.wref, d.wbase = buf, blk, base
	return nil
}

// preadFull reads len(p) aligned bytes at off with O_DIRECT; at least need
// of them must arrive (the rest may lie past the end of the file).
func (d *directFile) preadFull(p []byte, off, need int64) error {
	var got int64
	for got < need {
		n, err := d.raw.ReadAt(p[got:], off+got)
		got += int64(n)
		if got >= need {
			break
		}
		if err == io.EOF || (err == nil && n == 0) {
			return fmt.Errorf("cannot read %q at %d: %w", d.name, off, io.ErrUnexpectedEOF)
		}
		if err != nil {
			return err
		}
		if got%d.align != 0 {
			return fmt.Errorf("cannot read %q at %d: unaligned short read of %d bytes", d.name, off, got)
		}
	}
	return nil
}

// WriteAt appends p; off must be the current size. On error the bytes
// counted may be on disk in part; the caller truncates.
func (d *directFile) WriteAt(p []byte, off int64) (int, error) {
	if off != d.size || !d.writable {
		return 0, fmt.Errorf("cannot write %q at %d: direct-mode segments only append (size %d)", d.name, off, d.size)
	}
	d.zeroAhead(off + int64(len(p)))
	written := 0
	for len(p) > 0 {
		if err := d.loadTail(); err != nil {
			return written, err
		}
		rel := d.size - d.wbase
		n := int64(copy(d.wblk[rel:], p))
		from, to := rel-rel%d.align, roundUp(rel+n, d.align)
		// The bytes after the data in the last aligned block reach the
		// device as zeros (recovery stops at a zero header); a recycled
		// buffer holds another block's bytes there. A write in flight
		// over this range sees zeros or data either way.
		clear(d.wblk[rel+n : to])
		ring := d.cache.wb.ring != nil
		if ring {
			d.queue(d.wref, d.wbase, from, to) // written by the next round (directFile.submit)
		} else {
			m, err := d.raw.WriteAt(d.wblk[from:to], d.wbase+from)
			if err == nil && int64(m) < to-from {
				err = io.ErrShortWrite
			}
			if err != nil {
				// Keep the logical size; the bytes past it in wblk are
				// cleared by the caller's Truncate.
				return written + int(max(0, min(n, int64(m)-(rel-from)))), err
			}
		}
		d.size += n
		if !ring {
			d.written = d.size
		}
		written += int(n)
		p = p[n:]
		if d.size == d.wbase+d.bs {
			// The block is full and immutable from now on.
			d.cache.put(cacheKey{d.id, d.wbase / d.bs}, d.wref.hold(), int(d.bs))
			if d.written < d.size {
				d.unwritten = append(d.unwritten, unwrittenBlock{base: d.wbase, blk: d.wref.hold()})
			}
			d.dropTail()
		}
	}
	d.submit()
	if d.werr != nil { // the ring refused and the pwrite in its place failed
		return written, d.werr
	}
	return written, nil
}

// block returns the bytes of the block that holds off, up to the end of the
// file, and their buffer: from wblk for an active file's tail block, else
// from the cache, filled with one O_DIRECT read on a miss. The buffer is
// the file's or the cache's: hold it before the next call that may evict.
func (d *directFile) block(off int64) (*BlockBuf, []byte, int64, error) {
	base := off - off%d.bs
	if d.writable && base+d.bs > d.size {
		if err := d.loadTail(); err != nil {
			return nil, nil, 0, err
		}
		return d.wref, d.wblk[:d.size-base], base, nil
	}
	need := min(d.bs, d.size-base)
	k := cacheKey{d.id, base / d.bs}
	if e := d.cache.get(k); e != nil && int64(e.valid) >= need {
		return e.blk, e.blk.b[:need], base, nil
	}
	if base+need > d.written {
		// Not all on the device yet: the bytes are only in memory.
		blk := d.unwrittenBlk(base)
		if blk == nil {
			return nil, nil, 0, fmt.Errorf("cannot read %q at %d: block not written and not in memory", d.name, base)
		}
		d.cache.put(k, blk.hold(), int(need))
		return blk, blk.b[:need], base, nil
	}
	blk := d.cache.newBlock(d.align)
	buf := blk.b
	want := roundUp(need, d.align)
	if err := d.preadFull(buf[:want], base, need); err != nil {
		blk.Release()
		return nil, nil, 0, fmt.Errorf("cannot read %q at %d: %w", d.name, base, err)
	}
	clear(buf[need:want])
	d.cache.stats.ReadBytes += uint64(want)
	d.cache.put(k, blk, int(need))
	return blk, buf[:need], base, nil
}

// ReadAt copies bytes from the tail buffer or the cache (headers and
// recovery scans; fetches use memChunks).
func (d *directFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= d.size {
		return 0, io.EOF
	}
	total := 0
	for len(p) > 0 && off < d.size {
		_, b, base, err := d.block(off)
		if err != nil {
			return total, err
		}
		n := copy(p, b[off-base:])
		total += n
		p = p[n:]
		off += int64(n)
	}
	if len(p) > 0 {
		return total, io.EOF
	}
	return total, nil
}

// memChunks appends Chunks that reference the cached bytes of [off,
// off+n) without copying them; each holds its buffer (Chunk.Ref).
func (d *directFile) memChunks(dst []Chunk, off, n int64) ([]Chunk, error) {
	for n > 0 {
		blk, b, base, err := d.block(off)
		if err != nil {
			return dst, err
		}
		b = b[off-base:]
		if int64(len(b)) > n {
			b = b[:n]
		}
		dst = append(dst, Chunk{Mem: b, Ref: blk.hold(), Pos: off, Len: int32(len(b))})
		off += int64(len(b))
		n -= int64(len(b))
	}
	return dst, nil
}

func roundUp(n, a int64) int64 { return (n + a - 1) / a * a }

// fallocate preallocates f to n bytes (mode 0).
func fallocate(f *os.File, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Fallocate(int(fd), 0, 0, n)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: ferr}
	}
	return nil
}
