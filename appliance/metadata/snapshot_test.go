package metadata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// imageBytes is im's content as the records that rebuild it, encoded:
// two images with equal bytes and offsets hold the same metadata.
func imageBytes(t *testing.T, im *Image) []byte {
	t.Helper()
	var out []byte
	for _, r := range ImageRecords(im) {
		br, err := ToBinary(r)
		if err != nil {
			t.Fatal(err)
		}
		out = br.AppendTo(out)
	}
	return out
}

func sameImage(t *testing.T, what string, got, want *Image) {
	t.Helper()
	if got.Offset != want.Offset || !bytes.Equal(imageBytes(t, got), imageBytes(t, want)) {
		t.Fatalf("%s: image at offset %d with topics %v, want offset %d with topics %v (or their contents differ)",
			what, got.Offset, got.SortedTopicNames(), want.Offset, want.SortedTopicNames())
	}
	type part struct {
		replicas, isr []int32
		leader, epoch int32
	}
	type topic struct {
		id      TopicID
		parts   []part
		configs map[string]string
	}
	project := func(im *Image) map[string]topic {
		out := map[string]topic{}
		for name, tp := range im.Topics {
			tt := topic{id: tp.ID, configs: tp.Configs}
			for _, p := range tp.Partitions {
				tt.parts = append(tt.parts, part{append([]int32{}, p.Replicas...), append([]int32{}, p.ISR...), p.Leader, p.LeaderEpoch})
			}
			out[name] = tt
		}
		return out
	}
	acls := func(s *ACLBindings) map[ACLID]ACLBinding {
		if s == nil {
			return nil
		}
		ids, bs := s.All()
		out := make(map[ACLID]ACLBinding, len(ids))
		for i, id := range ids {
			out[id] = bs[i]
		}
		return out
	}
	gotACLs, wantACLs := acls(got.ACLs), acls(want.ACLs)
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"topics", project(got), project(want)},
		{"broker configs", got.Brokers, want.Brokers},
		{"group configs", len(got.GroupConfigs), len(want.GroupConfigs)},
		{"next producer id", got.NextProducerID, want.NextProducerID},
		{"ACLs", gotACLs, wantACLs},
		{"client quotas", got.ClientQuotas.All(), want.ClientQuotas.All()},
		{"SCRAM credentials", got.Scram, want.Scram},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Fatalf("%s: %s differ:\n got %v\nwant %v", what, c.field, c.got, c.want)
		}
	}
}

// snapshotWorkload commits a mix of every record kind the controller
// writes to m until at least one snapshot is written and the log goes on
// after the newest one; it returns the last image.
func snapshotWorkload(t *testing.T, m *Log, im *Image) *Image {
	t.Helper()
	commit := func(recs ...Record) {
		t.Helper()
		next, err := m.Commit(im, recs)
		if err != nil {
			t.Fatal(err)
		}
		im = next
	}
	var prev TopicID
	for i := 0; i < 400; i++ {
		id := NewTopicID()
		name := fmt.Sprintf("topic-%03d", i)
		v := fmt.Sprint(1000 * i)
		commit(append(topicRecs(name, id, int32(1+i%3)), Record{Config: &ConfigRecord{ResourceType: 2, Name: name, Key: "retention.ms", Value: &v}})...)
		switch i % 5 {
		case 1:
			commit(Record{RemoveTopic: &RemoveTopicRecord{ID: prev}})
		case 2:
			commit(Record{ACL: &AccessControlEntryRecord{ID: newACLID(), ACLBinding: ACLBinding{ResourceType: int8(kmsg.ACLResourceTypeTopic),
				ResourceName: name, PatternType: 3, Principal: "User:u" + name, Host: "*", Operation: 3, Permission: int8(kmsg.ACLPermissionTypeAllow)}}})
		case 3:
			commit(Record{ClientQuota: &ClientQuotaRecord{Entity: []ClientQuotaEntityPart{{Type: "user", Name: strp(name)}}, Key: producerByteRate, Value: float64(i)}},
				Record{UserScramCredential: &UserScramCredentialRecord{Name: name, Mechanism: scramSHA256, Salt: []byte{1}, StoredKey: []byte{2}, ServerKey: []byte{3}, Iterations: 4096}})
		case 4:
			commit(Record{ProducerIDs: &ProducerIDsRecord{BrokerID: 1, NextProducerID: im.NextProducerID + 1000}},
				Record{Config: &ConfigRecord{ResourceType: 4, Name: "1", Key: "log.retention.ms", Value: &v}},
				Record{Config: &ConfigRecord{ResourceType: 2, Name: name, Key: "retention.ms"}})
		}
		prev = id
		ends, err := listSnapshots(m.dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ends) >= 2 && ends[0] < im.Offset+1 && m.sinceSnapshot > 0 {
			return im
		}
	}
	t.Fatal("no two snapshots with a log tail after 400 changes")
	return nil
}

// TestMetadataSnapshotRestart: with a small
// metadata.log.max.record.bytes.between.snapshots, snapshots are written
// as Kafka names them, at most two are kept, and a restart from the
// newest snapshot plus the log tail gives the same image as a replay of
// the whole log (and as the one in force before the restart).
func TestMetadataSnapshotRestart(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	opts := LogOptions{SnapshotBytes: 4096, Checks: testChecks{}}
	m, im, err := OpenLog(dir, logger, opts)
	if err != nil {
		t.Fatal(err)
	}
	im = snapshotWorkload(t, m, im)
	m.Close()

	metaDir := filepath.Join(dir, Topic+"-0")
	ends, err := listSnapshots(metaDir)
	if err != nil || len(ends) != snapshotsKept {
		t.Fatalf("snapshots %v (%v), want %d kept", ends, err, snapshotsKept)
	}
	if _, err := os.Stat(filepath.Join(metaDir, fmt.Sprintf("%020d-%010d.checkpoint", ends[0], 0))); err != nil {
		t.Fatalf("snapshot file name: %v", err)
	}

	m2, fromSnap, err := OpenLog(dir, logger, opts)
	if err != nil {
		t.Fatal(err)
	}
	tail := m2.sinceSnapshot
	m2.Close()
	sameImage(t, "snapshot + tail vs the image in force", fromSnap, im)

	full := t.TempDir()
	copyDir(t, dir, full)
	for _, end := range ends {
		os.Remove(filepath.Join(full, Topic+"-0", snapshotName(end, 0)))
	}
	m3, replayed, err := OpenLog(full, logger, opts)
	if err != nil {
		t.Fatal(err)
	}
	whole := m3.sinceSnapshot
	m3.Close()
	sameImage(t, "snapshot + tail vs a full replay", fromSnap, replayed)
	if tail <= 0 || tail >= whole {
		t.Fatalf("restart read %d bytes of log after the snapshot, a full replay %d: the snapshot was not used", tail, whole)
	}
}

// lastBatchStart returns the byte offset of the last record batch in raw.
func lastBatchStart(t *testing.T, raw []byte) int {
	t.Helper()
	last := -1
	for off := 0; off < len(raw); {
		last = off
		off += int(binary.BigEndian.Uint32(raw[off+8:])) + 12
	}
	if last < 0 {
		t.Fatal("no batch")
	}
	return last
}

// TestMetadataSnapshotTorn: a newest snapshot that is torn (cut short, or
// cut at a batch boundary before its footer) or corrupt (a flipped byte)
// is skipped for the older one; with every snapshot bad the whole log is
// replayed. Each gives the image in force before the restart.
func TestMetadataSnapshotTorn(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	opts := LogOptions{SnapshotBytes: 4096, Checks: testChecks{}}
	src := t.TempDir()
	m, im, err := OpenLog(src, logger, opts)
	if err != nil {
		t.Fatal(err)
	}
	im = snapshotWorkload(t, m, im)
	m.Close()
	ends, err := listSnapshots(filepath.Join(src, Topic+"-0"))
	if err != nil || len(ends) != 2 {
		t.Fatalf("snapshots %v, %v", ends, err)
	}
	damage := map[string]func(t *testing.T, raw []byte) []byte{
		"cut short":            func(t *testing.T, raw []byte) []byte { return raw[:len(raw)/2] },
		"footer missing":       func(t *testing.T, raw []byte) []byte { return raw[:lastBatchStart(t, raw)] },
		"flipped byte":         func(t *testing.T, raw []byte) []byte { raw[len(raw)/2] ^= 0x40; return raw },
		"empty":                func(t *testing.T, raw []byte) []byte { return nil },
		"garbage after footer": func(t *testing.T, raw []byte) []byte { return append(raw, 1, 2, 3) },
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			for _, both := range []bool{false, true} {
				dir := t.TempDir()
				copyDir(t, src, dir)
				bad := ends[:1]
				if both {
					bad = ends
				}
				for _, end := range bad {
					p := filepath.Join(dir, Topic+"-0", snapshotName(end, 0))
					raw, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, fn(t, raw), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				m, got, err := OpenLog(dir, logger, opts)
				if err != nil {
					t.Fatalf("open with bad snapshots (both %v): %v", both, err)
				}
				m.Close()
				sameImage(t, fmt.Sprintf("%s, both bad %v", name, both), got, im)
			}
		})
	}
}

// FuzzDecodeSnapshot: the snapshot decoder never panics, and what it
// accepts is an image that encodes again to a snapshot it accepts equal.
func FuzzDecodeSnapshot(f *testing.F) {
	im := NewImage(testChecks{})
	var err error
	recs := topicRecs("a", TopicID{1}, 2)
	v := "1000"
	recs = append(recs, Record{Config: &ConfigRecord{ResourceType: 2, Name: "a", Key: "retention.ms", Value: &v}},
		Record{ProducerIDs: &ProducerIDsRecord{BrokerID: 1, NextProducerID: 1000}},
		Record{ACL: &AccessControlEntryRecord{ID: ACLID{2}, ACLBinding: ACLBinding{ResourceType: int8(kmsg.ACLResourceTypeTopic), ResourceName: "a", PatternType: 3, Principal: "User:x", Host: "*", Operation: 3, Permission: int8(kmsg.ACLPermissionTypeAllow)}}},
		Record{ClientQuota: &ClientQuotaRecord{Entity: []ClientQuotaEntityPart{{Type: "user"}}, Key: producerByteRate, Value: 5}},
		Record{UserScramCredential: &UserScramCredentialRecord{Name: "u", Mechanism: scramSHA512, Salt: []byte{1}, StoredKey: []byte{2}, ServerKey: []byte{3}, Iterations: 8192}})
	if im, err = im.Apply(int64(len(recs))-1, recs); err != nil {
		f.Fatal(err)
	}
	for _, i := range []*Image{NewImage(testChecks{}), im} {
		raw, err := encodeSnapshot(i)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		f.Add(raw[:len(raw)-3])
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeSnapshot(raw, 10, testChecks{})
		if err != nil {
			return
		}
		again, err := encodeSnapshot(got)
		if err != nil {
			t.Fatalf("decoded image does not encode: %v", err)
		}
		back, err := decodeSnapshot(again, 10, testChecks{})
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !bytes.Equal(imageBytes(t, back), imageBytes(t, got)) {
			t.Fatal("snapshot round trip changed the image")
		}
	})
}

// TestMetadataPartitionChangeReplay: a PartitionChangeRecord in the log
// changes only what it names and bumps the
// leader epoch when the leader changes; one for an unknown partition is
// an error.
func TestMetadataPartitionChangeReplay(t *testing.T) {
	id := TopicID{7}
	im, err := NewImage(testChecks{}).Apply(2, topicRecs("t", id, 2))
	if err != nil {
		t.Fatal(err)
	}
	pl := NewConverter(im)
	ch := records.NewPartitionChangeRecord(records.UUID(id), 1)
	ch.ISR = []int32{1, 2}
	ch.Leader = 2
	out, err := pl.Convert(nil, ch)
	if err != nil {
		t.Fatal(err)
	}
	p := out[0].Partition
	if p == nil || p.Leader != 2 || p.LeaderEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{1, 2}) || !reflect.DeepEqual(p.Replicas, []int32{1}) {
		t.Fatalf("changed partition %+v", p)
	}
	// A second change in the same batch starts from the first.
	ch2 := records.NewPartitionChangeRecord(records.UUID(id), 1)
	ch2.Replicas = []int32{1, 2}
	if out, err = pl.Convert(out, ch2); err != nil {
		t.Fatal(err)
	}
	if p := out[1].Partition; p.Leader != 2 || p.LeaderEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{1, 2}) || !reflect.DeepEqual(p.Replicas, []int32{1, 2}) {
		t.Fatalf("second change %+v", p)
	}
	next, err := im.Apply(4, out)
	if err != nil || next.Topics["t"].Partitions[1].Leader != 2 {
		t.Fatalf("apply: %v", err)
	}
	if _, err := pl.Convert(nil, records.NewPartitionChangeRecord(records.UUID(id), 5)); err == nil {
		t.Fatal("change of an unknown partition accepted")
	}
}
