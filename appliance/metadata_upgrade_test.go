package appliance

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	segs, _ := filepath.Glob(filepath.Join(dir, metadataTopic+"-0", "*.log"))
	var out [][]byte
	for _, s := range segs {
		raw, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		err = readBatches(raw, func(_ *kmsg.RecordBatch, _ int64, r *kmsg.Record) error {
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
		if _, ok := aclLookup(im, bd); !ok {
			t.Errorf("ACL %+v missing", bd)
		}
	}
	for _, u := range []struct {
		name  string
		mech  int8
		iters int32
	}{{"alice", security.ScramSHA256, 4096}, {"bob", security.ScramSHA512, 8192}} {
		c, ok := im.Scram[u.name][u.mech]
		if !ok || c.Iterations != u.iters || len(c.Salt) == 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 {
			t.Errorf("SCRAM credential of %s mechanism %d: %+v (present %v)", u.name, u.mech, c, ok)
		}
	}
	if len(im.Scram) != 2 {
		t.Errorf("%d SCRAM users, want 2", len(im.Scram))
	}
	if got := buildQuotaTable(im.ClientQuotas).vals[quotaEntity{User: quota.Named("alice")}][quota.ProducerByteRate]; got != 1048576 {
		t.Errorf("alice's producer_byte_rate %v, want 1048576", got)
	}
	if got := buildQuotaTable(im.ClientQuotas).vals[quotaEntity{ClientID: quota.Default()}][quota.ConsumerByteRate]; got != 2097152 {
		t.Errorf("default client-id consumer_byte_rate %v, want 2097152", got)
	}
	if len(buildQuotaTable(im.ClientQuotas).vals) != 2 || buildQuotaTable(im.ClientQuotas).kinds != quota.KindProduce|quota.KindFetch {
		t.Errorf("client quotas %v, kinds %b", buildQuotaTable(im.ClientQuotas).vals, buildQuotaTable(im.ClientQuotas).kinds)
	}
	if im.NextProducerID <= 0 {
		t.Errorf("next producer id %d: the block taken is lost", im.NextProducerID)
	}
}

// TestMetadataUpgradeFromJSON starts a broker on a copy of a data
// directory that the JSON-record broker wrote (testdata/metadata-json-v0):
// every topic, config, ACL, SCRAM user, quota and the producer id block
// come through; the log is rewritten once as binary records, with the
// same offsets, and a restart reads it again as binary.
func TestMetadataUpgradeFromJSON(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("metadata", "testdata", "metadata-json-v0"), dir)
	before := metadataLogValues(t, dir)
	if len(before) == 0 || before[0][0] != '{' {
		t.Fatalf("fixture is not a JSON metadata log (%d records)", len(before))
	}
	props := map[string]string{"log.dirs": dir, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
	b := startTestBroker(t, props)
	im := b.currentImage()
	checkFixtureImage(t, im)
	if im.Offset != int64(len(before))-1 {
		t.Fatalf("image at offset %d after upgrade, the JSON log had %d records", im.Offset, len(before))
	}
	b.Close()

	after := metadataLogValues(t, dir)
	if len(after) != len(before) {
		t.Fatalf("upgraded log has %d records, the JSON log had %d", len(after), len(before))
	}
	for i, v := range after {
		if _, err := records.Decode(v); err != nil {
			t.Fatalf("record %d after the upgrade: %v", i, err)
		}
	}
	for _, leftover := range []string{".upgrade", ".json"} {
		if _, err := os.Stat(filepath.Join(dir, metadataTopic+"-0"+leftover)); !os.IsNotExist(err) {
			t.Errorf("upgrade left %s behind: %v", leftover, err)
		}
	}

	b2 := startTestBroker(t, props)
	checkFixtureImage(t, b2.currentImage())
	if got := b2.currentImage().Offset; got != im.Offset {
		t.Fatalf("restart on the upgraded log: offset %d, want %d", got, im.Offset)
	}
	b2.Close()
	if again := metadataLogValues(t, dir); len(again) != len(after) || string(again[0]) != string(after[0]) {
		t.Fatalf("second start rewrote the log: %d records", len(again))
	}
}

// TestRestartPlacesEvenly: the records carry no shard; the log manager
// places partitions when it opens them, so after creates, deletes and
// growth a restart spreads every partition over the shards evenly (the
// counts per shard differ by at most one) and opens each on the shard the
// placement table names.
func TestRestartPlacesEvenly(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"log.dirs": dir, "shards": "3"}
	b := startTestBroker(t, props)
	for i, n := range []int32{4, 1, 5, 2} {
		if _, err := b.createTopic(TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: n, ReplicationFactor: 1}, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.controller().DeleteTopic("t1", TopicID{}); err != nil {
		t.Fatal(err)
	}
	if err := b.controller().CreatePartitions("t0", 7, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.createTopic(TopicSpec{Name: "t4", Partitions: 3, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b2 := startTestBroker(t, props)
	perShard := make([]int, len(b2.shards))
	total := 0
	for _, st := range b2.shards {
		st.loop.Call(func() {
			for k := range st.parts {
				if got := b2.ctl.lm.shardOf(k.id, k.p); got != st {
					t.Errorf("partition %v open on shard %d, placed on %d", k, st.id, got.id)
				}
				perShard[st.id]++
				total++
			}
		})
	}
	want := 0
	for _, tp := range b2.currentImage().Topics {
		want += len(tp.Partitions)
	}
	if total != want || slices.Max(perShard)-slices.Min(perShard) > 1 {
		t.Fatalf("after restart %d partitions open (image has %d), per shard %v", total, want, perShard)
	}
}
