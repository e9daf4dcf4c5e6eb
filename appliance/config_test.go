package appliance

import (
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	in := "# comment\n! also comment\nnode.id=3\nlisteners = PLAINTEXT://0.0.0.0:9093\nlog.dirs: /var/lib/rb\nlong.value=a\\\n  b\nempty=\n"
	props, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node.id": "3", "listeners": "PLAINTEXT://0.0.0.0:9093", "log.dirs": "/var/lib/rb", "long.value": "ab", "empty": ""}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
}

func TestConfigFromProperties(t *testing.T) {
	cfg, err := ConfigFromProperties(map[string]string{
		"listeners":           "PLAINTEXT://0.0.0.0:9093",
		"log.retention.hours": "24",
		"log.roll.hours":      "1",
		"message.max.bytes":   "2000000",
		"shards":              "4",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "0.0.0.0:9093" || cfg.AdvertisedHost != "127.0.0.1" || cfg.AdvertisedPort != 9093 {
		t.Errorf("listener %q advertised %s:%d", cfg.ListenAddr, cfg.AdvertisedHost, cfg.AdvertisedPort)
	}
	if cfg.TopicDefaults["retention.ms"] != "86400000" || cfg.TopicDefaults["segment.ms"] != "3600000" {
		t.Errorf("hour forms: retention.ms=%s segment.ms=%s", cfg.TopicDefaults["retention.ms"], cfg.TopicDefaults["segment.ms"])
	}
	if cfg.TopicDefaults["max.message.bytes"] != "2000000" || cfg.MessageMaxBytes != 2000000 {
		t.Errorf("max.message.bytes=%s", cfg.TopicDefaults["max.message.bytes"])
	}
	if cfg.LogIOPreallocChunk != 16<<20 {
		t.Errorf("log.io.preallocate.chunk.bytes default %d, want 16 MiB", cfg.LogIOPreallocChunk)
	}
	if cfg.LogIOCachePrefault {
		t.Error("log.io.cache.prefault is on by default")
	}
	if !cfg.LogIOTailReads {
		t.Error("log.io.tail.reads is off by default")
	}
	if c, err := ConfigFromProperties(map[string]string{"log.io.tail.reads": "false"}); err != nil || c.LogIOTailReads {
		t.Errorf("log.io.tail.reads=false: %v, %v", c.LogIOTailReads, err)
	}
	if cfg.UringSendMaxBytes != 512<<10 {
		t.Errorf("io.uring.send.max.bytes default %d, want 512 KiB", cfg.UringSendMaxBytes)
	}
	for _, v := range []string{"0", "4096"} {
		if _, err := ConfigFromProperties(map[string]string{"io.uring.send.max.bytes": v}); err != nil {
			t.Errorf("io.uring.send.max.bytes=%s: %v", v, err)
		}
	}
	for _, v := range []string{"true", "TRUE", " True "} {
		if c, err := ConfigFromProperties(map[string]string{"log.io.cache.prefault": v}); err != nil || !c.LogIOCachePrefault {
			t.Errorf("log.io.cache.prefault=%q: %v, %v", v, c.LogIOCachePrefault, err)
		}
	}
	if cfg.Shards != 4 || cfg.NodeID != 1 || cfg.NumPartitions != 1 || !cfg.AutoCreateTopics {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, bad := range []map[string]string{
		{"listeners": "SSL://127.0.0.1:9093"},
		{"io.engine": "epoll"},
		{"log.io.mode": "mmap"},
		{"num.partitions": "0"},
		{"log.segment.bytes": "x"},
		{"node.id": "abc"},
		{"log.io.preallocate.chunk.bytes": "4096"},
		{"log.io.cache.prefault": "maybe"},
		{"log.io.cache.prefault": "1"}, // Kafka's booleans are true or false only
		{"log.io.cache.bytes": "0"},
		{"log.io.cache.bytes": "-5"},
		{"io.uring.send.max.bytes": "-1"},
		{"io.uring.send.max.bytes": "13"},
		{"io.uring.send.max.bytes": "4095"},
	} {
		if _, err := ConfigFromProperties(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestValidTopicName(t *testing.T) {
	for _, ok := range []string{"a", "orders-v2", "A.b_c", strings.Repeat("x", 249)} {
		if err := validTopicName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "with space", "slash/", strings.Repeat("x", 250), "ünï"} {
		if err := validTopicName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := validTopicName("ünï"); err == nil || !strings.Contains(err.Error(), "contains 'ü'") {
		t.Errorf("refusal of a non-ASCII name does not name its character: %v", err)
	}
}

func TestImageApply(t *testing.T) {
	im := emptyImage()
	id := newTopicID()
	v := "compact"
	next, err := im.Apply(2, []MetadataRecord{
		{Topic: &TopicRecord{Name: "t", ID: id}},
		{Partition: &PartitionRecord{TopicID: id, Partition: 0, Leader: 1}},
		{Partition: &PartitionRecord{TopicID: id, Partition: 1, Leader: 1}},
		{Config: &ConfigRecord{ResourceType: 2, Name: "t", Key: "cleanup.policy", Value: &v}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Topics) != 0 {
		t.Fatal("Apply changed the old image")
	}
	tp := next.Topics["t"]
	if tp == nil || len(tp.Partitions) != 2 || tp.Configs["cleanup.policy"] != "compact" || next.TopicsByID[id] != tp {
		t.Fatalf("topic %+v", tp)
	}
	after, err := next.Apply(3, []MetadataRecord{{Config: &ConfigRecord{ResourceType: 2, Name: "t", Key: "cleanup.policy"}}})
	if err != nil || after.Topics["t"].Configs["cleanup.policy"] != "" || next.Topics["t"].Configs["cleanup.policy"] != "compact" {
		t.Fatalf("config removal: %v", err)
	}
	gone, err := after.Apply(4, []MetadataRecord{{RemoveTopic: &RemoveTopicRecord{ID: id}}})
	if err != nil || len(gone.Topics) != 0 || len(gone.TopicsByID) != 0 {
		t.Fatalf("remove: %v", err)
	}
	if _, err := gone.Apply(5, []MetadataRecord{{Partition: &PartitionRecord{TopicID: id, Partition: 0}}}); err == nil {
		t.Fatal("partition of a removed topic applied")
	}
	if _, err := next.Apply(5, []MetadataRecord{{Partition: &PartitionRecord{TopicID: id, Partition: 5}}}); err == nil {
		t.Fatal("partition gap applied")
	}
}
