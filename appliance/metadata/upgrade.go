package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// Upgrade of a metadata log written with JSON records (before
// cluster/records). A JSON record is recognised by its first byte, '{';
// a binary record starts with its frame version, 1. On finding one, the
// log is rewritten once, batch for batch and record for record (so every
// offset stays), as binary records:
//
//  1. the new log is written in <dir>.upgrade and fsynced, with the
//     directory;
//  2. <dir> is renamed <dir>.json, then <dir>.upgrade is renamed <dir>,
//     the parent fsynced after each;
//  3. <dir>.json is removed.
//
// recoverUpgrade, run before every open, finishes or undoes an upgrade a
// crash interrupted: without <dir> the JSON log in <dir>.json goes back
// (and is upgraded again); with both, <dir>.json is removed; a leftover
// <dir>.upgrade is always removed. The data directory stays startable at
// every step.

// errJSONMetadata is returned by the replay on a JSON record: the log
// needs upgradeMetadataLog.
var errJSONMetadata = errors.New("metadata log holds JSON records")

const (
	upgradeSuffix   = ".upgrade"
	jsonSaveSuffix  = ".json"
	jsonRecordStart = '{'
)

// decodeLogRecord decodes one record value of the metadata log.
func decodeLogRecord(v []byte) (records.Record, error) {
	if len(v) > 0 && v[0] == jsonRecordStart {
		return nil, errJSONMetadata
	}
	return records.Decode(v)
}

// recoverUpgrade puts a metadata log directory left by an interrupted
// upgrade back into one piece.
func recoverUpgrade(dir string) error {
	parent := filepath.Dir(dir)
	if err := os.RemoveAll(dir + upgradeSuffix); err != nil {
		return fmt.Errorf("cannot remove unfinished metadata log upgrade %q: %w", dir+upgradeSuffix, err)
	}
	saved := dir + jsonSaveSuffix
	if _, err := os.Stat(saved); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(saved, dir); err != nil {
			return fmt.Errorf("cannot restore metadata log %q from %q: %w", dir, saved, err)
		}
		return syncDir(parent)
	}
	if err := os.RemoveAll(saved); err != nil {
		return fmt.Errorf("cannot remove upgraded JSON metadata log %q: %w", saved, err)
	}
	return syncDir(parent)
}

// upgradeMetadataLog rewrites the JSON metadata log in dir, opened as old,
// as binary records (see the file comment). It closes old.
func (m *Log) upgradeMetadataLog(old *nvme.Log) error {
	dir := m.dir
	oldOpen := true
	defer func() {
		if oldOpen {
			old.Close()
		}
	}()
	tmp := dir + upgradeSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("cannot remove %q: %w", tmp, err)
	}
	nl, err := nvme.Open(tmp, nvme.Options{Logger: m.logger, RetentionMs: -1, RetentionBytes: -1, SegmentMs: -1})
	if err != nil {
		return fmt.Errorf("cannot create upgraded metadata log: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			nl.Close()
		}
	}()
	if start := old.LogStartOffset(); start != 0 {
		return fmt.Errorf("cannot upgrade metadata log %q: it starts at offset %d, not 0", dir, start)
	}
	converted := 0
	var batch []kmsg.Record
	batchBase := int64(-1)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := nl.Append(nvme.AppendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, batch), nvme.AppendOptions{MaxMessageBytes: 1 << 30}); err != nil {
			return fmt.Errorf("cannot append to upgraded metadata log: %w", err)
		}
		batch = batch[:0]
		return nil
	}
	end := old.LogEndOffset()
	for off := int64(0); off < end; {
		res, err := old.Read(off, 8<<20, end, true)
		if err != nil {
			return fmt.Errorf("cannot read metadata log at offset %d: %w", off, err)
		}
		if len(res.Chunks) == 0 {
			break
		}
		last := int64(-1)
		for _, c := range res.Chunks {
			buf := make([]byte, c.Len)
			if _, err := unix.Pread(int(c.File.Fd()), buf, c.Pos); err != nil {
				return fmt.Errorf("cannot read metadata log: %w", err)
			}
			err := nvme.ReadBatches(buf, func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
				if b.FirstOffset != batchBase {
					if err := flush(); err != nil {
						return err
					}
					batchBase = b.FirstOffset
				}
				v := r.Value
				if len(v) > 0 && v[0] == jsonRecordStart {
					var mr Record
					if err := json.Unmarshal(v, &mr); err != nil {
						return fmt.Errorf("cannot decode JSON metadata record at offset %d: %w", offset, err)
					}
					br, err := ToBinary(mr)
					if err != nil {
						return fmt.Errorf("cannot convert JSON metadata record at offset %d: %w", offset, err)
					}
					v = br.AppendTo(nil)
					converted++
				}
				batch = append(batch, kmsg.Record{Value: v})
				last = offset
				return nil
			})
			if err != nil {
				return err
			}
		}
		if last < 0 {
			break
		}
		off = last + 1
	}
	if err := flush(); err != nil {
		return err
	}
	if got := nl.LogEndOffset(); got != end {
		return fmt.Errorf("cannot upgrade metadata log %q: the rewrite ends at offset %d, the log at %d", dir, got, end)
	}
	f, _ := nl.SyncTarget()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("cannot sync upgraded metadata log: %w", err)
	}
	closed = true
	if err := nl.Close(); err != nil {
		return fmt.Errorf("cannot close upgraded metadata log: %w", err)
	}
	if err := syncTree(tmp); err != nil {
		return fmt.Errorf("cannot sync upgraded metadata log: %w", err)
	}
	oldOpen = false
	if err := old.Close(); err != nil {
		return fmt.Errorf("cannot close JSON metadata log: %w", err)
	}
	parent := filepath.Dir(dir)
	saved := dir + jsonSaveSuffix
	if err := os.Rename(dir, saved); err != nil {
		return fmt.Errorf("cannot move JSON metadata log aside: %w", err)
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("cannot move upgraded metadata log in place: %w", err)
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	if err := os.RemoveAll(saved); err != nil {
		return fmt.Errorf("cannot remove JSON metadata log %q: %w", saved, err)
	}
	m.logger.Info("upgraded metadata log from JSON to binary records", "dir", dir, "records", end, "converted", converted)
	return syncDir(parent)
}

// syncTree fsyncs every file in dir (one level) and dir itself.
func syncTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return syncDir(dir)
}
