package metadata

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeHost is a Host over an in-memory image: Commit applies the records,
// Publish stores the next image and records the call. It checks that the
// controller commits and publishes under its lock.
type fakeHost struct {
	t       *testing.T
	mu      sync.Mutex
	locked  bool
	dir     string
	im      *Image
	calls   []string // "commit", "publish", in order
	pubErr  error    // returned by the next Publish, once
	commitN int      // Commit fails with ErrStorage after this many commits (-1: never)
}

func newFakeHost(t *testing.T) *fakeHost {
	return &fakeHost{t: t, dir: t.TempDir(), im: NewImage(testChecks{}), commitN: -1}
}

func (f *fakeHost) Lock()   { f.mu.Lock(); f.locked = true }
func (f *fakeHost) Unlock() { f.locked = false; f.mu.Unlock() }

func (f *fakeHost) Image() *Image { return f.im }

func (f *fakeHost) Commit(im *Image, recs []Record) (*Image, error) {
	if !f.locked {
		f.t.Error("Commit outside the controller lock")
	}
	if f.commitN == 0 {
		return nil, fmt.Errorf("cannot append: %w", ErrStorage)
	}
	f.commitN--
	f.calls = append(f.calls, "commit")
	return im.Apply(im.Offset+int64(len(recs)), recs)
}

func (f *fakeHost) DeferUndo(after int64, recs []Record) { f.calls = append(f.calls, "defer-undo") }

func (f *fakeHost) Publish(prev, next *Image) error {
	if !f.locked {
		f.t.Error("Publish outside the controller lock")
	}
	f.calls = append(f.calls, "publish")
	f.im = next
	err := f.pubErr
	f.pubErr = nil
	return err
}

func (f *fakeHost) Settings() Settings {
	return Settings{NodeID: 7, ClusterID: "cid", NumPartitions: 3, DefaultReplicationFactor: 1, DeleteTopicEnable: true}
}

func (f *fakeHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (f *fakeHost) PartitionDir(topic string, p int32) string {
	return filepath.Join(f.dir, fmt.Sprintf("%s-%d", topic, p))
}

func (f *fakeHost) InternalTopic(name string) bool { return name == "__internal" }

func (f *fakeHost) EffectiveTopicConfigs(t *TopicImage) map[string]string { return t.Configs }

func (f *fakeHost) TopicConfig(name string) (TopicConfigDef, bool) {
	if name != "retention.ms" {
		return TopicConfigDef{}, false
	}
	return TopicConfigDef{Name: name, BrokerProp: "log.retention.ms", Default: "604800000", Kind: "long", Type: kmsg.ConfigTypeLong}, true
}

func (f *fakeHost) TopicConfigNames() []string { return []string{"retention.ms"} }

func (f *fakeHost) ValidateTopicConfig(name, value string) error {
	if _, ok := f.TopicConfig(name); !ok {
		return fmt.Errorf("unknown topic config %q", name)
	}
	if value == "" {
		return errors.New("empty value")
	}
	return nil
}

func (f *fakeHost) BrokerDefault(string) (string, bool)   { return "", false }
func (f *fakeHost) BrokerPropType(string) kmsg.ConfigType { return kmsg.ConfigTypeUnknown }

func (f *fakeHost) Advertised(*wire.Request) (string, int32) { return "h", 9092 }

func (f *fakeHost) AlterGroupConfigs(string, []kmsg.IncrementalAlterConfigsRequestResourceConfig, bool) error {
	return nil
}

func (f *fakeHost) DescribeGroupConfigs(*Image, string, []string, bool) []kmsg.DescribeConfigsResponseResourceConfig {
	return nil
}

func TestControllerCreateTopicCommitsThenPublishes(t *testing.T) {
	f := newFakeHost(t)
	c := NewController(f)
	// Validating only neither commits nor creates directories.
	ti, err := c.CreateTopic(TopicSpec{Name: "t", Partitions: -1, ReplicationFactor: -1}, true)
	if err != nil || len(ti.Partitions) != 3 || len(f.calls) != 0 {
		t.Fatalf("validate only: %v, %v, calls %v", ti, err, f.calls)
	}
	if _, err := os.Stat(f.PartitionDir("t", 0)); !os.IsNotExist(err) {
		t.Fatalf("validate only created a directory: %v", err)
	}
	ti, err = c.CreateTopic(TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.calls) != "[commit publish]" || f.im.Topics["t"] != ti || ti.Partitions[1].Leader != 7 || ti.Configs["retention.ms"] != "1" {
		t.Fatalf("calls %v, image topic %+v", f.calls, f.im.Topics["t"])
	}
	for p := int32(0); p < 2; p++ {
		if st, err := os.Stat(f.PartitionDir("t", p)); err != nil || !st.IsDir() {
			t.Fatalf("partition %d directory: %v", p, err)
		}
	}
	if _, err := c.CreateTopic(TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}, false); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := c.CreateTopic(TopicSpec{Name: "u", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"no.such": "1"}}, false); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("unknown config: %v", err)
	}
}

func TestControllerCreateTopicRollsBackWhenPartitionsDoNotOpen(t *testing.T) {
	f := newFakeHost(t)
	f.pubErr = errors.New("cannot open partition")
	_, err := NewController(f).CreateTopic(TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}, false)
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("err %v, want KAFKA_STORAGE_ERROR", err)
	}
	// The removal is committed and published after the creation.
	if fmt.Sprint(f.calls) != "[commit publish commit publish]" || f.im.Topics["t"] != nil {
		t.Fatalf("calls %v, topic %+v", f.calls, f.im.Topics["t"])
	}

	// When the removal cannot be committed, it is deferred and the image
	// before the topic is published again.
	f = newFakeHost(t)
	f.pubErr = errors.New("cannot open partition")
	f.commitN = 1
	if _, err := NewController(f).CreateTopic(TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}, false); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("err %v, want KAFKA_STORAGE_ERROR", err)
	}
	if fmt.Sprint(f.calls) != "[commit publish defer-undo publish]" || f.im.Topics["t"] != nil {
		t.Fatalf("calls %v, topic %+v", f.calls, f.im.Topics["t"])
	}
}

func TestControllerCommitFailureRemovesDirectories(t *testing.T) {
	f := newFakeHost(t)
	f.commitN = 0
	_, err := NewController(f).CreateTopic(TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1}, false)
	if !errors.Is(err, kerr.KafkaStorageError) || len(f.calls) != 0 {
		t.Fatalf("err %v, calls %v", err, f.calls)
	}
	if _, err := os.Stat(f.PartitionDir("t", 0)); !os.IsNotExist(err) {
		t.Fatalf("directory left after a failed commit: %v", err)
	}
}

func TestControllerDeleteAndGrow(t *testing.T) {
	f := newFakeHost(t)
	c := NewController(f)
	for _, n := range []string{"t", "__internal"} {
		if _, err := c.CreateTopic(TopicSpec{Name: n, Partitions: 1, ReplicationFactor: 1}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CreatePartitions("t", 1, false); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("same count: %v", err)
	}
	if err := c.CreatePartitions("t", 4, false); err != nil || len(f.im.Topics["t"].Partitions) != 4 {
		t.Fatalf("grow: %v", err)
	}
	v := "5"
	if err := c.AlterTopicConfigs("t", []ConfigChange{{Key: "retention.ms", Value: &v}}, false, false); err != nil || f.im.Topics["t"].Configs["retention.ms"] != "5" {
		t.Fatalf("alter: %v", err)
	}
	if err := c.AlterTopicConfigs("t", nil, true, false); err != nil || len(f.im.Topics["t"].Configs) != 0 {
		t.Fatalf("replace with nothing: %v, %v", err, f.im.Topics["t"].Configs)
	}
	if _, err := c.DeleteTopic("__internal", TopicID{}); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("internal topic: %v", err)
	}
	id := f.im.Topics["t"].ID
	if _, err := c.DeleteTopic("", id); err != nil || f.im.Topics["t"] != nil {
		t.Fatalf("delete by id: %v", err)
	}
	if _, err := c.DeleteTopic("", id); !errors.Is(err, kerr.UnknownTopicID) {
		t.Fatalf("delete again: %v", err)
	}
}

func TestRegisterDescribeCluster(t *testing.T) {
	tab := wire.NewTable()
	Register(tab, newFakeHost(t))
	if tab.Len() != 10 {
		t.Fatalf("%d APIs registered, want 10", tab.Len())
	}
	api, ok := tab.Lookup(60)
	if !ok {
		t.Fatal("DescribeCluster not registered")
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp := api.Handle(&wire.Request{Key: 60, Version: 0, Req: req}).(*kmsg.DescribeClusterResponse)
	if resp.ClusterID != "cid" || resp.ControllerID != 7 || len(resp.Brokers) != 1 || resp.Brokers[0].Host != "h" ||
		resp.Brokers[0].Port != 9092 || resp.ClusterAuthorizedOperations != ClusterAuthorizedOps {
		t.Fatalf("response %+v", resp)
	}
}
