package appliance

// Dynamic broker configs (issue 43, item 3) through kadm: the cluster
// default (broker resource "") and this broker (its id), applied without a
// restart, described with Kafka's sources and synonyms, refused with
// Kafka's errors for what cannot change, and kept across a restart.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerConfig finds key in a kadm broker description.
func brokerConfig(t *testing.T, rcs kadm.ResourceConfigs, key string) (kadm.Config, bool) {
	t.Helper()
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe: %+v", rcs)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == key {
			return c, true
		}
	}
	return kadm.Config{}, false
}

func TestDynamicBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"log.dirs": dir, "log.cleaner.enable": "false", "metrics.listener": "none"}
	b := startTestBroker(t, props)
	node := b.cfg.NodeID
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clients := func(b *Broker) (*kgo.Client, *kadm.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ProducerBatchCompression(kgo.SnappyCompression()),
			kgo.RecordRetries(2), kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		return cl, kadm.NewClient(cl)
	}
	cl, adm := clients(b)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "dyn"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("2000000")}, "own"); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 5000)
	rand.Read(big) // incompressible: the batch stays above 1000 bytes
	produce := func(cl *kgo.Client, topic string) error {
		var err error
		wait.Every(20*time.Millisecond, 20*time.Second, func() bool {
			err = cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: big}).FirstErr()
			return !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, kerr.NotLeaderForPartition)
		})
		return err
	}
	if err := produce(cl, "dyn"); err != nil {
		t.Fatalf("5000 bytes before any dynamic config: %v", err)
	}

	// Cluster default message.max.bytes=1000: topics without their own
	// max.message.bytes take it at once.
	alter := func(configs []kadm.AlterConfig, brokers ...int32) error {
		rs, err := adm.AlterBrokerConfigs(ctx, configs, brokers...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return errors.Join(r.Err, errors.New(r.ErrMessage))
			}
		}
		return nil
	}
	if err := alter([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: kmsg.StringPtr("1000")}}); err != nil {
		t.Fatalf("set cluster-wide message.max.bytes: %v", err)
	}
	if err := produce(cl, "dyn"); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("5000 bytes after message.max.bytes=1000: %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := produce(cl, "own"); err != nil {
		t.Fatalf("5000 bytes to a topic with its own max.message.bytes: %v", err)
	}

	// This broker: compression.type=zstd recompresses from the next batch.
	if err := alter([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: kmsg.StringPtr("zstd")}}, node); err != nil {
		t.Fatalf("set compression.type on broker %d: %v", node, err)
	}
	if err := produce(cl, "own"); err != nil {
		t.Fatal(err)
	}
	k := dialK(t, b)
	checkLastCodec := func(k *kconn, topic string, want int) {
		t.Helper()
		hs := fetchedBatches(t, kFetch(k, topic, 0, 12).RecordBatches)
		if len(hs) == 0 || hs[len(hs)-1].Compression() != want {
			t.Fatalf("%s: last batch codec, want %d: %+v", topic, want, hs)
		}
	}
	checkLastCodec(k, "own", nvme.CompressionZstd)

	// The cleaner's backoff and I/O rate change without a restart.
	if err := alter([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.cleaner.backoff.ms", Value: kmsg.StringPtr("1234")},
		{Op: kadm.SetConfig, Name: "log.cleaner.io.max.bytes.per.second", Value: kmsg.StringPtr("5000000")}}, node); err != nil {
		t.Fatalf("set cleaner configs on broker %d: %v", node, err)
	}
	if backoff, rate := b.store.cleaner.Dynamic(); backoff != 1234*time.Millisecond || rate != 5e6 {
		t.Fatalf("cleaner after the alter: backoff %v, rate %v", backoff, rate)
	}

	// DescribeConfigs: sources and synonyms as Kafka gives them.
	rcs, err := adm.DescribeBrokerConfigs(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := brokerConfig(t, rcs, "compression.type")
	if !ok || c.MaybeValue() != "zstd" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(c.Synonyms) < 2 ||
		c.Synonyms[0].Source != kmsg.ConfigSourceDynamicBrokerConfig || c.Synonyms[len(c.Synonyms)-1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("broker %d compression.type: %+v", node, c)
	}
	c, ok = brokerConfig(t, rcs, "message.max.bytes")
	if !ok || c.MaybeValue() != "1000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("broker %d message.max.bytes: %+v", node, c)
	}
	rcs, err = adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || len(rcs[0].Configs) != 1 || rcs[0].Configs[0].Key != "message.max.bytes" || rcs[0].Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("cluster-wide dynamic configs: %+v", rcs)
	}
	tcs, err := adm.DescribeTopicConfigs(ctx, "dyn")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := brokerConfig(t, tcs, "max.message.bytes"); !ok || c.MaybeValue() != "1000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("topic dyn max.message.bytes: %+v", c)
	}

	// What cannot change answers as Kafka does.
	for _, bad := range []struct {
		name, value string
		broker      []int32
		want        error
	}{
		{"log.dirs", "/tmp/x", []int32{node}, kerr.InvalidRequest},
		{"node.id", "7", []int32{node}, kerr.InvalidRequest},
		{"log.retention.check.interval.ms", "1000", nil, kerr.InvalidRequest},
		{"message.max.bytes", "-5", nil, kerr.InvalidConfig},
		{"compression.zstd.level", "99", []int32{node}, kerr.InvalidConfig},
		{"log.cleaner.backoff.ms", "-1", []int32{node}, kerr.InvalidConfig},
		{"log.cleaner.threads", "2", []int32{node}, kerr.InvalidRequest},
	} {
		err := alter([]kadm.AlterConfig{{Op: kadm.SetConfig, Name: bad.name, Value: kmsg.StringPtr(bad.value)}}, bad.broker...)
		if !errors.Is(err, bad.want) {
			t.Errorf("%s=%s on %v: %v, want %v", bad.name, bad.value, bad.broker, err, bad.want)
		} else if bad.want == kerr.InvalidRequest && bad.broker != nil && bad.broker[0] == node && !strings.Contains(err.Error(), bad.name) {
			t.Errorf("%s: the message does not name the key: %v", bad.name, err)
		}
	}

	// Another broker's id (kadm would not send it: raw).
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(node+7))
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "log.retention.ms", kmsg.StringPtr("1000")
	rr.Configs = append(rr.Configs, rc)
	req.Resources = append(req.Resources, rr)
	if resp := k.do(req, 1).(*kmsg.IncrementalAlterConfigsResponse); resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("alter broker %d (not this one): error %d, want %d", node+7, resp.Resources[0].ErrorCode, kerr.InvalidRequest.Code)
	}

	// Legacy AlterConfigs replaces the cluster default's whole set:
	// message.max.bytes goes, log.retention.ms comes.
	rs, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: kmsg.StringPtr("86400000")}})
	if err != nil || rs[0].Err != nil {
		t.Fatalf("AlterConfigs on the cluster default: %v %+v", err, rs)
	}
	if err := produce(cl, "dyn"); err != nil {
		t.Fatalf("5000 bytes once message.max.bytes is gone: %v", err)
	}
	cl.Close()
	b.Close()

	// After a restart the dynamic configs come back from the metadata log
	// and are in force before the first produce.
	b = startTestBroker(t, props)
	cl, adm = clients(b)
	defer cl.Close()
	rcs, err = adm.DescribeBrokerConfigs(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := brokerConfig(t, rcs, "compression.type"); !ok || c.MaybeValue() != "zstd" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("after restart, compression.type: %+v", c)
	}
	if c, ok := brokerConfig(t, rcs, "log.retention.ms"); !ok || c.MaybeValue() != "86400000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("after restart, log.retention.ms: %+v", c)
	}
	if _, ok := brokerConfig(t, rcs, "message.max.bytes"); ok {
		if c, _ := brokerConfig(t, rcs, "message.max.bytes"); c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("after restart, message.max.bytes: %+v", c)
		}
	}
	if backoff, rate := b.store.cleaner.Dynamic(); backoff != 1234*time.Millisecond || rate != 5e6 {
		t.Errorf("cleaner after restart: backoff %v, rate %v", backoff, rate)
	}
	small := func() {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dyn", Value: bytes.Repeat([]byte("compressible "), 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	small()
	checkLastCodec(dialK(t, b), "dyn", nvme.CompressionZstd)
	// DELETE on this broker's compression.type restores the producer's codec.
	if err := alter([]kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "compression.type"}}, node); err != nil {
		t.Fatal(err)
	}
	small()
	checkLastCodec(dialK(t, b), "dyn", nvme.CompressionSnappy)
}
