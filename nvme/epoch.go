package nvme

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// EpochCheckpointFile is the leader-epoch cache file in a partition
// directory. Format (Kafka's LeaderEpochCheckpointFile): a line "0" (version),
// a line with the entry count, then one "epoch startOffset" line per entry.
const EpochCheckpointFile = "leader-epoch-checkpoint"

// loadEpochs reads the checkpoint and drops entries that the recovered log
// no longer covers.
func (l *Log) loadEpochs() error {
	path := filepath.Join(l.dir, EpochCheckpointFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %q: %w", path, err)
	}
	if l.epochs, err = ParseEpochCheckpoint(b); err != nil {
		return fmt.Errorf("cannot parse %q: %w", path, err)
	}
	changed := l.truncateEpochsFromEnd(l.LogEndOffset())
	if l.truncateEpochsFromStart(l.startOffset) || changed {
		return l.persistEpochs()
	}
	return nil
}

// ParseEpochCheckpoint decodes leader-epoch-checkpoint content. Entries must
// have increasing epochs and non-decreasing start offsets.
func ParseEpochCheckpoint(b []byte) ([]EpochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := line()
	if !ok || v != "0" {
		return nil, fmt.Errorf("version line %q, want %q", v, "0")
	}
	c, ok := line()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("bad entry count line %q", c)
	}
	es := make([]EpochEntry, 0, min(n, 1024))
	for i := 0; i < n; i++ {
		s, ok := line()
		f := strings.Fields(s)
		if !ok || len(f) != 2 {
			return nil, fmt.Errorf("entry %d of %d: bad line %q", i, n, s)
		}
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || off < 0 {
			return nil, fmt.Errorf("entry %d of %d: bad line %q", i, n, s)
		}
		e := EpochEntry{Epoch: int32(epoch), StartOffset: off}
		if k := len(es); k > 0 && (e.Epoch <= es[k-1].Epoch || e.StartOffset < es[k-1].StartOffset) {
			return nil, fmt.Errorf("entry %d (%d %d) does not follow (%d %d)", i, e.Epoch, e.StartOffset, es[k-1].Epoch, es[k-1].StartOffset)
		}
		es = append(es, e)
	}
	if s, ok := line(); ok && s != "" {
		return nil, fmt.Errorf("unexpected line %q after %d entries", s, n)
	}
	return es, nil
}

// AppendEpochCheckpoint appends the checkpoint text for es to dst.
func AppendEpochCheckpoint(dst []byte, es []EpochEntry) []byte {
	dst = append(dst, "0\n"...)
	dst = strconv.AppendInt(dst, int64(len(es)), 10)
	dst = append(dst, '\n')
	for _, e := range es {
		dst = strconv.AppendInt(dst, int64(e.Epoch), 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, e.StartOffset, 10)
		dst = append(dst, '\n')
	}
	return dst
}

func (l *Log) persistEpochs() error {
	if err := writeFileAtomic(l.dir, EpochCheckpointFile, AppendEpochCheckpoint(nil, l.epochs)); err != nil {
		return fmt.Errorf("cannot write leader epoch checkpoint: %w", err)
	}
	return nil
}

// LeaderEpochs returns a copy of the leader-epoch cache, oldest first.
func (l *Log) LeaderEpochs() []EpochEntry { return slices.Clone(l.epochs) }

// AssignEpoch records that leader epoch epoch starts at startOffset and
// persists the checkpoint (temporary file, fsync, rename). As in Kafka's
// LeaderEpochFileCache.assign: an epoch already last with a start offset at
// or below startOffset changes nothing; otherwise entries with an epoch >=
// epoch or a start offset >= startOffset are removed and the new entry is
// appended, so the usual case (a greater epoch) simply appends. Errors: a
// negative epoch or offset, ErrLogClosed, checkpoint I/O.
func (l *Log) AssignEpoch(epoch int32, startOffset int64) error {
	if err := l.usable(); err != nil {
		return err
	}
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("cannot assign leader epoch %d at offset %d: negative", epoch, startOffset)
	}
	if n := len(l.epochs); n > 0 && l.epochs[n-1].Epoch == epoch && l.epochs[n-1].StartOffset <= startOffset {
		return nil
	}
	l.epochs = slices.DeleteFunc(l.epochs, func(e EpochEntry) bool {
		return e.Epoch >= epoch || e.StartOffset >= startOffset
	})
	l.epochs = append(l.epochs, EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return l.persistEpochs()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279): for the
// latest epoch it returns (epoch, log end offset); otherwise the largest
// known epoch <= epoch and the start offset of the first epoch after it. An
// epoch below the first known one returns (epoch, start offset of the first
// entry), as Kafka does; an epoch above the latest one, or an empty cache,
// returns (-1, -1).
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	n := len(l.epochs)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if l.epochs[n-1].Epoch == epoch {
		return epoch, l.LogEndOffset()
	}
	// First entry with an epoch > requested.
	i, _ := slices.BinarySearchFunc(l.epochs, epoch+1, func(e EpochEntry, t int32) int {
		return int(e.Epoch) - int(t)
	})
	if i == n {
		return -1, -1
	}
	if i == 0 {
		return epoch, l.epochs[0].StartOffset
	}
	return l.epochs[i-1].Epoch, l.epochs[i].StartOffset
}

// truncateEpochsFromEnd drops entries that start beyond endOffset (after the
// log lost its tail). It reports whether anything changed.
func (l *Log) truncateEpochsFromEnd(endOffset int64) bool {
	n := len(l.epochs)
	l.epochs = slices.DeleteFunc(l.epochs, func(e EpochEntry) bool { return e.StartOffset > endOffset })
	return len(l.epochs) != n
}

// truncateEpochsFromStart drops entries wholly below startOffset, keeping the
// one covering it with its start moved up to startOffset, as Kafka does when
// the log start offset moves. It reports whether anything changed.
func (l *Log) truncateEpochsFromStart(startOffset int64) bool {
	i := 0 // entries [0, i) start at or below startOffset
	for i < len(l.epochs) && l.epochs[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 || (i == 1 && l.epochs[0].StartOffset == startOffset) {
		return false
	}
	keep := l.epochs[i-1]
	keep.StartOffset = startOffset
	l.epochs = append([]EpochEntry{keep}, l.epochs[i:]...)
	return true
}
