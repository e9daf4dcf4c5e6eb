package nvme

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// completeSwaps finishes cleaner swaps that a crash interrupted, before
// Open lists the segments (Kafka's swap recovery). A <base>.log.swap
// exists only once every file of its group was written, fsynced and
// renamed to *.swap, so the swap is complete: the segments it replaces
// (bases in [base, end), end from <base>.cleanrange.swap) are removed and
// the swap files renamed to their final names; a missing index is rebuilt
// by the segment loader. Other *.swap and every *.cleaned file are
// leftovers of a pass that did not reach its commit point; listDir
// deletes them.
func (l *Log) completeSwaps() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("cannot list partition directory %q: %w", l.dir, err)
	}
	done := false
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), logSuffix+swapSuffix)
		if !ok || len(stem) != 20 {
			continue
		}
		base, err := strconv.ParseInt(stem, 10, 64)
		if err != nil || base < 0 {
			continue
		}
		end, err := l.swapEnd(base)
		if err != nil {
			return err
		}
		for _, e2 := range entries {
			name := e2.Name()
			for _, sfx := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				st, ok := strings.CutSuffix(name, sfx)
				if !ok || len(st) != 20 {
					continue
				}
				if b, err := strconv.ParseInt(st, 10, 64); err == nil && b >= base && b < end {
					if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return fmt.Errorf("cannot remove %q replaced by a cleaner swap: %w", name, err)
					}
				}
			}
		}
		for _, sfx := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} {
			from := filepath.Join(l.dir, segmentFileName(base, sfx)+swapSuffix)
			if err := os.Rename(from, strings.TrimSuffix(from, swapSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cannot complete cleaner swap %q: %w", from, err)
			}
		}
		os.Remove(filepath.Join(l.dir, segmentFileName(base, cleanRangeSuffix)+swapSuffix))
		l.logger.Info("completed interrupted cleaner swap", "baseOffset", base, "replacedUpTo", end)
		done = true
	}
	if done {
		return syncDir(l.dir)
	}
	return nil
}

// swapEnd reads the end of the range a swap replaces; without the range
// file it takes the offset after the swap segment's last batch.
func (l *Log) swapEnd(base int64) (int64, error) {
	b, err := os.ReadFile(filepath.Join(l.dir, segmentFileName(base, cleanRangeSuffix)+swapSuffix))
	if err == nil {
		if end, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && end > base {
			return end, nil
		}
	}
	path := filepath.Join(l.dir, segmentFileName(base, logSuffix)+swapSuffix)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cannot read cleaner swap %q: %w", path, err)
	}
	end := base + 1
	for p := 0; p+BatchHeaderSize <= len(data); {
		h := decodeHeader(data[p:])
		if h.BatchLength < minBatchLength || int64(p)+h.Size() > int64(len(data)) {
			break
		}
		end = max(end, h.BaseOffset+int64(int32(binary.BigEndian.Uint32(data[p+offLastOffsetDelta:])))+1)
		p += int(h.Size())
	}
	return end, nil
}
