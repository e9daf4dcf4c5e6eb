package metadata

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// Topic is the log that holds the metadata records (KRaft's name).
const Topic = "__cluster_metadata"

// Log stores metadata records as record batches in
// <log.dirs>/__cluster_metadata-0, one cluster/records binary record per
// Kafka record (a log of JSON records, as written before, is upgraded
// once: Log.upgradeMetadataLog), with snapshots of the image beside it
// (writeSnapshot, Log.loadLatestSnapshot). It is
// the log of a node without controller.quorum.voters: one node appends,
// fdatasyncs and applies. With voters, appliance/controller keeps the
// Raft log and snapshots in the same directory instead. Not safe for concurrent use: the controller mutex
// serialises it.
type Log struct {
	log    *nvme.Log
	dir    string
	logger *slog.Logger
	// broken is why the log takes no commits: a failed append or
	// fdatasync, until a reopen (commit) finds the log as the image says.
	broken error
	// offline mirrors broken != nil for the metrics scrape.
	offline atomic.Bool
	// undo is a change the controller could not write while the log was
	// broken, to append first when it is back: the removal of a topic
	// whose creation is in the log but whose partitions did not open
	// (appliance's createTopic). after is the offset of the log's last record then.
	undo *metadataUndo
	// snapshotBytes is metadata.log.max.record.bytes.between.snapshots;
	// sinceSnapshot counts the record bytes appended or replayed after
	// the latest snapshot.
	snapshotBytes int64
	sinceSnapshot int64
	// checks are the concepts' checks of the images the log builds.
	checks Checks
}

// LogOptions configures OpenLog.
type LogOptions struct {
	// SnapshotBytes is metadata.log.max.record.bytes.between.snapshots
	// (default 20 MiB, Kafka's).
	SnapshotBytes int64
	// Checks validate other concepts' records in the images the log
	// builds (NewImage); nil: none.
	Checks Checks
}

// defaultMetadataSnapshotBytes is Kafka's default of
// metadata.log.max.record.bytes.between.snapshots.
const defaultMetadataSnapshotBytes = 20 << 20

type metadataUndo struct {
	after int64
	recs  []Record
}

// ErrStorage marks a commit that failed on the metadata log's storage
// (appliance answers KAFKA_STORAGE_ERROR), as opposed to a change that
// does not apply.
var ErrStorage = errors.New("metadata log storage")

// OpenLog opens (creating, upgrading or recovering) the
// metadata log under logDir and returns it with its image.
func OpenLog(logDir string, logger *slog.Logger, o LogOptions) (*Log, *Image, error) {
	if o.SnapshotBytes <= 0 {
		o.SnapshotBytes = defaultMetadataSnapshotBytes
	}
	m := &Log{checks: o.Checks, dir: filepath.Join(logDir, Topic+"-0"), logger: logger, snapshotBytes: o.SnapshotBytes}
	im, err := m.open()
	if err != nil {
		return nil, nil, err
	}
	return m, im, nil
}

// open opens the log and rebuilds its image: the latest snapshot that
// reads whole, then the records after it. A log of JSON records is
// upgraded first.
func (m *Log) open() (*Image, error) {
	if err := recoverUpgrade(m.dir); err != nil {
		return nil, err
	}
	for upgraded := false; ; upgraded = true {
		l, err := nvme.Open(m.dir, nvme.Options{Logger: m.logger, RetentionMs: -1, RetentionBytes: -1, SegmentMs: -1})
		if err != nil {
			return nil, fmt.Errorf("cannot open metadata log: %w", err)
		}
		m.log = l
		im, err := m.load()
		if errors.Is(err, errJSONMetadata) && !upgraded {
			m.log = nil
			if err := m.upgradeMetadataLog(l); err != nil {
				return nil, fmt.Errorf("cannot upgrade metadata log: %w", err)
			}
			continue
		}
		if err != nil {
			l.Close()
			m.log = nil
			return nil, err
		}
		return im, nil
	}
}

// load rebuilds the image from the latest snapshot and the log after
// it, or from the whole log.
func (m *Log) load() (*Image, error) {
	m.sinceSnapshot = 0
	im := NewImage(m.checks)
	if s := m.loadLatestSnapshot(m.log.LogEndOffset()); s != nil {
		im = s
	}
	return m.replay(im)
}

// repair reopens a log that a failed write took offline (a full disk,
// since freed): recovery cuts a torn batch, and the log is used again when
// it then ends where im does, or where the pending undo was due (which it
// then appends). It returns the image the next batch applies to: im, or
// after an undo im moved to the log's end offset. A batch
// that was written whole but not acknowledged (its fdatasync failed) is
// left for the next start to apply, as a crash would; until then the log
// stays offline.
func (m *Log) repair(im *Image) (*Image, error) {
	if m.log != nil {
		_ = m.log.Close() // offline: its error is the one in broken
		m.log = nil
	}
	got, err := m.open()
	if err != nil {
		return nil, err
	}
	base := im
	switch {
	case m.undo != nil && got.Offset == m.undo.after:
		if _, err = m.append(got, m.undo.recs); err != nil {
			m.log.Close()
			m.log = nil
			return nil, err
		}
		m.undo = nil
		// The log now holds what im holds: im goes on at the log's end
		// (its topic images are the ones in force, so publishing the next
		// change diffs against them, not against equal copies).
		moved := *im
		moved.Offset = m.log.LogEndOffset() - 1
		base = &moved
	case got.Offset != im.Offset:
		m.log.Close()
		m.log = nil
		return nil, fmt.Errorf("metadata log ends at offset %d after reopening, the metadata in force at %d: a change that was not acknowledged is on disk; restart the broker to apply it", got.Offset, im.Offset)
	}
	m.logger.Warn("metadata log back online after a failed write", "dir", m.dir, "offset", base.Offset, "was", m.broken.Error())
	m.broken = nil
	m.offline.Store(false)
	return base, nil
}

// DeferUndo records recs to append once the broken log is repaired, when
// it still ends at after (see undo).
func (m *Log) DeferUndo(after int64, recs []Record) {
	m.undo = &metadataUndo{after: after, recs: recs}
}

// fail takes the log offline after a failed append or fdatasync.
func (m *Log) fail(err error) error {
	if m.broken == nil {
		m.logger.Error("metadata log offline: topic, config, ACL and quota changes fail until a write succeeds again", "dir", m.dir, "err", err)
	}
	m.broken = err
	m.offline.Store(true)
	return fmt.Errorf("%w: %w", ErrStorage, err)
}

// replay applies the records after im.Offset to im, a batch (one atomic
// change) at a time.
func (m *Log) replay(im *Image) (*Image, error) { return m.ReplayBatches(im, nil) }

// ReplayBatches is replay that also hands each batch, as applied, to fn
// (when not nil) with the offset of its last record.
func (m *Log) ReplayBatches(im *Image, fn func(last int64, recs []Record) error) (*Image, error) {
	off := max(im.Offset+1, m.log.LogStartOffset())
	end := m.log.LogEndOffset()
	for off < end {
		res, err := m.log.Read(off, 8<<20, end, true)
		if err != nil {
			return nil, fmt.Errorf("cannot read metadata log at offset %d: %w", off, err)
		}
		if len(res.Chunks) == 0 {
			break
		}
		last := int64(-1)
		for _, c := range res.Chunks {
			buf := make([]byte, c.Len)
			if _, err := unix.Pread(int(c.File.Fd()), buf, c.Pos); err != nil {
				return nil, fmt.Errorf("cannot read metadata log: %w", err)
			}
			m.sinceSnapshot += int64(len(buf))
			var batch []records.Record
			batchBase := int64(-1)
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				pl := NewConverter(im)
				recs := make([]Record, 0, len(batch))
				for _, rec := range batch {
					if recs, err = pl.Convert(recs, rec); err != nil {
						return fmt.Errorf("cannot replay metadata batch ending at offset %d: %w", last, err)
					}
				}
				next, err := im.Apply(last, recs)
				if err != nil {
					return err
				}
				if fn != nil {
					if err := fn(last, recs); err != nil {
						return err
					}
				}
				im, batch = next, batch[:0]
				return nil
			}
			err := nvme.ReadBatches(buf, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
				if b.FirstOffset != batchBase {
					if err := flush(); err != nil {
						return err
					}
					batchBase = b.FirstOffset
				}
				rec, err := decodeLogRecord(r.Value)
				if err != nil {
					return fmt.Errorf("cannot decode metadata record at offset %d: %w", offset, err)
				}
				batch = append(batch, rec)
				last = offset
				return nil
			})
			if err == nil {
				err = flush()
			}
			if err != nil {
				return nil, err
			}
		}
		if last < 0 {
			break
		}
		off = last + 1
	}
	return im, nil
}

// Commit durably appends recs as one batch and returns the image with them applied.
func (m *Log) Commit(im *Image, recs []Record) (*Image, error) {
	if len(recs) == 0 {
		return im, nil
	}
	// Check they apply before writing them.
	if _, err := im.Apply(im.Offset+int64(len(recs)), recs); err != nil {
		return nil, err
	}
	if m.broken != nil {
		base, err := m.repair(im)
		if err != nil {
			return nil, fmt.Errorf("%w: metadata log offline (%v): %v", ErrStorage, m.broken, err)
		}
		im = base
	}
	return m.append(im, recs)
}

// append writes recs as one batch, fdatasyncs it and applies it to im; a
// failure takes the log offline (fail).
func (m *Log) append(im *Image, recs []Record) (*Image, error) {
	krecs := make([]kmsg.Record, len(recs))
	for i, r := range recs {
		br, err := ToBinary(r)
		if err != nil {
			return nil, err
		}
		krecs[i] = kmsg.Record{Value: br.AppendTo(nil)}
	}
	batch := nvme.AppendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, krecs)
	info, err := m.log.Append(batch, nvme.AppendOptions{MaxMessageBytes: 1 << 30})
	if err != nil {
		return nil, m.fail(fmt.Errorf("cannot append to metadata log: %w", err))
	}
	f, _ := m.log.SyncTarget()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return nil, m.fail(fmt.Errorf("cannot sync metadata log: %w", err))
	}
	next, err := im.Apply(info.LastOffset, recs)
	if err != nil {
		return nil, err
	}
	m.sinceSnapshot += int64(len(batch))
	if m.sinceSnapshot >= m.snapshotBytes {
		// A snapshot only shortens the next start: a failure is logged
		// and retried after the next change.
		if path, err := writeSnapshot(m.dir, next); err != nil {
			m.logger.Warn("cannot write metadata snapshot", "dir", m.dir, "offset", next.Offset, "err", err)
		} else {
			m.sinceSnapshot = 0
			m.logger.Info("wrote metadata snapshot", "file", path, "offset", next.Offset)
		}
	}
	return next, nil
}

// Offline reports whether a failed write took the log offline (until a
// commit repairs it). Safe for concurrent use.
func (m *Log) Offline() bool { return m.offline.Load() }

// Close closes the log.
func (m *Log) Close() error {
	if m.log == nil {
		return nil
	}
	if m.broken != nil {
		_ = m.log.Close()
		return nil // logged when it broke; the next start recovers it
	}
	return m.log.Close()
}
