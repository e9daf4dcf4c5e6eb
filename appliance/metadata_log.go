package appliance

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// metadataTopic is the log that holds the metadata records (KRaft's name).
const metadataTopic = "__cluster_metadata"

// metadataLog stores metadata records as record batches in
// <log.dirs>/__cluster_metadata-0, one JSON record per Kafka record. It is
// the seam that the Raft quorum will replicate: today one node appends,
// fdatasyncs and applies. Not safe for concurrent use: the controller mutex
// serialises it.
type metadataLog struct {
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
	// (createTopic). after is the offset of the log's last record then.
	undo *metadataUndo
}

type metadataUndo struct {
	after int64
	recs  []MetadataRecord
}

// errMetadataStorage marks a commit that failed on the metadata log's
// storage (answered KAFKA_STORAGE_ERROR, see commitErr), as opposed to a
// change that does not apply.
var errMetadataStorage = errors.New("metadata log storage")

func openMetadataLog(logDir string, logger *slog.Logger) (*metadataLog, *Image, error) {
	m := &metadataLog{dir: filepath.Join(logDir, metadataTopic+"-0"), logger: logger}
	im, err := m.open()
	if err != nil {
		return nil, nil, err
	}
	return m, im, nil
}

// open opens the log and replays it.
func (m *metadataLog) open() (*Image, error) {
	l, err := nvme.Open(m.dir, nvme.Options{Logger: m.logger, RetentionMs: -1, RetentionBytes: -1, SegmentMs: -1})
	if err != nil {
		return nil, fmt.Errorf("cannot open metadata log: %w", err)
	}
	m.log = l
	im, err := m.replay()
	if err != nil {
		l.Close()
		return nil, err
	}
	return im, nil
}

// repair reopens a log that a failed write took offline (a full disk,
// since freed): recovery cuts a torn batch, and the log is used again when
// it then ends where im does, or where the pending undo was due (which it
// then appends). It returns the image the next batch applies to: im, or
// after an undo im moved to the log's end offset. A batch
// that was written whole but not acknowledged (its fdatasync failed) is
// left for the next start to apply, as a crash would; until then the log
// stays offline.
func (m *metadataLog) repair(im *Image) (*Image, error) {
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
		// The log now holds what im holds: im goes on at the log's end.
		// (Not the replayed image: its partitions have fresh views, and
		// the open partitions publish to im's.)
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

// deferUndo records recs to append once the broken log is repaired, when
// it still ends at after (see undo).
func (m *metadataLog) deferUndo(after int64, recs []MetadataRecord) {
	m.undo = &metadataUndo{after: after, recs: recs}
}

// fail takes the log offline after a failed append or fdatasync.
func (m *metadataLog) fail(err error) error {
	if m.broken == nil {
		m.logger.Error("metadata log offline: topic, config, ACL and quota changes fail until a write succeeds again", "dir", m.dir, "err", err)
	}
	m.broken = err
	m.offline.Store(true)
	return fmt.Errorf("%w: %w", errMetadataStorage, err)
}

// replay applies every record in the log to an empty image.
func (m *metadataLog) replay() (*Image, error) {
	im := emptyImage()
	err := m.batches(func(last int64, recs []MetadataRecord) error {
		// A batch is one atomic change: apply it whole.
		next, err := im.Apply(last, recs)
		if err != nil {
			return err
		}
		im = next
		return nil
	})
	if err != nil {
		return nil, err
	}
	return im, nil
}

// batches calls fn with each committed batch of the log, in order, with
// the offset of its last record.
func (m *metadataLog) batches(fn func(last int64, recs []MetadataRecord) error) error {
	off := m.log.LogStartOffset()
	end := m.log.LogEndOffset()
	for off < end {
		res, err := m.log.Read(off, 8<<20, end, true)
		if err != nil {
			return fmt.Errorf("cannot read metadata log at offset %d: %w", off, err)
		}
		if len(res.Chunks) == 0 {
			break
		}
		for _, c := range res.Chunks {
			buf := make([]byte, c.Len)
			if _, err := unix.Pread(int(c.File.Fd()), buf, c.Pos); err != nil {
				return fmt.Errorf("cannot read metadata log: %w", err)
			}
			// A chunk holds whole batches; each batch is one change.
			var recs []MetadataRecord
			last, base := int64(-1), int64(-1)
			err := readBatches(buf, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
				if b.FirstOffset != base && len(recs) > 0 {
					if err := fn(last, recs); err != nil {
						return err
					}
					recs = nil
				}
				base = b.FirstOffset
				var mr MetadataRecord
				if err := json.Unmarshal(r.Value, &mr); err != nil {
					return fmt.Errorf("cannot decode metadata record at offset %d: %w", offset, err)
				}
				recs = append(recs, mr)
				last = offset
				return nil
			})
			if err != nil {
				return err
			}
			if last < 0 {
				continue
			}
			if err := fn(last, recs); err != nil {
				return err
			}
			off = last + 1
		}
	}
	return nil
}

// commit durably appends recs as one batch and returns the image with them applied.
func (m *metadataLog) commit(im *Image, recs []MetadataRecord) (*Image, error) {
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
			return nil, fmt.Errorf("%w: metadata log offline (%v): %v", errMetadataStorage, m.broken, err)
		}
		im = base
	}
	return m.append(im, recs)
}

// append writes recs as one batch, fdatasyncs it and applies it to im; a
// failure takes the log offline (fail).
func (m *metadataLog) append(im *Image, recs []MetadataRecord) (*Image, error) {
	krecs := make([]kmsg.Record, len(recs))
	for i, r := range recs {
		v, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("cannot encode metadata record: %w", err)
		}
		krecs[i] = kmsg.Record{Value: v}
	}
	batch := appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, krecs)
	info, err := m.log.Append(batch, nvme.AppendOptions{MaxMessageBytes: 1 << 30})
	if err != nil {
		return nil, m.fail(fmt.Errorf("cannot append to metadata log: %w", err))
	}
	f, _ := m.log.SyncTarget()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return nil, m.fail(fmt.Errorf("cannot sync metadata log: %w", err))
	}
	return im.Apply(info.LastOffset, recs)
}

// commitErr gives a failed commit its Kafka error code:
// KAFKA_STORAGE_ERROR when the metadata log's storage failed, else
// UNKNOWN_SERVER_ERROR.
func commitErr(err error) error {
	if errors.Is(err, errMetadataStorage) {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
}

func (m *metadataLog) close() error {
	if m.log == nil {
		return nil
	}
	if m.broken != nil {
		_ = m.log.Close()
		return nil // logged when it broke; the next start recovers it
	}
	return m.log.Close()
}
