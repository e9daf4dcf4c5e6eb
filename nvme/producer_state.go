package nvme

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Idempotent-producer errors (KIP-98). The appliance maps them to Kafka codes.
var (
	// ErrOutOfOrderSequence: a batch's base sequence does not follow the
	// producer's last one. Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrInvalidProducerEpoch: a batch from an older producer epoch (a
	// fenced zombie). Kafka: INVALID_PRODUCER_EPOCH (47).
	ErrInvalidProducerEpoch = errors.New("producer epoch is older than the current one")
)

// maxProducerBatches is how many recent batches per producer are kept for
// duplicate detection: clients keep at most 5 requests in flight.
const maxProducerBatches = 5

const snapshotSuffix = ".snapshot"

// producerBatch is one appended batch's sequence range and offsets.
type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	maxTs                   int64
}

// ProducerEntry is what a partition remembers of one producer id.
type ProducerEntry struct {
	ProducerID    int64
	Epoch         int16
	LastTimestamp int64 // ms, the largest batch timestamp seen
	// CoordinatorEpoch is the transaction coordinator epoch of the last marker.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the first offset of the producer's open
	// transaction on this partition, or -1.
	CurrentTxnFirstOffset int64
	batches               []producerBatch // oldest first, at most maxProducerBatches
}

// LastSequence is the last sequence number appended, or -1.
func (e *ProducerEntry) LastSequence() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// LastOffset is the offset of the producer's last appended record, or -1.
func (e *ProducerEntry) LastOffset() int64 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastOffset
}

func (e *ProducerEntry) clone() *ProducerEntry {
	c := *e
	c.batches = append([]producerBatch(nil), e.batches...)
	return &c
}

// seqAdd adds n to a sequence number, wrapping at math.MaxInt32 as Kafka does.
func seqAdd(seq int32, n int32) int32 {
	if int64(seq)+int64(n) > math.MaxInt32 {
		return int32(int64(seq) + int64(n) - math.MaxInt32 - 1)
	}
	return seq + n
}

// duplicateOf returns the cached batch equal to [firstSeq, lastSeq] of epoch.
func (e *ProducerEntry) duplicateOf(epoch int16, firstSeq, lastSeq int32) (producerBatch, bool) {
	if e == nil || e.Epoch != epoch {
		return producerBatch{}, false
	}
	for _, b := range e.batches {
		if b.firstSeq == firstSeq && b.lastSeq == lastSeq {
			return b, true
		}
	}
	return producerBatch{}, false
}

// checkSequence applies Kafka's rules for a batch of (epoch, firstSeq) from
// a producer whose entry is e (nil when unknown). An unknown producer is
// accepted at any sequence (KIP-360: its state may have expired); a new
// epoch must start at sequence 0; the same epoch must continue the last
// sequence.
func checkSequence(e *ProducerEntry, epoch int16, firstSeq int32) error {
	if e == nil {
		return nil
	}
	switch {
	case epoch < e.Epoch:
		return fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, e.ProducerID, epoch, e.Epoch)
	case epoch > e.Epoch:
		if firstSeq != 0 {
			return fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, e.ProducerID, epoch, firstSeq)
		}
		return nil
	}
	last := e.LastSequence()
	if last < 0 {
		if firstSeq != 0 {
			return fmt.Errorf("%w: producer %d epoch %d has no sequence yet, got %d", ErrOutOfOrderSequence, e.ProducerID, epoch, firstSeq)
		}
		return nil
	}
	if firstSeq != seqAdd(last, 1) {
		return fmt.Errorf("%w: producer %d epoch %d expected sequence %d, got %d", ErrOutOfOrderSequence, e.ProducerID, epoch, seqAdd(last, 1), firstSeq)
	}
	return nil
}

// producerUpdate records a batch in the entry (creating it as needed).
func (l *Log) producerUpdate(h BatchHeader, firstOffset, lastOffset int64) {
	if h.ProducerID < 0 {
		return
	}
	e := l.producers[h.ProducerID]
	if e == nil {
		e = &ProducerEntry{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, CurrentTxnFirstOffset: -1, LastTimestamp: -1}
		l.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.Epoch {
		e.Epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	e.LastTimestamp = max(e.LastTimestamp, h.MaxTimestamp)
	isControl := h.Attributes&AttrControl != 0
	if isControl {
		// A transaction marker ends the producer's transaction; it carries
		// no sequence.
		e.CurrentTxnFirstOffset = -1
		return
	}
	if h.Attributes&AttrTransactional != 0 && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = firstOffset
	}
	if h.BaseSequence < 0 {
		return
	}
	e.batches = append(e.batches, producerBatch{
		firstSeq: h.BaseSequence, lastSeq: seqAdd(h.BaseSequence, h.LastOffsetDelta),
		firstOffset: firstOffset, lastOffset: lastOffset, maxTs: h.MaxTimestamp,
	})
	if len(e.batches) > maxProducerBatches {
		e.batches = append(e.batches[:0], e.batches[len(e.batches)-maxProducerBatches:]...)
	}
}

// Producer returns a copy of the entry of producer id, or nil.
func (l *Log) Producer(id int64) *ProducerEntry {
	if e := l.producers[id]; e != nil {
		return e.clone()
	}
	return nil
}

// Producers returns copies of every producer entry, by id.
func (l *Log) Producers() []*ProducerEntry {
	out := make([]*ProducerEntry, 0, len(l.producers))
	for _, e := range l.producers {
		out = append(out, e.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// ExpireProducers forgets producers whose last batch is older than
// expirationMs (producer.id.expiration.ms) and that have no open
// transaction. It returns how many were removed.
func (l *Log) ExpireProducers(nowMs, expirationMs int64) int {
	n := 0
	for id, e := range l.producers {
		if e.CurrentTxnFirstOffset < 0 && e.LastTimestamp >= 0 && nowMs-e.LastTimestamp > expirationMs {
			delete(l.producers, id)
			n++
		}
	}
	return n
}

// Producer snapshot file (Kafka's <offset>.snapshot, version 1), big-endian:
//
//	version int16 (=1) | crc uint32 (CRC32C of what follows) | count int32 |
//	count x { producerId int64, epoch int16, lastSequence int32,
//	          lastOffset int64, offsetDelta int32, timestamp int64,
//	          coordinatorEpoch int32, currentTxnFirstOffset int64 }
//
// Kafka writes one entry per producer, its last batch, so after a restart
// from a snapshot only a retry of that batch is known as a duplicate: a
// request that was appended but not answered when the broker stopped, and
// is retried after the restart, got OUT_OF_ORDER_SEQUENCE_NUMBER unless it
// was the producer's last, and a client that then bumps its epoch (KIP-360)
// and resends stores the records twice. So a producer's entry is written
// once per retained batch (up to maxProducerBatches), oldest first, each
// with that batch's sequence, offsets and timestamp; the last one carries
// the producer's largest timestamp. A reader that keeps the last entry per
// producer id (Kafka's, and this package's before it read the others) gets
// exactly the one-entry state; ParseProducerSnapshot gathers them again.
const snapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8

// AppendProducerSnapshot encodes entries in the snapshot format: one entry
// per retained batch of each producer, or one without a sequence (-1) for a
// producer with none.
func AppendProducerSnapshot(dst []byte, entries []*ProducerEntry) []byte {
	be := binary.BigEndian
	start := len(dst)
	dst = be.AppendUint16(dst, 1)
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, 0) // the count, set below
	count := 0
	put := func(e *ProducerEntry, lastSeq int32, lastOff int64, delta int32, ts int64) {
		dst = be.AppendUint64(dst, uint64(e.ProducerID))
		dst = be.AppendUint16(dst, uint16(e.Epoch))
		dst = be.AppendUint32(dst, uint32(lastSeq))
		dst = be.AppendUint64(dst, uint64(lastOff))
		dst = be.AppendUint32(dst, uint32(delta))
		dst = be.AppendUint64(dst, uint64(ts))
		dst = be.AppendUint32(dst, uint32(e.CoordinatorEpoch))
		dst = be.AppendUint64(dst, uint64(e.CurrentTxnFirstOffset))
		count++
	}
	for _, e := range entries {
		if len(e.batches) == 0 {
			put(e, -1, -1, 0, e.LastTimestamp)
			continue
		}
		for i, b := range e.batches {
			ts := b.maxTs
			if i == len(e.batches)-1 {
				ts = e.LastTimestamp
			}
			put(e, b.lastSeq, b.lastOffset, int32(b.lastOffset-b.firstOffset), ts)
		}
	}
	be.PutUint32(dst[start+6:], uint32(count))
	be.PutUint32(dst[start+2:], CRC32C(dst[start+6:]))
	return dst
}

// ParseProducerSnapshot decodes a snapshot file's bytes into one entry per
// producer id, in the order of their first entries. A producer's later
// entry of the same epoch whose batch ends past the ones gathered adds that
// batch (the oldest beyond maxProducerBatches drop); any other later entry
// replaces what came before, as a reader keeping the last entry would.
func ParseProducerSnapshot(b []byte) ([]*ProducerEntry, error) {
	be := binary.BigEndian
	if len(b) < 10 {
		return nil, fmt.Errorf("%w: producer snapshot of %d bytes", ErrCorruptMessage, len(b))
	}
	if v := int16(be.Uint16(b)); v != 1 {
		return nil, fmt.Errorf("%w: producer snapshot version %d", ErrCorruptMessage, v)
	}
	if got, want := CRC32C(b[6:]), be.Uint32(b[2:]); got != want {
		return nil, fmt.Errorf("%w: producer snapshot crc %08x, want %08x", ErrCorruptMessage, got, want)
	}
	n := int64(int32(be.Uint32(b[6:])))
	if n < 0 || int64(len(b)-10) != n*snapshotEntrySize {
		return nil, fmt.Errorf("%w: producer snapshot with %d entries in %d bytes", ErrCorruptMessage, n, len(b))
	}
	out := make([]*ProducerEntry, 0, n)
	byID := make(map[int64]*ProducerEntry, n)
	for p := b[10:]; len(p) > 0; p = p[snapshotEntrySize:] {
		e := &ProducerEntry{
			ProducerID:            int64(be.Uint64(p)),
			Epoch:                 int16(be.Uint16(p[8:])),
			LastTimestamp:         int64(be.Uint64(p[26:])),
			CoordinatorEpoch:      int32(be.Uint32(p[34:])),
			CurrentTxnFirstOffset: int64(be.Uint64(p[38:])),
		}
		lastSeq := int32(be.Uint32(p[10:]))
		lastOff := int64(be.Uint64(p[14:]))
		delta := int32(be.Uint32(p[22:]))
		if lastSeq >= 0 && lastOff >= 0 {
			first := int32((int64(lastSeq) - int64(delta) + math.MaxInt32 + 1) % (math.MaxInt32 + 1))
			e.batches = []producerBatch{{firstSeq: first, lastSeq: lastSeq, firstOffset: lastOff - int64(delta), lastOffset: lastOff, maxTs: e.LastTimestamp}}
		}
		prev := byID[e.ProducerID]
		if prev == nil {
			byID[e.ProducerID] = e
			out = append(out, e)
			continue
		}
		if prev.Epoch == e.Epoch && len(e.batches) == 1 && len(prev.batches) > 0 &&
			e.batches[0].lastOffset > prev.batches[len(prev.batches)-1].lastOffset {
			e.batches = append(prev.batches, e.batches[0])
			if len(e.batches) > maxProducerBatches {
				e.batches = e.batches[len(e.batches)-maxProducerBatches:]
			}
		}
		*prev = *e
	}
	return out, nil
}

// writeProducerSnapshot writes <offset>.snapshot with the current state, as
// Kafka does at each roll and at a clean shutdown.
func (l *Log) writeProducerSnapshot(offset int64) error {
	if err := l.syncTxnIndexes(); err != nil {
		return err
	}
	entries := make([]*ProducerEntry, 0, len(l.producers))
	for _, e := range l.producers {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].ProducerID < entries[j].ProducerID })
	path := filepath.Join(l.dir, segmentFileName(offset, snapshotSuffix))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, AppendProducerSnapshot(nil, entries), 0o644); err != nil {
		return fmt.Errorf("cannot write producer snapshot %q: %w", tmp, err)
	}
	f, err := os.Open(tmp)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("cannot sync producer snapshot %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot rename producer snapshot %q: %w", tmp, err)
	}
	return nil
}

// snapshotOffsets lists the offsets of the snapshot files, ascending.
func (l *Log) snapshotOffsets() []int64 {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil
	}
	var out []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, snapshotSuffix) || len(name) != 20+len(snapshotSuffix) {
			continue
		}
		var off int64
		if _, err := fmt.Sscanf(name[:20], "%d", &off); err == nil {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// loadProducerState restores producer state at open: the newest snapshot at
// or below the log end offset, then every batch after it. Snapshots above
// the log end (left by a truncated tail) are removed; an unreadable snapshot
// is skipped for an older one.
func (l *Log) loadProducerState() error {
	l.producers = map[int64]*ProducerEntry{}
	leo := l.LogEndOffset()
	offs := l.snapshotOffsets()
	from := l.segs[0].base
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		path := filepath.Join(l.dir, segmentFileName(off, snapshotSuffix))
		if off > leo {
			_ = os.Remove(path)
			continue
		}
		if off < l.segs[0].base {
			break
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		entries, err := ParseProducerSnapshot(b)
		if err != nil {
			l.logger.Warn("ignoring unreadable producer snapshot", "file", path, "err", err)
			continue
		}
		for _, e := range entries {
			l.producers[e.ProducerID] = e
		}
		from = off
		break
	}
	return l.scanProducers(from)
}

// scanProducers replays the batch headers from offset from to the log end.
func (l *Log) scanProducers(from int64) error {
	hdr := make([]byte, BatchHeaderSize)
	for i := l.segmentIndex(from); i < len(l.segs); i++ {
		s := l.segs[i]
		pos, err := s.findBatch(from, l.hdr[:])
		if err != nil {
			return err
		}
		for pos < s.size {
			if err := readFull(s.log, hdr, pos); err != nil {
				return fmt.Errorf("cannot read segment %q at %d: %w", s.path(logSuffix), pos, err)
			}
			h, err := ParseBatchHeader(hdr)
			if err != nil {
				return err
			}
			if h.BaseOffset >= from {
				if h.ProducerID >= 0 {
					l.txnReplay(s, pos, h)
				}
				l.producerUpdate(h, h.BaseOffset, h.BaseOffset+int64(h.LastOffsetDelta))
			}
			pos += h.Size()
		}
	}
	return nil
}

// deleteSnapshotsBelow removes snapshot files below offset (the first
// segment's base after retention), keeping the state they described in memory.
func (l *Log) deleteSnapshotsBelow(offset int64) {
	for _, off := range l.snapshotOffsets() {
		if off < offset {
			_ = os.Remove(filepath.Join(l.dir, segmentFileName(off, snapshotSuffix)))
		}
	}
}
