package appliance

import (
	"errors"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/ioring"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminTestBroker is a broker with shards and a metadata image but no
// network and no metadata log: enough for handlers that read the image,
// validate, or run on shards.
func adminTestBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"node.id": "1", "log.dirs": dir, "shards": "2", "listeners": "PLAINTEXT://127.0.0.1:9092"}
	for k, v := range props {
		all[k] = v
	}
	cfg, err := ConfigFromProperties(all)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClusterID = "test-cluster"
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	b.ctl.image.Store(emptyImage())
	for i := 0; i < cfg.Shards; i++ {
		st := &shardState{id: i, parts: map[tpKey]*partition{}, committer: nvme.NewGroupCommitter(b.log)}
		st.loop = ioring.NewShard(i, ioring.ShardOptions{})
		b.shards = append(b.shards, st)
	}
	t.Cleanup(func() {
		for _, st := range b.shards {
			st.loop.Call(func() {
				for _, p := range st.parts {
					p.close()
				}
			})
			st.loop.Close()
			st.committer.Close()
		}
	})
	return b
}

// adminAddTopic puts a topic in the image (no metadata log) and opens its
// partitions, spread over the shards.
func adminAddTopic(t *testing.T, b *Broker, name string, partitions int32, epoch int32, configs map[string]string) *TopicImage {
	t.Helper()
	im := b.currentImage()
	id := newTopicID()
	recs := []MetadataRecord{{Topic: &TopicRecord{Name: name, ID: id}}}
	for p := int32(0); p < partitions; p++ {
		recs = append(recs, MetadataRecord{Partition: &PartitionRecord{TopicID: id, Partition: p, Replicas: []int32{1}, ISR: []int32{1},
			Leader: 1, LeaderEpoch: epoch}})
	}
	for k, v := range configs {
		v := v
		recs = append(recs, MetadataRecord{Config: &ConfigRecord{ResourceType: 2, Name: name, Key: k, Value: &v}})
	}
	next, err := im.Apply(im.Offset+1, recs)
	if err != nil {
		t.Fatal(err)
	}
	ti := next.Topics[name]
	if err := b.publish(im, next); err != nil {
		t.Fatal(err)
	}
	return ti
}

// adminProduce appends n records to a partition on its shard.
func adminProduce(t *testing.T, b *Broker, ti *TopicImage, p int32, n int) {
	t.Helper()
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i].Value = []byte("v")
	}
	errc := make(chan error, 1)
	b.withPartition(ti, p, func(part *partition) {
		_, err := part.log.Append(appendBatch(nil, 1000, 0, -1, -1, -1, recs), nvme.AppendOptions{MaxMessageBytes: 1 << 20, LeaderEpoch: part.epoch})
		errc <- err
	})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// adminRun sends req through the wire codec at version (so fields the
// version lacks are dropped, as on the wire), runs the registered handler
// (and its deferred part), and decodes the encoded response at version.
func adminRun(t *testing.T, b *Broker, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	key := req.Key()
	d, ok := b.front.apis.Lookup(key)
	if !ok {
		t.Fatalf("API key %d not registered", key)
	}
	if version < d.Min || version > d.Max {
		t.Fatalf("API key %d v%d outside registered %d-%d", key, version, d.Min, d.Max)
	}
	req.SetVersion(version)
	body := kmsg.RequestForKey(key)
	body.SetVersion(version)
	if err := body.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatalf("key %d v%d: cannot decode request: %v", key, version, err)
	}
	r := &wire.Request{Key: key, Version: version, Req: body}
	if b != nil && b.authz != nil {
		r.Authz = b.authz // as conn.dispatch does: handlers in concept packages ask r.Allowed
	}
	out := d.Handle(r)
	if df, ok := out.(wire.Deferred); ok {
		out = df()
	}
	resp, ok := out.(kmsg.Response)
	if !ok {
		t.Fatalf("key %d v%d: handler returned %T", key, version, out)
	}
	resp.SetVersion(version)
	got := kmsg.ResponseForKey(key)
	got.SetVersion(version)
	if err := got.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("key %d v%d: cannot decode response: %v", key, version, err)
	}
	return got
}

func TestAdminAPIsRegistered(t *testing.T) {
	apis := newAPITable(&Broker{})
	want := map[int16][2]int16{20: {0, 6}, 21: {0, 2}, 23: {0, 4}, 32: {0, 4}, 33: {0, 2}, 35: {0, 4}, 37: {0, 3}, 44: {0, 1}, 60: {0, 1}}
	for key, r := range want {
		d, ok := apis.Lookup(key)
		if !ok || d.Min != r[0] || d.Max != r[1] {
			t.Errorf("key %d: registered %v %d-%d, want %d-%d", key, ok, d.Min, d.Max, r[0], r[1])
		}
		if req := kmsg.RequestForKey(key); req.MaxVersion() < r[1] {
			t.Errorf("key %d: kmsg knows up to v%d, we register v%d", key, req.MaxVersion(), r[1])
		}
	}
}

func TestApplyListOp(t *testing.T) {
	list, _ := configRegistry{}.TopicConfig("cleanup.policy")
	long, _ := configRegistry{}.TopicConfig("retention.ms")
	for _, tc := range []struct {
		op       kmsg.IncrementalAlterConfigOp
		cur, arg string
		want     string
	}{
		{kmsg.IncrementalAlterConfigOpAppend, "delete", "compact", "delete,compact"},
		{kmsg.IncrementalAlterConfigOpAppend, "delete", "delete", "delete"},
		{kmsg.IncrementalAlterConfigOpAppend, "delete", " compact , delete ", "delete,compact"},
		{kmsg.IncrementalAlterConfigOpAppend, "", "compact", "compact"},
		{kmsg.IncrementalAlterConfigOpSubtract, "delete,compact", "delete", "compact"},
		{kmsg.IncrementalAlterConfigOpSubtract, "delete, compact", "compact,delete", ""},
		{kmsg.IncrementalAlterConfigOpSubtract, "delete", "compact", "delete"},
	} {
		got, err := metadata.ApplyListOp(list, tc.op, tc.cur, tc.arg)
		if err != nil || got != tc.want {
			t.Errorf("op %d on %q with %q = %q, %v; want %q", tc.op, tc.cur, tc.arg, got, err, tc.want)
		}
	}
	if _, err := metadata.ApplyListOp(long, kmsg.IncrementalAlterConfigOpAppend, "1", "2"); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("APPEND to a long config: err %v, want INVALID_CONFIG", err)
	}
}

func TestIncrementalConfigChanges(t *testing.T) {
	s := func(v string) *string { return &v }
	eff := map[string]string{"cleanup.policy": "compact", "retention.ms": "1000"}
	ops := []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: s("5")},
		{Name: "segment.ms", Op: kmsg.IncrementalAlterConfigOpDelete},
		{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: s("delete")},
	}
	got, err := metadata.IncrementalConfigChanges(configRegistry{}, ops, eff)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Key != "retention.ms" || *got[0].Value != "5" || got[1].Key != "segment.ms" || got[1].Value != nil ||
		got[2].Key != "cleanup.policy" || *got[2].Value != "compact,delete" {
		t.Fatalf("changes %+v", got)
	}
	// Without an effective value the built-in default is the base.
	got, err = metadata.IncrementalConfigChanges(configRegistry{}, []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: s("compact")}}, nil)
	if err != nil || *got[0].Value != "delete,compact" {
		t.Fatalf("append to default: %+v, %v", got, err)
	}
	if _, err := metadata.IncrementalConfigChanges(configRegistry{}, []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "no.such", Op: kmsg.IncrementalAlterConfigOpAppend, Value: s("x")}}, eff); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("unknown config: %v", err)
	}
	if _, err := metadata.IncrementalConfigChanges(configRegistry{}, []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "retention.ms", Op: 7, Value: s("x")}}, eff); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("unknown op: %v", err)
	}
}

func findConfig(cs []kmsg.DescribeConfigsResponseResourceConfig, name string) *kmsg.DescribeConfigsResponseResourceConfig {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func synonymsString(c *kmsg.DescribeConfigsResponseResourceConfig) string {
	var parts []string
	for _, s := range c.ConfigSynonyms {
		v := "<null>"
		if s.Value != nil {
			v = *s.Value
		}
		parts = append(parts, s.Source.String()+":"+s.Name+"="+v)
	}
	return strings.Join(parts, ",")
}

func TestDescribeTopicConfigsSources(t *testing.T) {
	cfg, err := ConfigFromProperties(map[string]string{"log.retention.hours": "24", "log.cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	overrides := map[string]string{"cleanup.policy": "delete", "segment.bytes": "1000"}
	cs := metadata.DescribeTopicConfigs(configRegistry{}, cfg.TopicDefaults, cfg.Props, overrides, nil, true)
	if len(cs) != len(topicConfigDefs) {
		t.Fatalf("%d configs, want %d", len(cs), len(topicConfigDefs))
	}
	for _, tc := range []struct {
		name, value string
		source      kmsg.ConfigSource
		typ         kmsg.ConfigType
		synonyms    string
	}{
		{"cleanup.policy", "delete", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeList,
			"DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,STATIC_BROKER_CONFIG:log.cleanup.policy=compact,DEFAULT_CONFIG:log.cleanup.policy=delete"},
		{"segment.bytes", "1000", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeInt,
			"DYNAMIC_TOPIC_CONFIG:segment.bytes=1000,DEFAULT_CONFIG:log.segment.bytes=1073741824"},
		{"retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeLong,
			"STATIC_BROKER_CONFIG:log.retention.hours=24,DEFAULT_CONFIG:log.retention.hours=168"},
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong,
			"DEFAULT_CONFIG:log.roll.hours=168"},
		{"preallocate", "false", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeBoolean,
			"DEFAULT_CONFIG:log.preallocate=false"},
		{"min.cleanable.dirty.ratio", "0.5", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeDouble,
			"DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5"},
		{"max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt,
			"DEFAULT_CONFIG:message.max.bytes=1048588"},
		{"compression.type", "producer", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeString,
			"DEFAULT_CONFIG:compression.type=producer"},
	} {
		c := findConfig(cs, tc.name)
		if c == nil {
			t.Errorf("%s missing", tc.name)
			continue
		}
		if c.Value == nil || *c.Value != tc.value || c.Source != tc.source || c.ConfigType != tc.typ ||
			c.IsDefault != (tc.source == kmsg.ConfigSourceDefaultConfig) || c.ReadOnly || c.IsSensitive {
			t.Errorf("%s: value %v source %v type %v default %v", tc.name, c.Value, c.Source, c.ConfigType, c.IsDefault)
		}
		if got := synonymsString(c); got != tc.synonyms {
			t.Errorf("%s synonyms:\n got %s\nwant %s", tc.name, got, tc.synonyms)
		}
	}

	// Filtering, and no synonyms unless asked.
	cs = metadata.DescribeTopicConfigs(configRegistry{}, cfg.TopicDefaults, cfg.Props, overrides, []string{"retention.ms", "no.such"}, false)
	if len(cs) != 1 || cs[0].Name != "retention.ms" || cs[0].ConfigSynonyms != nil {
		t.Fatalf("filtered: %+v", cs)
	}
	// Empty config_names asks for all.
	if cs = metadata.DescribeTopicConfigs(configRegistry{}, cfg.TopicDefaults, cfg.Props, nil, []string{}, false); len(cs) != len(topicConfigDefs) {
		t.Fatalf("empty filter: %d configs", len(cs))
	}
	// A Config built without properties falls back to the built-in defaults.
	if cs = metadata.DescribeTopicConfigs(configRegistry{}, nil, nil, nil, []string{"retention.ms"}, false); *cs[0].Value != "604800000" {
		t.Fatalf("no defaults: %v", *cs[0].Value)
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	cfg, err := ConfigFromProperties(map[string]string{"node.id": "3", "ssl.keystore.password": "hunter2", "num.partitions": "1", "log.dirs": "/data"})
	if err != nil {
		t.Fatal(err)
	}
	cs := metadata.DescribeBrokerConfigs(configRegistry{}, cfg.Props, nil, nil, nil, true)
	if c := findConfig(cs, "node.id"); c == nil || *c.Value != "3" || c.Source != kmsg.ConfigSourceStaticBrokerConfig || !c.ReadOnly ||
		c.ConfigType != kmsg.ConfigTypeInt || synonymsString(c) != "STATIC_BROKER_CONFIG:node.id=3,DEFAULT_CONFIG:node.id=1" {
		t.Errorf("node.id: %+v", c)
	}
	// Set to its default: reported as the default.
	if c := findConfig(cs, "num.partitions"); c == nil || c.Source != kmsg.ConfigSourceDefaultConfig || !c.IsDefault {
		t.Errorf("num.partitions: %+v", c)
	}
	if c := findConfig(cs, "ssl.keystore.password"); c == nil || c.Value != nil || !c.IsSensitive || c.ConfigSynonyms[0].Value != nil ||
		c.ConfigType != kmsg.ConfigTypePassword {
		t.Errorf("password: %+v", c)
	}
	if c := findConfig(cs, "log.retention.check.interval.ms"); c == nil || c.ConfigType != kmsg.ConfigTypeLong {
		t.Errorf("log.retention.check.interval.ms: %+v", c)
	}
	// Dynamic configs take precedence; the cluster-wide form lists only them.
	cs = metadata.DescribeBrokerConfigs(configRegistry{}, cfg.Props, map[string]string{"num.partitions": "4"}, map[string]string{"num.partitions": "5"}, []string{"num.partitions"}, true)
	if len(cs) != 1 || *cs[0].Value != "5" || synonymsString(&cs[0]) !=
		"DYNAMIC_BROKER_CONFIG:num.partitions=5,DYNAMIC_DEFAULT_BROKER_CONFIG:num.partitions=4,DEFAULT_CONFIG:num.partitions=1" {
		t.Errorf("dynamic: %+v", cs)
	}
	if cs = metadata.DescribeBrokerConfigs(configRegistry{}, nil, nil, nil, nil, true); len(cs) != 0 {
		t.Errorf("cluster-wide defaults: %+v", cs)
	}
}

func TestDescribeConfigsHandler(t *testing.T) {
	b := adminTestBroker(t, map[string]string{"log.retention.hours": "24"})
	adminAddTopic(t, b, "t", 1, 0, map[string]string{"retention.ms": "1000"})
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{2, "t"}, {2, "missing"}, {2, "bad name"}, {4, "1"}, {4, ""}, {4, "2"}, {4, "x"}, {8, "1"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			req.Resources = append(req.Resources, rr)
		}
		resp := adminRun(t, b, req, v).(*kmsg.DescribeConfigsResponse)
		wantCodes := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
		if len(resp.Resources) != len(wantCodes) {
			t.Fatalf("v%d: %d resources", v, len(resp.Resources))
		}
		for i, want := range wantCodes {
			if got := resp.Resources[i].ErrorCode; got != want {
				t.Errorf("v%d resource %d: code %d, want %d", v, i, got, want)
			}
		}
		c := findConfig(resp.Resources[0].Configs, "retention.ms")
		if c == nil || *c.Value != "1000" {
			t.Fatalf("v%d: retention.ms %+v", v, c)
		}
		if v == 0 && (c.IsDefault || len(c.ConfigSynonyms) != 0) {
			t.Errorf("v0: %+v", c)
		}
		if v >= 1 && (c.Source != kmsg.ConfigSourceDynamicTopicConfig || len(c.ConfigSynonyms) != 3) {
			t.Errorf("v%d: source %v synonyms %s", v, c.Source, synonymsString(c))
		}
		if v >= 3 && c.ConfigType != kmsg.ConfigTypeLong {
			t.Errorf("v%d: type %v", v, c.ConfigType)
		}
		if len(resp.Resources[3].Configs) == 0 || len(resp.Resources[4].Configs) != 0 {
			t.Errorf("v%d: broker configs %d, cluster-wide %d", v, len(resp.Resources[3].Configs), len(resp.Resources[4].Configs))
		}
	}
}

func TestAlterConfigsHandlersValidateOnly(t *testing.T) {
	b := adminTestBroker(t, nil)
	adminAddTopic(t, b, "t", 1, 0, map[string]string{"cleanup.policy": "compact"})
	s := func(v string) *string { return &v }
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = true
		add := func(typ kmsg.ConfigResourceType, name string, cfgs ...kmsg.AlterConfigsRequestResourceConfig) {
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.Configs = typ, name, cfgs
			req.Resources = append(req.Resources, rr)
		}
		add(2, "t", kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms", Value: s("10")})
		add(2, "t2", kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms", Value: s("10")})
		add(2, "t3")
		add(2, "t3")
		add(2, "t4", kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms", Value: s("10")}, kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms", Value: s("10")})
		add(2, "t", kmsg.AlterConfigsRequestResourceConfig{Name: "retention.ms", Value: nil})
		add(4, "1", kmsg.AlterConfigsRequestResourceConfig{Name: "num.partitions", Value: s("3")})
		resp := adminRun(t, b, req, v).(*kmsg.AlterConfigsResponse)
		want := []int16{kerr.InvalidRequest.Code /* "t" twice */, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code,
			kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
		for i, w := range want {
			if got := resp.Resources[i].ErrorCode; got != w {
				t.Errorf("v%d resource %d: code %d, want %d (%v)", v, i, got, w, resp.Resources[i].ErrorMessage)
			}
		}
		// num.partitions cannot change without a restart: INVALID_REQUEST
		// naming it, as Kafka's "Cannot update these configs dynamically".
		if m := resp.Resources[6].ErrorMessage; m == nil || !strings.Contains(*m, "num.partitions") {
			t.Errorf("v%d broker message %v", v, m)
		}
		// One clean resource, validated only: accepted, nothing changes.
		req.Resources = req.Resources[:1]
		req.Resources[0].Configs = append(req.Resources[0].Configs, kmsg.AlterConfigsRequestResourceConfig{Name: "segment.bytes", Value: s("1")})
		resp = adminRun(t, b, req, v).(*kmsg.AlterConfigsResponse)
		if resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
			t.Errorf("v%d: segment.bytes=1 code %d", v, resp.Resources[0].ErrorCode)
		}
		req.Resources[0].Configs = req.Resources[0].Configs[:1]
		resp = adminRun(t, b, req, v).(*kmsg.AlterConfigsResponse)
		if resp.Resources[0].ErrorCode != 0 || b.currentImage().Topics["t"].Configs["retention.ms"] != "" {
			t.Errorf("v%d: validate-only code %d, configs %v", v, resp.Resources[0].ErrorCode, b.currentImage().Topics["t"].Configs)
		}
	}

	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = true
		add := func(typ kmsg.ConfigResourceType, name string, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.Configs = typ, name, cfgs
			req.Resources = append(req.Resources, rr)
		}
		add(2, "t", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: s("delete")},
			kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "segment.ms", Op: kmsg.IncrementalAlterConfigOpDelete})
		add(2, "t2", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: s("1")})
		add(2, "t3", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet})
		add(4, "1", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "num.partitions", Op: kmsg.IncrementalAlterConfigOpSet, Value: s("3")})
		add(4, "1")
		resp := adminRun(t, b, req, v).(*kmsg.IncrementalAlterConfigsResponse)
		want := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
		for i, w := range want {
			if got := resp.Resources[i].ErrorCode; got != w {
				t.Errorf("v%d resource %d: code %d, want %d (%v)", v, i, got, w, resp.Resources[i].ErrorMessage)
			}
		}
		if b.currentImage().Topics["t"].Configs["cleanup.policy"] != "compact" {
			t.Errorf("v%d: validate-only changed the topic", v)
		}
		// SUBTRACT on a config that is not a list.
		req.Resources = req.Resources[:1]
		req.Resources[0].Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSubtract, Value: s("1")}}
		if resp = adminRun(t, b, req, v).(*kmsg.IncrementalAlterConfigsResponse); resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
			t.Errorf("v%d: SUBTRACT on a long: code %d", v, resp.Resources[0].ErrorCode)
		}
	}
}

func TestDeleteTopicsHandlerErrors(t *testing.T) {
	b := adminTestBroker(t, nil)
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrDeleteTopicsRequest()
		names := []string{"missing", "dup", "dup"}
		if v < 6 {
			req.TopicNames = names
		} else {
			for _, n := range names {
				n := n
				req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: &n})
			}
			id := [16]byte{1, 2, 3}
			both := "x"
			req.Topics = append(req.Topics,
				kmsg.DeleteTopicsRequestTopic{TopicID: id},
				kmsg.DeleteTopicsRequestTopic{},
				kmsg.DeleteTopicsRequestTopic{Topic: &both, TopicID: id},
				kmsg.DeleteTopicsRequestTopic{TopicID: [16]byte{9}},
				kmsg.DeleteTopicsRequestTopic{TopicID: [16]byte{9}})
		}
		resp := adminRun(t, b, req, v).(*kmsg.DeleteTopicsResponse)
		want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code}
		if v >= 6 {
			want = append(want, kerr.UnknownTopicID.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code)
		}
		if len(resp.Topics) != len(want) {
			t.Fatalf("v%d: %d topics, want %d", v, len(resp.Topics), len(want))
		}
		for i, w := range want {
			if resp.Topics[i].ErrorCode != w {
				t.Errorf("v%d topic %d: code %d, want %d", v, i, resp.Topics[i].ErrorCode, w)
			}
		}
		if *resp.Topics[0].Topic != "missing" || (v >= 5) != (resp.Topics[0].ErrorMessage != nil) {
			t.Errorf("v%d: %+v", v, resp.Topics[0])
		}
	}
}

func TestCreatePartitionsHandlerErrors(t *testing.T) {
	b := adminTestBroker(t, nil)
	adminAddTopic(t, b, "t", 2, 0, nil)
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.ValidateOnly = true
		req.Topics = []kmsg.CreatePartitionsRequestTopic{
			{Topic: "missing", Count: 3},
			{Topic: "dup", Count: 3}, {Topic: "dup", Count: 3},
			{Topic: "t", Count: 2},
			{Topic: "t", Count: 4, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}},
		}
		resp := adminRun(t, b, req, v).(*kmsg.CreatePartitionsResponse)
		want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
		if len(resp.Topics) != len(want) {
			t.Fatalf("v%d: %d topics: %+v", v, len(resp.Topics), resp.Topics)
		}
		for i, w := range want {
			if resp.Topics[i].ErrorCode != w || resp.Topics[i].ErrorMessage == nil {
				t.Errorf("v%d topic %d: code %d, want %d", v, i, resp.Topics[i].ErrorCode, w)
			}
		}
		for _, tc := range []struct {
			tp   kmsg.CreatePartitionsRequestTopic
			want int16
		}{
			{kmsg.CreatePartitionsRequestTopic{Topic: "t", Count: 2}, kerr.InvalidPartitions.Code},
			{kmsg.CreatePartitionsRequestTopic{Topic: "t", Count: 1}, kerr.InvalidPartitions.Code},
			{kmsg.CreatePartitionsRequestTopic{Topic: "t", Count: 4}, 0},
			{kmsg.CreatePartitionsRequestTopic{Topic: "t", Count: 4, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}, {Replicas: []int32{1}}}}, 0},
			{kmsg.CreatePartitionsRequestTopic{Topic: "t", Count: 4, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}}, kerr.InvalidReplicaAssignment.Code},
			{kmsg.CreatePartitionsRequestTopic{Topic: "t", Count: 3, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{2}}}}, kerr.InvalidReplicaAssignment.Code},
			{kmsg.CreatePartitionsRequestTopic{Topic: "t", Count: 3, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1, 1}}}}, kerr.InvalidReplicaAssignment.Code},
		} {
			req.Topics = []kmsg.CreatePartitionsRequestTopic{tc.tp}
			resp := adminRun(t, b, req, v).(*kmsg.CreatePartitionsResponse)
			if got := resp.Topics[0].ErrorCode; got != tc.want {
				t.Errorf("v%d %+v: code %d, want %d", v, tc.tp, got, tc.want)
			}
		}
		if n := len(b.currentImage().Topics["t"].Partitions); n != 2 {
			t.Fatalf("validate-only grew the topic to %d", n)
		}
	}
}

func TestDescribeClusterHandler(t *testing.T) {
	b := adminTestBroker(t, nil)
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		resp := adminRun(t, b, req, v).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != "test-cluster" || resp.ControllerID != 1 || len(resp.Brokers) != 1 ||
			resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != "127.0.0.1" || resp.Brokers[0].Port != 9092 ||
			resp.Brokers[0].Rack != nil || resp.ClusterAuthorizedOperations != -2147483648 || resp.EndpointType != 1 {
			t.Errorf("v%d: %+v", v, resp)
		}
		req.IncludeClusterAuthorizedOperations = true
		if resp = adminRun(t, b, req, v).(*kmsg.DescribeClusterResponse); resp.ClusterAuthorizedOperations != metadata.ClusterAuthorizedOps {
			t.Errorf("v%d: authorized ops %d", v, resp.ClusterAuthorizedOperations)
		}
	}
	for typ, want := range map[int8]int16{2: kerr.MismatchedEndpointType.Code, 3: kerr.UnsupportedEndpointType.Code} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.EndpointType = typ
		resp := adminRun(t, b, req, 1).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != want || resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
			t.Errorf("endpoint type %d: %+v", typ, resp)
		}
	}
}

func TestDeleteRecordsHandler(t *testing.T) {
	b := adminTestBroker(t, nil)
	ti := adminAddTopic(t, b, "t", 2, 0, nil)
	adminAddTopic(t, b, "c", 1, 0, map[string]string{"cleanup.policy": "compact"})
	adminProduce(t, b, ti, 0, 10)
	adminProduce(t, b, ti, 1, 4)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Topics = []kmsg.DeleteRecordsRequestTopic{
			{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 3 + int64(v)}, {Partition: 1, Offset: 5}, {Partition: 2, Offset: 0}}},
			{Topic: "c", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}},
			{Topic: "missing", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}},
		}
		resp := adminRun(t, b, req, v).(*kmsg.DeleteRecordsResponse)
		ps := resp.Topics[0].Partitions
		if ps[0].ErrorCode != 0 || ps[0].LowWatermark != 3+int64(v) {
			t.Errorf("v%d p0: %+v", v, ps[0])
		}
		if ps[1].ErrorCode != kerr.OffsetOutOfRange.Code || ps[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d p1/p2: %+v", v, ps)
		}
		if c := resp.Topics[1].Partitions[0].ErrorCode; c != kerr.PolicyViolation.Code {
			t.Errorf("v%d compacted: code %d", v, c)
		}
		if c := resp.Topics[2].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d missing: code %d", v, c)
		}
	}
	// Lower than the log start offset: unchanged; -1: the high watermark.
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}, {Partition: 1, Offset: -1}}}}
	resp := adminRun(t, b, req, 2).(*kmsg.DeleteRecordsResponse)
	if ps := resp.Topics[0].Partitions; ps[0].ErrorCode != 0 || ps[0].LowWatermark != 5 || ps[1].ErrorCode != 0 || ps[1].LowWatermark != 4 {
		t.Errorf("below start / -1: %+v", ps)
	}
	req.Topics[0].Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -2}}
	if resp = adminRun(t, b, req, 2).(*kmsg.DeleteRecordsResponse); resp.Topics[0].Partitions[0].ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("offset -2: %+v", resp.Topics[0].Partitions[0])
	}
	body, err := os.ReadFile(filepath.Join(b.cfg.LogDir, logStartCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "t 0 5\n") || !strings.Contains(string(body), "t 1 4\n") {
		t.Errorf("checkpoint:\n%s", body)
	}
}

func TestOffsetForLeaderEpochHandler(t *testing.T) {
	b := adminTestBroker(t, nil)
	ti := adminAddTopic(t, b, "t", 1, 3, nil)
	adminProduce(t, b, ti, 0, 5)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		mk := func(current, epoch int32) kmsg.OffsetForLeaderEpochRequestTopicPartition {
			return kmsg.OffsetForLeaderEpochRequestTopicPartition{Partition: 0, CurrentLeaderEpoch: current, LeaderEpoch: epoch}
		}
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{
			{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{mk(3, 3), mk(-1, 2), mk(-1, 4), mk(2, 3), mk(4, 3),
				{Partition: 1, CurrentLeaderEpoch: -1, LeaderEpoch: 3}}},
			{Topic: "missing", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{mk(-1, 0)}},
		}
		resp := adminRun(t, b, req, v).(*kmsg.OffsetForLeaderEpochResponse)
		type res struct {
			code  int16
			epoch int32
			end   int64
		}
		want := []res{{0, 3, 5}, {0, 2, 0}, {0, -1, -1},
			{kerr.FencedLeaderEpoch.Code, -1, -1}, {kerr.UnknownLeaderEpoch.Code, -1, -1}, {kerr.UnknownTopicOrPartition.Code, -1, -1}}
		if v < 2 { // no current_leader_epoch on the wire: no fencing
			want[3], want[4] = res{0, 3, 5}, res{0, 3, 5}
		}
		for i, w := range want {
			p := resp.Topics[0].Partitions[i]
			if v == 0 {
				w.epoch = -1 // not on the wire in v0; decodes to the default
			}
			if p.ErrorCode != w.code || p.LeaderEpoch != w.epoch || p.EndOffset != w.end {
				t.Errorf("v%d partition entry %d: %+v, want %+v", v, i, p, w)
			}
		}
		if c := resp.Topics[1].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d missing: %d", v, c)
		}
	}
}

func TestDescribeLogDirsHandler(t *testing.T) {
	b := adminTestBroker(t, nil)
	ti := adminAddTopic(t, b, "t", 3, 0, nil)
	adminAddTopic(t, b, "u", 1, 0, nil)
	adminProduce(t, b, ti, 1, 3)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		resp := adminRun(t, b, req, v).(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) != 1 || !filepath.IsAbs(resp.Dirs[0].Dir) || resp.Dirs[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Dirs)
		}
		d := resp.Dirs[0]
		if len(d.Topics) != 2 || d.Topics[0].Topic != "t" || len(d.Topics[0].Partitions) != 3 || d.Topics[1].Topic != "u" {
			t.Fatalf("v%d: topics %+v", v, d.Topics)
		}
		if p := d.Topics[0].Partitions[1]; p.Partition != 1 || p.Size <= 0 || d.Topics[0].Partitions[0].Size != 0 {
			t.Errorf("v%d: sizes %+v", v, d.Topics[0].Partitions)
		}
		if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes) {
			t.Errorf("v4: total %d usable %d", d.TotalBytes, d.UsableBytes)
		}
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "t", Partitions: []int32{1, 7}}, {Topic: "missing", Partitions: []int32{0}}}
		resp = adminRun(t, b, req, v).(*kmsg.DescribeLogDirsResponse)
		if d := resp.Dirs[0]; len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 || d.Topics[0].Partitions[0].Partition != 1 {
			t.Errorf("v%d filtered: %+v", v, d.Topics)
		}
	}
}
