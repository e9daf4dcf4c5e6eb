package appliance

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
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
	log *nvme.Log
}

func openMetadataLog(logDir string, logger *slog.Logger) (*metadataLog, *Image, error) {
	dir := filepath.Join(logDir, metadataTopic+"-0")
	l, err := nvme.Open(dir, nvme.Options{Logger: logger, RetentionMs: -1, RetentionBytes: -1, SegmentMs: -1})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open metadata log: %w", err)
	}
	m := &metadataLog{log: l}
	im, err := m.replay()
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return m, im, nil
}

// replay applies every record in the log to an empty image.
func (m *metadataLog) replay() (*Image, error) {
	im := emptyImage()
	off := m.log.LogStartOffset()
	end := m.log.LogEndOffset()
	for off < end {
		res, err := m.log.Read(off, 8<<20, end, true)
		if err != nil {
			return nil, fmt.Errorf("cannot read metadata log at offset %d: %w", off, err)
		}
		if len(res.Chunks) == 0 {
			break
		}
		for _, c := range res.Chunks {
			buf := make([]byte, c.Len)
			if _, err := unix.Pread(int(c.File.Fd()), buf, c.Pos); err != nil {
				return nil, fmt.Errorf("cannot read metadata log: %w", err)
			}
			var recs []MetadataRecord
			last := int64(-1)
			err := readBatches(buf, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
				var mr MetadataRecord
				if err := json.Unmarshal(r.Value, &mr); err != nil {
					return fmt.Errorf("cannot decode metadata record at offset %d: %w", offset, err)
				}
				recs = append(recs, mr)
				last = offset
				return nil
			})
			if err != nil {
				return nil, err
			}
			if last < 0 {
				continue
			}
			// A batch is one atomic change: apply it whole.
			im, err = im.Apply(last, recs)
			if err != nil {
				return nil, err
			}
			off = last + 1
		}
	}
	return im, nil
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
		return nil, fmt.Errorf("cannot append to metadata log: %w", err)
	}
	f, _ := m.log.SyncTarget()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return nil, fmt.Errorf("cannot sync metadata log: %w", err)
	}
	return im.Apply(info.LastOffset, recs)
}

func (m *metadataLog) close() error { return m.log.Close() }
