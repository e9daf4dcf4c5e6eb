package cleaner

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ringbroker/ringbroker/nvme"
)

const (
	// OffsetCheckpoint is Kafka's cleaner-offset-checkpoint file in
	// log.dirs: version 0, a count, then "topic partition firstDirtyOffset"
	// lines.
	OffsetCheckpoint = "cleaner-offset-checkpoint"
	// HorizonCheckpoint is ringbroker's cleaner-horizon-checkpoint file in
	// log.dirs: version 0, a count, then "topic partition topicId
	// end:cleanedMs,..." lines.
	HorizonCheckpoint = "cleaner-horizon-checkpoint"
)

// readCheckpoints loads both checkpoint files of dir; a missing or
// unreadable file is an empty one.
func readCheckpoints(dir string) map[name]entry {
	open := func(file string) io.Reader {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		return bytes.NewReader(b)
	}
	return parseCheckpoints(open(OffsetCheckpoint), open(HorizonCheckpoint))
}

// parseCheckpoints decodes the offset and horizon checkpoint files. Lines
// that do not parse are skipped; a horizon line counts only for a
// partition the offset file names.
func parseCheckpoints(offsets, horizons io.Reader) map[name]entry {
	out := map[name]entry{}
	for n, o := range nvme.ParseOffsetCheckpoint(offsets) {
		out[n] = entry{state: nvme.CleanerState{FirstDirty: o}}
	}
	sc := bufio.NewScanner(horizons)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 0; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if line < 2 || len(fs) < 3 {
			continue
		}
		p, err := strconv.ParseInt(fs[1], 10, 32)
		if err != nil {
			continue
		}
		n := name{Topic: fs[0], Partition: int32(p)}
		e, ok := out[n]
		if !ok {
			continue
		}
		var id [16]byte
		if raw, err := decodeTopicID(fs[2]); err == nil {
			id = raw
		}
		e.id = id
		if len(fs) == 4 {
			for _, pt := range strings.Split(fs[3], ",") {
				a, b, ok := strings.Cut(pt, ":")
				end, err1 := strconv.ParseInt(a, 10, 64)
				ms, err2 := strconv.ParseInt(b, 10, 64)
				if ok && err1 == nil && err2 == nil {
					e.state.Points = append(e.state.Points, nvme.CleanPoint{EndOffset: end, CleanedMs: ms})
				}
			}
		}
		out[n] = e
	}
	return out
}

// decodeTopicID parses a topic id in Kafka's textual form (URL-safe
// base64 without padding).
func decodeTopicID(s string) ([16]byte, error) {
	var id [16]byte
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != len(id) {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], raw)
	return id, nil
}

// encodeCheckpoints returns the offset and horizon checkpoint files of
// states, partitions sorted by topic then partition.
func encodeCheckpoints(states map[name]entry) (offsets, horizons []byte) {
	names := make([]name, 0, len(states))
	firstDirty := make(map[name]int64, len(states))
	for n, e := range states {
		names = append(names, n)
		firstDirty[n] = e.state.FirstDirty
	}
	nvme.SortTopicPartitions(names)
	hor := fmt.Appendf(nil, "0\n%d\n", len(names))
	for _, n := range names {
		e := states[n]
		hor = fmt.Appendf(hor, "%s %d %s ", n.Topic, n.Partition, base64.RawURLEncoding.EncodeToString(e.id[:]))
		for i, p := range e.state.Points {
			if i > 0 {
				hor = append(hor, ',')
			}
			hor = fmt.Appendf(hor, "%d:%d", p.EndOffset, p.CleanedMs)
		}
		hor = append(hor, '\n')
	}
	return nvme.AppendOffsetCheckpoint(nil, firstDirty), hor
}

// writeCheckpoints writes both checkpoint files from the states, the
// horizon file first.
func (c *Cleaner) writeCheckpoints() {
	c.ckptMu.Lock()
	defer c.ckptMu.Unlock()
	c.mu.Lock()
	offs, hor := encodeCheckpoints(c.states)
	c.mu.Unlock()
	if err := nvme.WriteFileAtomic(filepath.Join(c.o.LogDir, HorizonCheckpoint), hor); err != nil {
		c.o.Log.Error("cannot write cleaner checkpoint", "err", err)
	}
	if err := nvme.WriteFileAtomic(filepath.Join(c.o.LogDir, OffsetCheckpoint), offs); err != nil {
		c.o.Log.Error("cannot write cleaner checkpoint", "err", err)
	}
}
