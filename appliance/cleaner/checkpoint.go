package cleaner

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
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
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return bytes.NewReader(nil)
		}
		return bytes.NewReader(b)
	}
	return parseCheckpoints(open(OffsetCheckpoint), open(HorizonCheckpoint))
}

// parseCheckpoints decodes the offset and horizon checkpoint files. Lines
// that do not parse are skipped; a horizon line counts only for a
// partition the offset file names.
func parseCheckpoints(offsets, horizons io.Reader) map[name]entry {
	out := map[name]entry{}
	eachLine := func(r io.Reader, fn func(fields []string)) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for line := 0; sc.Scan(); line++ {
			if line >= 2 {
				fn(strings.Fields(sc.Text()))
			}
		}
	}
	eachLine(offsets, func(fs []string) {
		if len(fs) != 3 {
			return
		}
		p, err1 := strconv.ParseInt(fs[1], 10, 32)
		o, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 == nil && err2 == nil {
			out[name{fs[0], int32(p)}] = entry{state: nvme.CleanerState{FirstDirty: o}}
		}
	})
	eachLine(horizons, func(fs []string) {
		if len(fs) < 3 {
			return
		}
		p, err := strconv.ParseInt(fs[1], 10, 32)
		if err != nil {
			return
		}
		n := name{fs[0], int32(p)}
		e, ok := out[n]
		if !ok {
			return
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
	})
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
	for n := range states {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if names[i].topic != names[j].topic {
			return names[i].topic < names[j].topic
		}
		return names[i].p < names[j].p
	})
	var offs, hor strings.Builder
	fmt.Fprintf(&offs, "0\n%d\n", len(names))
	fmt.Fprintf(&hor, "0\n%d\n", len(names))
	for _, n := range names {
		e := states[n]
		fmt.Fprintf(&offs, "%s %d %d\n", n.topic, n.p, e.state.FirstDirty)
		pts := make([]string, 0, len(e.state.Points))
		for _, p := range e.state.Points {
			pts = append(pts, fmt.Sprintf("%d:%d", p.EndOffset, p.CleanedMs))
		}
		fmt.Fprintf(&hor, "%s %d %s %s\n", n.topic, n.p, base64.RawURLEncoding.EncodeToString(e.id[:]), strings.Join(pts, ","))
	}
	return []byte(offs.String()), []byte(hor.String())
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
