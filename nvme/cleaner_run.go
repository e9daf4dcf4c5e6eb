package nvme

// The off-shard part of a cleaning pass (see Log.PrepareClean, CleanJob.Run): the offset map,
// the grouping of segments and the rewrite into *.cleaned files. Run reads
// only the job's own descriptors of closed segments and writes only new
// files, so the owner shard keeps appending and serving meanwhile.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"strconv"
)

// keyHash is the offset map's key: 128 bits of two seeded hashes, so a
// collision (which would drop a live key) is as unlikely as with Kafka's
// MD5 entries.
type keyHash [2]uint64

type offsetMap struct {
	s1, s2 maphash.Seed
	m      map[keyHash]int64
}

func newOffsetMap() *offsetMap {
	return &offsetMap{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), m: map[keyHash]int64{}}
}

func (o *offsetMap) hash(key []byte) keyHash {
	return keyHash{maphash.Bytes(o.s1, key), maphash.Bytes(o.s2, key)}
}

// txnTracker follows transactions while batches are read in offset order,
// as Kafka's CleanedTransactionMetadata does: which batches belong to an
// aborted transaction, and whether a marker may be discarded.
type txnTracker struct {
	pending   []AbortedTxn           // by FirstOffset, not yet reached
	aborted   map[int64]*abortedSeen // producer -> its ongoing aborted transaction
	committed map[int64]bool         // producers with ongoing non-aborted transactional batches seen
}

type abortedSeen struct {
	txn      AbortedTxn
	sawBatch bool
}

func newTxnTracker(aborted []AbortedTxn) *txnTracker {
	return &txnTracker{pending: aborted, aborted: map[int64]*abortedSeen{}, committed: map[int64]bool{}}
}

func (t *txnTracker) reach(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.pending = t.pending[1:]
		if _, ok := t.aborted[a.ProducerID]; !ok {
			t.aborted[a.ProducerID] = &abortedSeen{txn: a}
		}
	}
}

// dataBatch reports whether a data batch belongs to an aborted transaction.
func (t *txnTracker) dataBatch(h BatchHeader) bool {
	t.reach(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	// An empty batch (a producer's last one, kept by an earlier pass) is
	// no data: it does not hold a marker back.
	if a := t.aborted[h.ProducerID]; a != nil {
		a.sawBatch = a.sawBatch || h.RecordCount > 0
		return true
	}
	if h.RecordCount > 0 {
		t.committed[h.ProducerID] = true
	}
	return false
}

// controlBatch reports whether a marker may be discarded (delete horizon
// aside) and, for an ABORT whose data this pass saw, the index entry to
// keep with it.
func (t *txnTracker) controlBatch(h BatchHeader, recs []byte) (discardable bool, keep *AbortedTxn) {
	t.reach(h.LastOffset())
	if h.RecordCount == 0 {
		return true, nil
	}
	typ, ok := ControlType(recs)
	if !ok {
		return false, nil
	}
	switch typ {
	case ControlAbort:
		a := t.aborted[h.ProducerID]
		delete(t.aborted, h.ProducerID)
		if a != nil && a.sawBatch {
			return false, &a.txn
		}
		return true, nil
	case ControlCommit:
		saw := t.committed[h.ProducerID]
		delete(t.committed, h.ProducerID)
		return !saw, nil
	}
	return false, nil
}

// batchSource walks the batches of one source segment.
type batchSource struct {
	r   segReader
	pos int64
	src *cleanSource
}

func newBatchSource(src *cleanSource, buf []byte) *batchSource {
	return &batchSource{r: segReader{f: osFile{src.f}, buf: buf, end: src.size, off: -1}, src: src}
}

// next returns the next whole batch (valid until the following call) and
// its header; ok is false at the end.
func (b *batchSource) next() (BatchHeader, []byte, bool, error) {
	if b.pos >= b.src.size {
		return BatchHeader{}, nil, false, nil
	}
	name := segmentFileName(b.src.base, logSuffix)
	if b.src.size-b.pos < BatchHeaderSize {
		return BatchHeader{}, nil, false, fmt.Errorf("%w: segment %s: %d trailing bytes at %d", ErrCorruptMessage, name, b.src.size-b.pos, b.pos)
	}
	hb, err := b.r.get(b.pos, BatchHeaderSize)
	if err != nil {
		return BatchHeader{}, nil, false, fmt.Errorf("cannot read segment %s at %d: %w", name, b.pos, err)
	}
	h, err := ParseBatchHeader(hb)
	if err != nil {
		return h, nil, false, fmt.Errorf("segment %s at %d: %w", name, b.pos, err)
	}
	if h.Size() > b.src.size-b.pos {
		return h, nil, false, fmt.Errorf("%w: segment %s: batch at %d runs past the end", ErrCorruptMessage, name, b.pos)
	}
	batch, err := b.r.get(b.pos, int(h.Size()))
	if err != nil {
		return h, nil, false, fmt.Errorf("cannot read segment %s at %d: %w", name, b.pos, err)
	}
	if batchCRC(batch) != h.CRC {
		return h, nil, false, fmt.Errorf("%w: segment %s: CRC32C mismatch of batch at %d", ErrCorruptMessage, name, b.pos)
	}
	b.pos += h.Size()
	return h, batch, true, nil
}

// cleanRecord is one record v2 as the cleaner sees it.
type cleanRecord struct {
	start, end  int // byte range in the records section
	tsDelta     int64
	offsetDelta int32
	key         []byte // nil for a null key
	nullValue   bool
}

// parseCleanRecords splits count records v2 in b.
func parseCleanRecords(b []byte, count int32, dst []cleanRecord) ([]cleanRecord, error) {
	dst = dst[:0]
	pos := 0
	varint := func(p *int, body []byte) (int64, bool) {
		v, n := binary.Varint(body[*p:])
		if n <= 0 {
			return 0, false
		}
		*p += n
		return v, true
	}
	for i := int32(0); i < count; i++ {
		start := pos
		length, ok := varint(&pos, b)
		if !ok || length < 1 || length > int64(len(b)-pos) {
			return nil, fmt.Errorf("%w: record %d: bad length", ErrCorruptMessage, i)
		}
		body := b[pos : pos+int(length)]
		pos += int(length)
		p := 1 // attributes
		r := cleanRecord{start: start, end: pos}
		var okTs, okOff, okKey bool
		r.tsDelta, okTs = varint(&p, body)
		od, okOff := varint(&p, body)
		r.offsetDelta = int32(od)
		kl, okKey := varint(&p, body)
		if !okTs || !okOff || !okKey || od < 0 || od > math.MaxInt32 || kl > int64(len(body)-p) {
			return nil, fmt.Errorf("%w: record %d: bad fields", ErrCorruptMessage, i)
		}
		if kl >= 0 {
			r.key = body[p : p+int(kl)]
			p += int(kl)
		}
		vl, ok := varint(&p, body)
		if !ok || vl > int64(len(body)-p) {
			return nil, fmt.Errorf("%w: record %d: bad value", ErrCorruptMessage, i)
		}
		r.nullValue = vl < 0
		dst = append(dst, r)
	}
	if pos != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorruptMessage, len(b)-pos, count)
	}
	return dst, nil
}

// Throttler limits the cleaner's I/O; Wait blocks until n more bytes may
// be read or written, or returns ErrCleanStopped when stop closes.
type Throttler interface {
	Wait(n int, stop <-chan struct{}) error
}

type noThrottle struct{}

func (noThrottle) Wait(int, <-chan struct{}) error { return nil }

// cleanRun is Run's working state.
type cleanRun struct {
	j    *CleanJob
	stop <-chan struct{}
	th   Throttler
	dec  decompressor
	enc  compressor
	buf  []byte
	recs []cleanRecord
	raw  []byte
	out  []byte
}

func (r *cleanRun) stopped() error {
	select {
	case <-r.stop:
		return ErrCleanStopped
	default:
		return nil
	}
}

// Run builds the offset map and writes the cleaned segments as *.cleaned
// files; it reads only closed segments through the job's own descriptors.
// stop aborts it (ErrCleanStopped); th (nil: unlimited) bounds its I/O.
// On error the files written so far are removed. Errors: ErrCleanStopped,
// ErrCorruptMessage (a stored batch fails its CRC or cannot be parsed) and
// I/O errors.
func (j *CleanJob) Run(stop <-chan struct{}, th Throttler) error {
	if th == nil {
		th = noThrottle{}
	}
	r := &cleanRun{j: j, stop: stop, th: th, buf: make([]byte, scanBufSize)}
	defer r.dec.close()
	defer r.enc.close()
	err := r.run()
	if err != nil {
		j.Abort()
		return err
	}
	j.ran = true
	return nil
}

func (r *cleanRun) run() error {
	j := r.j
	m, err := r.buildMap()
	if err != nil {
		return err
	}
	j.stats.MapEntries = len(m.m)
	j.stats.FirstDirty, j.stats.EndDirty = j.firstDirty, j.endDirty
	// Only the segments that hold offsets below the end of the map are
	// rewritten.
	n := 0
	for n < len(j.srcs) && j.srcs[n].base < j.endDirty {
		n++
	}
	if n < len(j.srcs) {
		j.nextBase = j.srcs[n].base
	}
	for _, s := range j.srcs[n:] {
		s.f.Close()
	}
	j.srcs = j.srcs[:n]
	t := newTxnTracker(j.aborted)
	for i := 0; i < len(j.srcs); {
		g := &cleanGroup{first: i, base: j.srcs[i].base}
		j.groups = append(j.groups, g)
		if err := r.cleanGroup(g, m, t); err != nil {
			return err
		}
		i += g.n
		if i < len(j.srcs) {
			g.end = j.srcs[i].base
		} else {
			g.end = j.nextBase
		}
	}
	j.stats.SegmentsIn, j.stats.SegmentsOut = len(j.srcs), len(j.groups)
	return nil
}

// buildMap maps each key of the dirty part to its latest offset, skipping
// aborted transactional data and markers. When the map reaches
// MaxMapEntries the dirty part ends at the first record that did not fit.
func (r *cleanRun) buildMap() (*offsetMap, error) {
	j := r.j
	m := newOffsetMap()
	t := newTxnTracker(j.aborted)
	for i := range j.srcs {
		src := &j.srcs[i]
		if src.next <= j.firstDirty {
			continue
		}
		bs := newBatchSource(src, r.buf)
		for {
			if err := r.stopped(); err != nil {
				return nil, err
			}
			h, batch, ok, err := bs.next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			if err := r.th.Wait(len(batch), r.stop); err != nil {
				return nil, err
			}
			j.stats.BytesRead += int64(len(batch))
			if h.LastOffset() < j.firstDirty {
				continue
			}
			if h.IsControl() {
				t.controlBatch(h, batch[BatchHeaderSize:])
				continue
			}
			if t.dataBatch(h) || h.RecordCount == 0 {
				continue
			}
			recs, raw, err := r.records(h, batch)
			if err != nil {
				return nil, fmt.Errorf("segment %s: batch at offset %d: %w", segmentFileName(src.base, logSuffix), h.BaseOffset, err)
			}
			_ = raw
			for _, rec := range recs {
				off := h.BaseOffset + int64(rec.offsetDelta)
				if rec.key == nil || off < j.firstDirty {
					continue
				}
				k := m.hash(rec.key)
				if _, ok := m.m[k]; !ok && j.cfg.MaxMapEntries > 0 && len(m.m) >= j.cfg.MaxMapEntries {
					if off <= j.firstDirty {
						return nil, fmt.Errorf("cannot clean %q: the offset map holds %d entries, too few for one segment", j.dir, j.cfg.MaxMapEntries)
					}
					j.endDirty = off
					return m, nil
				}
				m.m[k] = off
			}
		}
	}
	return m, nil
}

// records parses the records of a data batch, decompressing them first.
// The returned raw records section is valid until the next call.
func (r *cleanRun) records(h BatchHeader, batch []byte) ([]cleanRecord, []byte, error) {
	raw := batch[BatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		d, err := r.dec.decompress(c, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
		}
		raw = d
	}
	recs, err := parseCleanRecords(raw, h.RecordCount, r.recs)
	if err != nil {
		return nil, nil, err
	}
	r.recs = recs
	return recs, raw, nil
}

// cleanGroup rewrites sources from g.first into <base>.log.cleaned and its
// indexes, merging the next source in while the output so far plus that
// source's size fits segment.bytes (and the int32 offset range and the
// index limits), as Kafka's groupSegmentsBySize does with input sizes.
func (r *cleanRun) cleanGroup(g *cleanGroup, m *offsetMap, t *txnTracker) error {
	j := r.j
	ns := newSegmentState(j.dir, g.base, j.nowMs)
	g.out = ns
	logPath := cleanedPath(j.dir, g.base, logSuffix)
	g.files = append(g.files, logPath)
	f, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", logPath, err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var pos int64
	for k := g.first; k < len(j.srcs); k++ {
		if src := j.srcs[k]; k > g.first && (pos+src.size > j.segBytes || pos+src.size > maxSegmentBytes/2 ||
			len(ns.offIdx)+src.idxEntries+1 > j.maxIdx || len(ns.timeIdx)+src.idxEntries+2 > j.maxTime ||
			src.next-1-g.base > math.MaxInt32) {
			break
		}
		g.n++
		bs := newBatchSource(&j.srcs[k], r.buf)
		for {
			if err := r.stopped(); err != nil {
				return err
			}
			h, batch, ok, err := bs.next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if err := r.th.Wait(len(batch), r.stop); err != nil {
				return err
			}
			j.stats.BytesRead += int64(len(batch))
			out, err := r.filterBatch(h, batch, m, t, g)
			if err != nil {
				return fmt.Errorf("segment %s: batch at offset %d: %w", segmentFileName(j.srcs[k].base, logSuffix), h.BaseOffset, err)
			}
			if out == nil {
				continue
			}
			if err := r.th.Wait(len(out), r.stop); err != nil {
				return err
			}
			if _, err := w.Write(out); err != nil {
				return fmt.Errorf("cannot write %q: %w", logPath, err)
			}
			oh := decodeHeader(out)
			ns.track(pos, int64(len(out)), oh.LastOffset(), oh.MaxTimestamp, j.interval, j.maxIdx, j.maxTime)
			pos += int64(len(out))
			j.stats.BytesWritten += int64(len(out))
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("cannot write %q: %w", logPath, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot fsync %q: %w", logPath, err)
	}
	ns.size = pos
	ns.maybeAppendTime(1 << 30)
	var ib, tb, xb []byte
	for _, e := range ns.offIdx {
		ib = appendOffsetEntry(ib, e)
	}
	for _, e := range ns.timeIdx {
		tb = appendTimeEntry(tb, e)
	}
	for _, e := range g.txn {
		xb = AppendTxnEntry(xb, e)
	}
	files := []struct {
		sfx  string
		data []byte
	}{{indexSuffix, ib}, {timeIndexSuffix, tb}, {txnIndexSuffix, xb}, {cleanRangeSuffix, []byte(strconv.FormatInt(g.end, 10) + "\n")}}
	for _, x := range files {
		if x.sfx == txnIndexSuffix && len(x.data) == 0 {
			continue
		}
		p := cleanedPath(j.dir, g.base, x.sfx)
		g.files = append(g.files, p)
		if err := writeSynced(p, x.data); err != nil {
			return err
		}
	}
	ns.idxFlushed, ns.timeFlushed = len(ns.offIdx), len(ns.timeIdx)
	return nil
}

// writeSynced writes data to a new file at path and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %q: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot fsync %q: %w", path, err)
	}
	return f.Close()
}

// filterBatch returns the batch to write for a source batch: the batch
// itself when every record stays, a rebuilt one when some go, an empty one
// for a producer's last batch, or nil.
func (r *cleanRun) filterBatch(h BatchHeader, batch []byte, m *offsetMap, t *txnTracker, g *cleanGroup) ([]byte, error) {
	j := r.j
	if h.IsControl() {
		discardable, keep := t.controlBatch(h, batch[BatchHeaderSize:])
		j.stats.RecordsRead += int64(h.RecordCount)
		if discardable && h.LastOffset() < j.deletableBelow {
			return nil, nil
		}
		if keep != nil {
			g.txn = append(g.txn, *keep)
		}
		j.stats.RecordsKept += int64(h.RecordCount)
		return batch, nil
	}
	lastOfProducer := h.ProducerID >= 0 && j.producerLast[h.ProducerID] == h.LastOffset()
	aborted := t.dataBatch(h)
	j.stats.RecordsRead += int64(h.RecordCount)
	if aborted || h.RecordCount == 0 {
		if lastOfProducer {
			return r.emptyBatch(h, batch), nil
		}
		return nil, nil
	}
	recs, raw, err := r.records(h, batch)
	if err != nil {
		return nil, err
	}
	keep := 0
	maxDelta := int64(math.MinInt64)
	r.raw = r.raw[:0]
	for _, rec := range recs {
		off := h.BaseOffset + int64(rec.offsetDelta)
		if rec.key == nil {
			continue // Kafka drops keyless records from compacted logs
		}
		if latest, ok := m.m[m.hash(rec.key)]; ok && off < latest {
			continue
		}
		if rec.nullValue && off < j.deletableBelow {
			continue
		}
		keep++
		maxDelta = max(maxDelta, rec.tsDelta)
		r.raw = append(r.raw, raw[rec.start:rec.end]...)
	}
	j.stats.RecordsKept += int64(keep)
	switch {
	case keep == len(recs):
		return batch, nil
	case keep == 0:
		if lastOfProducer {
			return r.emptyBatch(h, batch), nil
		}
		return nil, nil
	}
	body := r.raw
	if c := h.Compression(); c != CompressionNone {
		if body, err = r.enc.compress(c, r.raw); err != nil {
			return nil, err
		}
	}
	out := append(r.out[:0], batch[:BatchHeaderSize]...)
	out = append(out, body...)
	be := binary.BigEndian
	be.PutUint32(out[offBatchLength:], uint32(len(out)-batchLengthBase))
	be.PutUint32(out[offRecordCount:], uint32(keep))
	if !h.IsLogAppendTime() {
		be.PutUint64(out[offMaxTimestamp:], uint64(h.BaseTimestamp+maxDelta))
	}
	be.PutUint32(out[offCRC:], batchCRC(out))
	r.out = out
	return out, nil
}

// emptyBatch is h's batch with no records, as Kafka's cleaner keeps a
// producer's last batch: offsets, sequence, producer and flags stay,
// the codec is none and both timestamps are the batch's max timestamp.
func (r *cleanRun) emptyBatch(h BatchHeader, batch []byte) []byte {
	be := binary.BigEndian
	out := append(r.out[:0], batch[:BatchHeaderSize]...)
	be.PutUint32(out[offBatchLength:], uint32(BatchHeaderSize-batchLengthBase))
	be.PutUint16(out[offAttributes:], uint16(h.Attributes&^AttrCompressionMask))
	be.PutUint64(out[offBaseTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint32(out[offRecordCount:], 0)
	be.PutUint32(out[offCRC:], batchCRC(out))
	r.out = out
	return out
}
