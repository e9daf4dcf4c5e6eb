package nvme

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// WriteFileAtomic writes data to path through a temporary file
// (path+".tmp"), fsync and rename, then fsyncs the directory, so readers
// see the old or the new content, never a torn one. A failed write removes
// the temporary file. Checkpoint files above the log (the cleaner's, the
// log start offsets, meta.properties) are written with it.
func WriteFileAtomic(path string, data []byte) error {
	return writeFileAtomic(filepath.Dir(path), filepath.Base(path), data)
}

// TopicPartition names a partition by topic name, as Kafka's checkpoint
// files do.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Kafka's offset checkpoint files (log-start-offset-checkpoint,
// cleaner-offset-checkpoint in log.dirs) are text:
//
//	0                     version
//	2                     number of entries
//	orders 0 1200         topic, partition, offset
//	orders 1 900

// ParseOffsetCheckpoint decodes an offset checkpoint file. The version and
// count lines are skipped unread, and so is every entry line that does not
// parse; of two lines for one partition the later counts.
func ParseOffsetCheckpoint(r io.Reader) map[TopicPartition]int64 {
	out := map[TopicPartition]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 0; sc.Scan(); line++ {
		if line < 2 {
			continue
		}
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		p, err1 := strconv.ParseInt(fs[1], 10, 32)
		o, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 == nil && err2 == nil {
			out[TopicPartition{fs[0], int32(p)}] = o
		}
	}
	return out
}

// ReadOffsetCheckpoint reads the offset checkpoint file at path; a missing
// or unreadable file reads as an empty one.
func ReadOffsetCheckpoint(path string) map[TopicPartition]int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return map[TopicPartition]int64{}
	}
	return ParseOffsetCheckpoint(bytes.NewReader(b))
}

// SortTopicPartitions sorts tps by topic, then partition.
func SortTopicPartitions(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// AppendOffsetCheckpoint appends the offset checkpoint file of offsets to
// dst, entries sorted by topic, then partition.
func AppendOffsetCheckpoint(dst []byte, offsets map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	SortTopicPartitions(tps)
	dst = fmt.Appendf(dst, "0\n%d\n", len(tps))
	for _, tp := range tps {
		dst = fmt.Appendf(dst, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return dst
}

// WriteOffsetCheckpoint writes the offset checkpoint file of offsets to
// path (WriteFileAtomic).
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	return WriteFileAtomic(path, AppendOffsetCheckpoint(nil, offsets))
}
