package appliance

// DescribeLogDirs (key 35), v0-v4.
//
// The broker has one log directory, the first entry of log.dirs, reported
// by its absolute path. Each requested partition open on this broker is
// listed with the bytes of its segments (Size), an offset lag of 0 (the high
// watermark is the log end offset) and is_future false; a null topic list
// asks for every partition, and requested topics or partitions the broker
// does not have are left out, as in Kafka. v4 adds the volume's total and
// usable bytes from statfs(2) (-1 when it fails). Sizes are read on each
// owner shard, one task per shard.

import (
	"path/filepath"
	"sort"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

var describeLogDirsAPI = apiDef{key: 35, min: 0, max: 4, handle: handleDescribeLogDirs}

// logDirPartition is one partition's entry, read on its shard.
type logDirPartition struct {
	topic string
	index int32
	size  int64
}

func handleDescribeLogDirs(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.DescribeLogDirsRequest)
	return wire.Deferred(func() any {
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		if !b.authorizeCluster(r, kmsg.ACLOperationDescribe) { // v0-v2 answer no dirs
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
		var want map[string]map[int32]bool // nil: all
		if req.Topics != nil {
			want = map[string]map[int32]bool{}
			for _, t := range req.Topics {
				ps := want[t.Topic]
				if ps == nil {
					ps = map[int32]bool{}
					want[t.Topic] = ps
				}
				for _, p := range t.Partitions {
					ps[p] = true
				}
			}
		}
		parts := b.collectLogDirPartitions(want)

		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir = b.cfg.LogDir
		if abs, err := filepath.Abs(b.cfg.LogDir); err == nil {
			dir.Dir = abs
		}
		dir.TotalBytes, dir.UsableBytes = volumeBytes(dir.Dir)
		dir.Topics = groupLogDirPartitions(parts)
		resp.Dirs = append(resp.Dirs, dir)
		return resp
	})
}

// collectLogDirPartitions reads the size of every open partition that want
// selects (nil: all), one task per shard.
func (b *Broker) collectLogDirPartitions(want map[string]map[int32]bool) []logDirPartition {
	chans := make([]chan []logDirPartition, len(b.shards))
	for i, st := range b.shards {
		ch := make(chan []logDirPartition, 1)
		chans[i] = ch
		st.loop.Post(func() {
			var out []logDirPartition
			for _, p := range st.parts {
				if p.log == nil {
					continue
				}
				if want != nil && !want[p.topic][p.index] {
					continue
				}
				out = append(out, logDirPartition{topic: p.topic, index: p.index, size: p.log.Size()})
			}
			ch <- out
		})
	}
	// A shard answers at once; the timer only guards against a shard that
	// stopped (broker shutting down).
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	var all []logDirPartition
	for _, ch := range chans {
		select {
		case ps := <-ch:
			all = append(all, ps...)
		case <-timer.C:
			return all
		}
	}
	return all
}

// groupLogDirPartitions groups partitions by topic, both sorted.
func groupLogDirPartitions(parts []logDirPartition) []kmsg.DescribeLogDirsResponseDirTopic {
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topic != parts[j].topic {
			return parts[i].topic < parts[j].topic
		}
		return parts[i].index < parts[j].index
	})
	var out []kmsg.DescribeLogDirsResponseDirTopic
	for _, p := range parts {
		if len(out) == 0 || out[len(out)-1].Topic != p.topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = p.topic
			out = append(out, t)
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition = p.index
		rp.Size = p.size
		rp.OffsetLag = 0
		rp.IsFuture = false
		t := &out[len(out)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return out
}

// volumeBytes is the total and usable size of the volume holding dir, as
// Java's File.getTotalSpace and getUsableSpace report them; -1 on error.
func volumeBytes(dir string) (total, usable int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	bs := int64(st.Frsize)
	if bs <= 0 {
		bs = int64(st.Bsize)
	}
	return int64(st.Blocks) * bs, int64(st.Bavail) * bs
}
