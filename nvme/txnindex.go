package nvme

// Transactions on the read side (KIP-98): the last stable offset and the
// transaction index of aborted transactions.
//
// The last stable offset (LSO) is the first offset of the oldest open
// transaction on the partition, or the log end offset when none is open.
// read_committed consumers read only below it.
//
// <base>.txnindex, one per segment, is Kafka's transaction index: an entry
// is appended to the active segment's file when an ABORT marker is appended
// for a producer that wrote to the partition in that transaction. Entries
// are 34 bytes, big-endian:
//
//	version int16 (=0) | producerId int64 | firstOffset int64 |
//	lastOffset int64 (the marker's offset) | lastStableOffset int64
//
// The files are written without fdatasync (like Kafka's, they are
// rebuildable): at open, the entries of every live segment are loaded and
// the markers replayed from the producer snapshot onwards are added back, so
// an entry lost in a crash is recovered; entries past a truncated tail are
// dropped and the affected files rewritten.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

const (
	txnIndexSuffix = ".txnindex"
	txnEntrySize   = 34
)

// Control record types (the int16 after the version in a marker's key).
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// AbortedTxn is one entry of the transaction index.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64 // first offset the producer wrote in the transaction
	LastOffset       int64 // offset of the ABORT marker
	LastStableOffset int64 // the partition's LSO once the abort was written
}

// txnState is a Log's transaction bookkeeping; it is owned with the Log.
type txnState struct {
	open      map[int64]struct{} // producers with an open transaction
	aborted   []AbortedTxn       // ascending LastOffset
	recovered []AbortedTxn       // found while replaying at open
	// unsynced names the .txnindex files written since their last fsync.
	// They are synced before a producer snapshot is written: replay at
	// open starts at the newest snapshot, so entries below it must be on
	// disk, and entries above it are rebuilt from the log.
	unsynced map[string]struct{}
}

// syncTxnFile fsyncs one transaction index file; tests replace it to see
// which files were synced.
var syncTxnFile = func(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// markTxnUnsynced records that path was written and not yet synced.
func (l *Log) markTxnUnsynced(path string) {
	if l.txn.unsynced == nil {
		l.txn.unsynced = map[string]struct{}{}
	}
	l.txn.unsynced[path] = struct{}{}
}

// syncTxnIndexes fsyncs the transaction index files written since the last
// call. A file deleted since (retention, compaction swap) needs nothing.
func (l *Log) syncTxnIndexes() error {
	for path := range l.txn.unsynced {
		if err := syncTxnFile(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot fsync transaction index %q: %w", path, err)
		}
		delete(l.txn.unsynced, path)
	}
	return nil
}

// AppendTxnEntry encodes e as a 34-byte transaction index entry.
func AppendTxnEntry(dst []byte, e AbortedTxn) []byte {
	be := binary.BigEndian
	dst = be.AppendUint16(dst, 0)
	dst = be.AppendUint64(dst, uint64(e.ProducerID))
	dst = be.AppendUint64(dst, uint64(e.FirstOffset))
	dst = be.AppendUint64(dst, uint64(e.LastOffset))
	return be.AppendUint64(dst, uint64(e.LastStableOffset))
}

// ParseTxnIndex decodes a .txnindex file's bytes. A torn trailing entry is
// ignored; an unknown version is ErrCorruptMessage.
func ParseTxnIndex(b []byte) ([]AbortedTxn, error) {
	be := binary.BigEndian
	var out []AbortedTxn
	for ; len(b) >= txnEntrySize; b = b[txnEntrySize:] {
		if v := int16(be.Uint16(b)); v != 0 {
			return out, fmt.Errorf("%w: transaction index entry version %d", ErrCorruptMessage, v)
		}
		out = append(out, AbortedTxn{
			ProducerID:       int64(be.Uint64(b[2:])),
			FirstOffset:      int64(be.Uint64(b[10:])),
			LastOffset:       int64(be.Uint64(b[18:])),
			LastStableOffset: int64(be.Uint64(b[26:])),
		})
	}
	return out, nil
}

// ControlType returns the type of the control record at the start of recs
// (the bytes after a control batch's 61-byte header): ControlAbort or
// ControlCommit; ok is false when the bytes do not hold a control key.
func ControlType(recs []byte) (typ int16, ok bool) {
	_, n := binary.Varint(recs) // record length
	if n <= 0 || len(recs) < n+1 {
		return 0, false
	}
	p := recs[n+1:] // attributes int8
	for range 2 {   // timestampDelta, offsetDelta
		_, n = binary.Varint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
	}
	klen, n := binary.Varint(p)
	if n <= 0 || klen < 4 || len(p) < n+4 {
		return 0, false
	}
	p = p[n:]
	return int16(binary.BigEndian.Uint16(p[2:])), true
}

// txnTrack accounts one batch of producer h.ProducerID about to be applied
// to the producer state: a transactional batch opens the producer's
// transaction, a control batch ends it and, for an ABORT that closes data
// on this partition, returns the index entry (ok). recs are the bytes after
// the header; leo is the log end offset after the batch.
func (l *Log) txnTrack(h BatchHeader, recs []byte, first, leo int64) (AbortedTxn, bool) {
	if l.txn.open == nil {
		l.txn.open = map[int64]struct{}{}
	}
	if !h.IsControl() {
		if h.IsTransactional() {
			l.txn.open[h.ProducerID] = struct{}{}
		}
		return AbortedTxn{}, false
	}
	delete(l.txn.open, h.ProducerID)
	e := l.producers[h.ProducerID]
	if e == nil || e.CurrentTxnFirstOffset < 0 {
		return AbortedTxn{}, false
	}
	if typ, ok := ControlType(recs); !ok || typ != ControlAbort {
		return AbortedTxn{}, false
	}
	lso := leo
	for pid := range l.txn.open {
		if o := l.producers[pid]; o != nil && o.CurrentTxnFirstOffset >= 0 {
			lso = min(lso, o.CurrentTxnFirstOffset)
		}
	}
	return AbortedTxn{ProducerID: h.ProducerID, FirstOffset: e.CurrentTxnFirstOffset, LastOffset: first, LastStableOffset: lso}, true
}

// txnAppend is Append's hook, called before the producer state is updated
// with the appended batch (records holds exactly one batch).
func (l *Log) txnAppend(h BatchHeader, records []byte, first, leo int64) {
	e, ok := l.txnTrack(h, records[min(len(records), BatchHeaderSize):], first, leo)
	if !ok {
		return
	}
	l.txn.aborted = append(l.txn.aborted, e)
	path := filepath.Join(l.dir, segmentFileName(l.active().base, txnIndexSuffix))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		_, err = f.Write(AppendTxnEntry(nil, e))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		l.markTxnUnsynced(path)
	}
	if err != nil {
		// The entry is in memory and is recovered from the log at the next
		// open; a failed index write does not fail the append.
		l.logger.Warn("cannot append to transaction index", "file", path, "err", err)
	}
}

// txnReplay is scanProducers' hook for a batch at pos of s, called before
// the producer state is updated with it.
func (l *Log) txnReplay(s *segment, pos int64, h BatchHeader) {
	var recs []byte
	if h.IsControl() {
		n := min(int64(32), h.Size()-BatchHeaderSize)
		if n > 0 {
			recs = make([]byte, n)
			if err := readFull(s.log, recs, pos+BatchHeaderSize); err != nil {
				recs = nil
			}
		}
	}
	last := h.BaseOffset + int64(h.LastOffsetDelta)
	if e, ok := l.txnTrack(h, recs, h.BaseOffset, last+1); ok {
		l.txn.recovered = append(l.txn.recovered, e)
	}
}

// loadTxnIndexes runs at open after the producer state is restored: it
// loads the live segments' .txnindex files, merges what the replay found,
// drops entries past the log end and rewrites the files that changed.
func (l *Log) loadTxnIndexes() error {
	l.txn.open = map[int64]struct{}{}
	for pid, e := range l.producers {
		if e.CurrentTxnFirstOffset >= 0 {
			l.txn.open[pid] = struct{}{}
		}
	}
	leo := l.LogEndOffset()
	byLast := map[int64]AbortedTxn{}
	fileSets := make([][]AbortedTxn, len(l.segs))
	for i, s := range l.segs {
		b, err := os.ReadFile(filepath.Join(l.dir, segmentFileName(s.base, txnIndexSuffix)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("cannot read transaction index of segment %d: %w", s.base, err)
		}
		ents, err := ParseTxnIndex(b)
		if err != nil {
			l.logger.Warn("rebuilding unreadable transaction index", "segment", s.base, "err", err)
		}
		fileSets[i] = ents
		for _, e := range ents {
			byLast[e.LastOffset] = e
		}
	}
	for _, e := range l.txn.recovered {
		byLast[e.LastOffset] = e
	}
	l.txn.recovered = nil
	l.txn.aborted = l.txn.aborted[:0]
	for _, e := range byLast {
		if e.LastOffset < leo && e.LastOffset >= l.segs[0].base {
			l.txn.aborted = append(l.txn.aborted, e)
		}
	}
	sort.Slice(l.txn.aborted, func(i, j int) bool { return l.txn.aborted[i].LastOffset < l.txn.aborted[j].LastOffset })
	for i, s := range l.segs {
		var want []AbortedTxn
		for _, e := range l.txn.aborted {
			if l.segmentIndex(e.LastOffset) == i {
				want = append(want, e)
			}
		}
		if slices.Equal(want, fileSets[i]) {
			continue
		}
		path := filepath.Join(l.dir, segmentFileName(s.base, txnIndexSuffix))
		var buf []byte
		for _, e := range want {
			buf = AppendTxnEntry(buf, e)
		}
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			return fmt.Errorf("cannot rewrite transaction index %q: %w", path, err)
		}
		l.markTxnUnsynced(path)
	}
	return nil
}

// LastStableOffset is the first offset of the oldest open transaction, or
// the log end offset when no transaction is open (KIP-98).
func (l *Log) LastStableOffset() int64 {
	lso := l.LogEndOffset()
	for pid := range l.txn.open {
		e := l.producers[pid]
		if e == nil || e.CurrentTxnFirstOffset < 0 {
			delete(l.txn.open, pid)
			continue
		}
		lso = min(lso, e.CurrentTxnFirstOffset)
	}
	return lso
}

// AbortedTxns returns the aborted transactions that overlap [from, upTo):
// those whose marker is at or after from and whose first offset is below
// upTo, by marker offset. Entries below the log start offset are dropped.
func (l *Log) AbortedTxns(from, upTo int64) []AbortedTxn {
	a := l.txn.aborted
	if n := sort.Search(len(a), func(i int) bool { return a[i].LastOffset >= l.startOffset }); n > 0 {
		l.txn.aborted = append(a[:0], a[n:]...)
		a = l.txn.aborted
	}
	i := sort.Search(len(a), func(i int) bool { return a[i].LastOffset >= from })
	var out []AbortedTxn
	for ; i < len(a); i++ {
		if a[i].FirstOffset < upTo {
			out = append(out, a[i])
		}
	}
	return out
}
