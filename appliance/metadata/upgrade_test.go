package metadata

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// hasBinding reports whether a holds b.
func hasBinding(a *ACLBindings, b ACLBinding) bool {
	_, bs := a.All()
	return slices.Contains(bs, b)
}

// copyDir copies the tree at src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("cannot copy %s: %v", src, err)
	}
}

// metadataLogValues returns the value of every record in the metadata
// log's segments under dir.
func metadataLogValues(t *testing.T, dir string) [][]byte {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, Topic+"-0", "*.log"))
	var out [][]byte
	for _, s := range segs {
		raw, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		err = nvme.ReadBatches(raw, func(_ *kmsg.RecordBatch, _ int64, r *kmsg.Record) error {
			out = append(out, append([]byte(nil), r.Value...))
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return out
}

// checkFixtureImage checks that im holds what the fixture in
// testdata/metadata-json-v0 was written with (its README).
func checkFixtureImage(t *testing.T, im *Image) {
	t.Helper()
	wantTopics := map[string]struct {
		parts   int
		configs map[string]string
	}{
		"orders":    {3, map[string]string{"retention.ms": "3600000", "compression.type": "lz4"}},
		"events":    {2, map[string]string{"segment.bytes": "1048576"}},
		"compacted": {2, map[string]string{"cleanup.policy": "compact"}},
	}
	for name, w := range wantTopics {
		tp := im.Topics[name]
		if tp == nil {
			t.Errorf("topic %s missing; have %v", name, im.SortedTopicNames())
			continue
		}
		if len(tp.Partitions) != w.parts || len(tp.Configs) != len(w.configs) {
			t.Errorf("topic %s: %d partitions, configs %v; want %d, %v", name, len(tp.Partitions), tp.Configs, w.parts, w.configs)
		}
		for k, v := range w.configs {
			if tp.Configs[k] != v {
				t.Errorf("topic %s config %s=%q, want %q", name, k, tp.Configs[k], v)
			}
		}
		for i, p := range tp.Partitions {
			if p.Partition != int32(i) || p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
				t.Errorf("topic %s partition %d: %+v", name, i, p)
			}
		}
	}
	if im.Topics["gone"] != nil {
		t.Error("deleted topic gone is back")
	}
	for _, internal := range []string{"__consumer_offsets", "__transaction_state"} {
		if im.Topics[internal] == nil {
			t.Errorf("internal topic %s missing", internal)
		}
	}
	wantACLs := []ACLBinding{
		{ResourceType: int8(kmsg.ACLResourceTypeTopic), ResourceName: "orders", PatternType: int8(kmsg.ACLResourcePatternTypeLiteral), Principal: "User:alice", Host: "*", Operation: int8(kmsg.ACLOperationRead), Permission: int8(kmsg.ACLPermissionTypeAllow)},
		{ResourceType: int8(kmsg.ACLResourceTypeTopic), ResourceName: "orders", PatternType: int8(kmsg.ACLResourcePatternTypeLiteral), Principal: "User:alice", Host: "*", Operation: int8(kmsg.ACLOperationDescribe), Permission: int8(kmsg.ACLPermissionTypeAllow)},
		{ResourceType: int8(kmsg.ACLResourceTypeGroup), ResourceName: "team-", PatternType: int8(kmsg.ACLResourcePatternTypePrefixed), Principal: "User:mallory", Host: "10.0.0.1", Operation: int8(kmsg.ACLOperationRead), Permission: int8(kmsg.ACLPermissionTypeDeny)},
	}
	if im.ACLs.Len() != len(wantACLs) {
		t.Errorf("%d ACLs, want %d", im.ACLs.Len(), len(wantACLs))
	}
	for _, bd := range wantACLs {
		if im.ACLs == nil {
			break
		}
		if !hasBinding(im.ACLs, bd) {
			t.Errorf("ACL %+v missing", bd)
		}
	}
	for _, u := range []struct {
		name  string
		mech  int8
		iters int32
	}{{"alice", scramSHA256, 4096}, {"bob", scramSHA512, 8192}} {
		c, ok := im.Scram[u.name][u.mech]
		if !ok || c.Iterations != u.iters || len(c.Salt) == 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 {
			t.Errorf("SCRAM credential of %s mechanism %d: %+v (present %v)", u.name, u.mech, c, ok)
		}
	}
	if len(im.Scram) != 2 {
		t.Errorf("%d SCRAM users, want 2", len(im.Scram))
	}
	quotas := map[string]map[string]float64{}
	for _, e := range im.ClientQuotas.All() {
		if len(e.Parts) != 1 {
			t.Fatalf("quota entity %+v, want one part", e.Parts)
		}
		name := "<default>"
		if e.Parts[0].Name != nil {
			name = *e.Parts[0].Name
		}
		quotas[e.Parts[0].Type+"/"+name] = e.Values
	}
	if got := quotas["user/alice"][producerByteRate]; got != 1048576 {
		t.Errorf("alice's producer_byte_rate %v, want 1048576", got)
	}
	if got := quotas["client-id/<default>"][consumerByteRate]; got != 2097152 {
		t.Errorf("default client-id consumer_byte_rate %v, want 2097152", got)
	}
	if len(quotas) != 2 || len(quotas["user/alice"]) != 1 || len(quotas["client-id/<default>"]) != 1 {
		t.Errorf("client quotas %v", quotas)
	}
	if im.NextProducerID <= 0 {
		t.Errorf("next producer id %d: the block taken is lost", im.NextProducerID)
	}
}

// TestMetadataUpgradeInterrupted: a crash at any step of the upgrade
// leaves a directory that opens with the whole image: a half-written
// <dir>.upgrade, the JSON log moved aside before the new one moved in,
// and both in place before the JSON one was removed.
func TestMetadataUpgradeInterrupted(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	open := func(t *testing.T, dir string) *Image {
		t.Helper()
		m, im, err := openMetadataLog(dir, logger)
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
		checkFixtureImage(t, im)
		for _, leftover := range []string{upgradeSuffix, jsonSaveSuffix} {
			if _, err := os.Stat(filepath.Join(dir, Topic+"-0"+leftover)); !os.IsNotExist(err) {
				t.Errorf("%s left behind: %v", leftover, err)
			}
		}
		return im
	}
	fixture := filepath.Join("testdata", "metadata-json-v0")
	meta := Topic + "-0"

	t.Run("half-written upgrade", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, fixture, dir)
		copyDir(t, filepath.Join(fixture, meta), filepath.Join(dir, meta+upgradeSuffix))
		seg := filepath.Join(dir, meta+upgradeSuffix, "00000000000000000000.log")
		if err := os.Truncate(seg, 1000); err != nil {
			t.Fatal(err)
		}
		open(t, dir)
	})
	t.Run("JSON log moved aside", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, fixture, dir)
		if err := os.Rename(filepath.Join(dir, meta), filepath.Join(dir, meta+jsonSaveSuffix)); err != nil {
			t.Fatal(err)
		}
		open(t, dir)
	})
	t.Run("both in place", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, fixture, dir)
		open(t, dir) // upgrades
		copyDir(t, filepath.Join(fixture, meta), filepath.Join(dir, meta+jsonSaveSuffix))
		im := open(t, dir)
		if v := metadataLogValues(t, dir); int64(len(v)) != im.Offset+1 || v[0][0] == '{' {
			t.Fatalf("log after recovery: %d records, first byte %q", len(v), v[0][0])
		}
	})
}

// TestMetadataLogWritesBinaryRecords: every record the controller commits
// is one cluster/records frame.
func TestMetadataLogWritesBinaryRecords(t *testing.T) {
	dir := t.TempDir()
	m, im, err := openMetadataLog(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	recs := topicRecs("t", NewTopicID(), 2)
	if _, err := m.Commit(im, recs); err != nil {
		t.Fatal(err)
	}
	vals := metadataLogValues(t, dir)
	if len(vals) != 3 {
		t.Fatalf("%d records in the log, want 3", len(vals))
	}
	kinds := []records.APIKey{records.TopicKey, records.PartitionKey, records.PartitionKey}
	for i, v := range vals {
		r, err := records.Decode(v)
		if err != nil || r.APIKey() != kinds[i] {
			t.Fatalf("record %d: %v, %v; want %s", i, r, err, kinds[i])
		}
	}
}
