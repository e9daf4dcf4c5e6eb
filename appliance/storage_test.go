package appliance

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// storageProduce appends n records of size bytes to partition p with acks
// and waits for the answer.
func storageProduce(t *testing.T, b *Broker, ti *TopicImage, p int32, acks int16, n, size int) produceResult {
	t.Helper()
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i].Value = make([]byte, size)
	}
	batch := appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
	resc := make(chan produceResult, 1)
	b.withPartition(ti, p, func(part *partition) {
		part.append(batch, acks, func(r produceResult) { resc <- r })
	})
	select {
	case r := <-resc:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("produce not answered")
		return produceResult{}
	}
}

// storageFetch reads partition p from offset 0 on its shard.
func storageFetch(t *testing.T, b *Broker, ti *TopicImage, p int32) (int16, int32) {
	t.Helper()
	type out struct {
		code  int16
		bytes int32
	}
	c := make(chan out, 1)
	b.withPartition(ti, p, func(part *partition) {
		var op fetchPartOut
		readPartition(part, fetchPartIn{topic: ti, partition: p, maxBytes: 1 << 20, leaderEpoch: -1}, &op, 1<<20, true, 0)
		c <- out{op.errCode, op.bytes}
	})
	o := <-c
	return o.code, o.bytes
}

// TestFsyncErrorNeverAcknowledges: an fdatasync that fails (EIO injected
// into the group committer) answers the acks=all produce with
// KAFKA_STORAGE_ERROR, takes the partition offline for writes and reads,
// and leaves a partition on another shard serving, in both io modes.
func TestFsyncErrorNeverAcknowledges(t *testing.T) {
	for _, mode := range []string{"buffered", "direct"} {
		t.Run(mode, func(t *testing.T) {
			b := adminTestBroker(t, map[string]string{"log.io.mode": mode})
			var fail atomic.Bool
			st := b.shards[0]
			st.committer.Close()
			st.committer = nvme.NewGroupCommitterFunc(b.log, func(f *os.File) error {
				if fail.Load() {
					return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.EIO}
				}
				return f.Sync()
			})
			ti := adminAddTopic(t, b, "fsync", 2, 0, nil) // p0 on shard 0, p1 on shard 1
			if r := storageProduce(t, b, ti, 0, -1, 5, 100); r.err != nil || r.baseOffset != 0 {
				t.Fatalf("first produce: %+v", r)
			}
			fail.Store(true)
			r := storageProduce(t, b, ti, 0, -1, 5, 100)
			if !errors.Is(r.err, kerr.KafkaStorageError) || r.baseOffset != -1 {
				t.Fatalf("produce with failing fdatasync answered %+v, want KAFKA_STORAGE_ERROR", r)
			}
			// goOffline is posted to the shard; a later produce sees it.
			r = storageProduce(t, b, ti, 0, 1, 1, 10)
			if !errors.Is(r.err, kerr.KafkaStorageError) {
				t.Fatalf("produce to an offline partition: %+v", r)
			}
			if code, _ := storageFetch(t, b, ti, 0); code != kerr.KafkaStorageError.Code {
				t.Fatalf("fetch from an offline partition: code %d", code)
			}
			// Metadata shows the replica offline, the partition leaderless
			// (as Kafka after a log directory failure); the other is fine.
			mt := metadataTopicResp(b, b.currentImage(), b.currentImage().Topics["fsync"])
			p0, p1 := mt.Partitions[0], mt.Partitions[1]
			if p0.ErrorCode != kerr.LeaderNotAvailable.Code || p0.Leader != -1 || len(p0.OfflineReplicas) != 1 || p0.OfflineReplicas[0] != 1 || len(p0.ISR) != 0 {
				t.Fatalf("metadata of the offline partition: %+v", p0)
			}
			if p1.ErrorCode != 0 || p1.Leader != 1 || len(p1.OfflineReplicas) != 0 {
				t.Fatalf("metadata of the healthy partition: %+v", p1)
			}
			if r := storageProduce(t, b, ti, 1, -1, 5, 100); r.err != nil {
				t.Fatalf("partition on another shard: %+v", r)
			}
			if code, n := storageFetch(t, b, ti, 1); code != 0 || n == 0 {
				t.Fatalf("fetch from the healthy partition: code %d, %d bytes", code, n)
			}
		})
	}
}

// TestENOSPCOnSmallFilesystem fills an 8 MiB tmpfs (needs root): the
// partition that hits ENOSPC answers KAFKA_STORAGE_ERROR and goes offline,
// the broker keeps serving the other partition's data, and closes cleanly.
func TestENOSPCOnSmallFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	for _, mode := range []string{"buffered", "direct"} {
		t.Run(mode, func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "small")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=8m"); err != nil {
				t.Skipf("cannot mount tmpfs: %v", err)
			}
			t.Cleanup(func() {
				if err := syscall.Unmount(mnt, 0); err != nil {
					t.Errorf("unmount %s: %v", mnt, err)
				}
			})
			b := adminTestBroker(t, map[string]string{"log.io.mode": mode, "log.dirs": mnt})
			ti := adminAddTopic(t, b, "full", 2, 0, map[string]string{"segment.bytes": "1048576"})
			if r := storageProduce(t, b, ti, 1, -1, 10, 1000); r.err != nil {
				t.Fatalf("produce to p1: %+v", r)
			}
			var r produceResult
			for i := 0; i < 200; i++ {
				if r = storageProduce(t, b, ti, 0, 1, 100, 1000); r.err != nil {
					break
				}
			}
			if !errors.Is(r.err, nvme.ErrLogClosed) || wire.ErrCode(r.err) != kerr.KafkaStorageError.Code {
				t.Fatalf("filling the filesystem ended with %v, want KAFKA_STORAGE_ERROR", r.err)
			}
			if r := storageProduce(t, b, ti, 0, 1, 1, 10); wire.ErrCode(r.err) != kerr.KafkaStorageError.Code {
				t.Fatalf("produce after ENOSPC: %v", r.err)
			}
			if code, n := storageFetch(t, b, ti, 1); code != 0 || n == 0 {
				t.Fatalf("fetch from the other partition: code %d, %d bytes", code, n)
			}
		})
	}
}

// TestDirectModeFallsBack: where O_DIRECT is refused (ramfs), the broker
// runs buffered with one warning instead of failing to start.
func TestDirectModeFallsBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount ramfs")
	}
	mnt := filepath.Join(t.TempDir(), "ramfs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("ramfs", mnt, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, 0) })
	b := adminTestBroker(t, map[string]string{"log.io.mode": "direct", "log.dirs": mnt})
	b.probeStorage()
	if b.cfg.LogIOMode != nvme.IOModeBuffered || b.newShardCache() != nil {
		t.Fatalf("log.io.mode %q on ramfs, want the buffered fallback", b.cfg.LogIOMode)
	}
}
