package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata snapshots: every metadata.log.max.record.bytes.between.snapshots
// bytes of records (Kafka's name and default, 20 MiB), the image is
// written to <metadata log dir>/<20-digit end offset>-<10-digit epoch>.checkpoint
// (Kafka's snapshot file name; the end offset is exclusive, the epoch is 0
// until the Raft quorum lands). The file is record batches, as Kafka's
// snapshots are, holding the records that rebuild the image (ImageRecords),
// and ends with a batch of one NoOpRecord: the footer, without which the
// file is torn. It is written to <name>.part, fsynced, renamed and the
// directory fsynced. Startup loads the newest snapshot that reads whole and
// replays the log after it; a snapshot that does not read (torn, bad CRC,
// a record that does not decode or apply) is skipped for the next older
// one, and without any the whole log is replayed.

const (
	snapshotSuffix = ".checkpoint"
	// snapshotsKept is how many snapshots stay after a new one is
	// written: the new one and the one before, the fallback should the
	// newest not read.
	snapshotsKept = 2
	// snapshotBatchRecords is the most records in one snapshot batch.
	snapshotBatchRecords = 1000
)

// snapshotName is Kafka's snapshot file name for end offset end and epoch.
func snapshotName(end int64, epoch int32) string {
	return fmt.Sprintf("%020d-%010d%s", end, epoch, snapshotSuffix)
}

// parseSnapshotName returns the end offset of a snapshot file name.
func parseSnapshotName(name string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, snapshotSuffix)
	if !ok || len(stem) != 31 || stem[20] != '-' {
		return 0, false
	}
	end, err := strconv.ParseInt(stem[:20], 10, 64)
	if err != nil || end < 0 {
		return 0, false
	}
	if _, err := strconv.ParseInt(stem[21:], 10, 32); err != nil {
		return 0, false
	}
	return end, true
}

// snapshotFile is one snapshot in the metadata log directory.
type snapshotFile struct {
	name string
	end  int64 // exclusive end offset
}

// listSnapshotFiles returns the snapshots in dir, newest first. Leftover
// .part files of an interrupted write are removed.
func listSnapshotFiles(dir string) ([]snapshotFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list metadata snapshots in %q: %w", dir, err)
	}
	var out []snapshotFile
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), snapshotSuffix+".part") {
			_ = os.Remove(filepath.Join(dir, e.Name())) // an interrupted write; the next snapshot replaces it
			continue
		}
		if end, ok := parseSnapshotName(e.Name()); ok && !e.IsDir() {
			out = append(out, snapshotFile{name: e.Name(), end: end})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].end != out[j].end {
			return out[i].end > out[j].end
		}
		return out[i].name > out[j].name
	})
	return out, nil
}

// listSnapshots returns the snapshot end offsets in dir, newest first.
func listSnapshots(dir string) ([]int64, error) {
	files, err := listSnapshotFiles(dir)
	ends := make([]int64, len(files))
	for i, f := range files {
		ends[i] = f.end
	}
	return ends, err
}

// encodeSnapshot returns the snapshot file's bytes for im.
func encodeSnapshot(im *Image) ([]byte, error) {
	var buf []byte
	var batch []kmsg.Record
	base := int64(0)
	ts := time.Now().UnixMilli()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		start := len(buf)
		buf = nvme.AppendBatch(buf, ts, 0, -1, -1, -1, batch)
		binary.BigEndian.PutUint64(buf[start:], uint64(base)) // baseOffset is outside the CRC
		base += int64(len(batch))
		batch = batch[:0]
	}
	for _, r := range ImageRecords(im) {
		br, err := ToBinary(r)
		if err != nil {
			return nil, err
		}
		batch = append(batch, kmsg.Record{Value: br.AppendTo(nil)})
		if len(batch) == snapshotBatchRecords {
			flush()
		}
	}
	flush()
	batch = append(batch, kmsg.Record{Value: (&records.NoOpRecord{}).AppendTo(nil)})
	flush()
	return buf, nil
}

// writeSnapshot writes im as the snapshot ending at im.Offset+1 and
// removes all but the newest snapshotsKept snapshots.
func writeSnapshot(dir string, im *Image) (string, error) {
	data, err := encodeSnapshot(im)
	if err != nil {
		return "", fmt.Errorf("cannot encode metadata snapshot at offset %d: %w", im.Offset, err)
	}
	path := filepath.Join(dir, snapshotName(im.Offset+1, 0))
	if err := writeFileSynced(path, data); err != nil {
		return "", fmt.Errorf("cannot write metadata snapshot: %w", err)
	}
	files, err := listSnapshotFiles(dir)
	if err != nil {
		return path, err
	}
	for i, f := range files {
		if i >= snapshotsKept {
			_ = os.Remove(filepath.Join(dir, f.name)) // an old snapshot; it is only a fallback
		}
	}
	return path, nil
}

// writeFileSynced writes data to path atomically: a .part file, fsync,
// rename, fsync of the directory.
func writeFileSynced(path string, data []byte) error {
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a directory, making renames and creations in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// errTornSnapshot marks a snapshot file that does not end with its footer.
var errTornSnapshot = errors.New("metadata snapshot torn")

// readSnapshot loads the snapshot file at path into an image at offset
// end-1.
func readSnapshot(path string, end int64, c Checks) (*Image, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeSnapshot(raw, end, c)
}

// decodeSnapshot decodes a snapshot file's bytes (see readSnapshot)
// into an image built with checks c.
func decodeSnapshot(raw []byte, end int64, c Checks) (*Image, error) {
	if err := checkBatchCRCs(raw); err != nil {
		return nil, err
	}
	var recs []records.Record
	var lastBatch int64 = -1
	var inLast int
	err := nvme.ReadBatches(raw, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
		rec, err := records.Decode(r.Value)
		if err != nil {
			return fmt.Errorf("cannot decode snapshot record %d: %w", offset, err)
		}
		if b.FirstOffset != lastBatch {
			lastBatch, inLast = b.FirstOffset, 0
		}
		inLast++
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || inLast != 1 || recs[len(recs)-1].APIKey() != records.NoOpKey {
		return nil, errTornSnapshot
	}
	pl := NewConverter(NewImage(c))
	var mrecs []Record
	for _, rec := range recs[:len(recs)-1] {
		if mrecs, err = pl.Convert(mrecs, rec); err != nil {
			return nil, err
		}
	}
	return NewImage(c).Apply(end-1, mrecs)
}

// checkBatchCRCs checks that raw is whole record batches with good CRCs.
func checkBatchCRCs(raw []byte) error {
	for off := 0; off < len(raw); {
		if len(raw)-off < 61 {
			return fmt.Errorf("%w: %d bytes after the last batch", errTornSnapshot, len(raw)-off)
		}
		n := int(int32(binary.BigEndian.Uint32(raw[off+8:]))) + 12
		if n < 61 || n > len(raw)-off {
			return fmt.Errorf("%w: batch at byte %d of length %d with %d bytes left", errTornSnapshot, off, n, len(raw)-off)
		}
		if got, want := nvme.CRC32C(raw[off+21:off+n]), binary.BigEndian.Uint32(raw[off+17:]); got != want {
			return fmt.Errorf("metadata snapshot batch at byte %d: CRC %08x, want %08x", off, got, want)
		}
		off += n
	}
	return nil
}

// loadLatestSnapshot returns the image of the newest snapshot in dir that
// reads whole and ends at or before logEnd, or nil when there is none.
func (m *Log) loadLatestSnapshot(logEnd int64) *Image {
	files, err := listSnapshotFiles(m.dir)
	if err != nil {
		m.logger.Warn("cannot list metadata snapshots, replaying the whole metadata log", "err", err)
		return nil
	}
	for _, f := range files {
		end, path := f.end, filepath.Join(m.dir, f.name)
		if end > logEnd {
			m.logger.Warn("metadata snapshot is past the end of the metadata log, skipping it", "snapshot", path, "log_end", logEnd)
			continue
		}
		im, err := readSnapshot(path, end, m.checks)
		if err != nil {
			m.logger.Warn("cannot load metadata snapshot, trying an older one", "snapshot", path, "err", err)
			continue
		}
		return im
	}
	return nil
}
