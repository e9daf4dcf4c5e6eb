package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeleteTopicDropsCommittedOffsets commits offsets of two groups with
// franz-go's admin client, deletes one topic, and checks with the same
// client that the deleted topic's offsets are gone (also after the topic is
// created again and after a restart), the other topic's offsets are kept,
// and the group that only had offsets of the deleted topic is removed.
func TestDeleteTopicDropsCommittedOffsets(t *testing.T) {
	b := startBroker(t, t.TempDir())
	ctx := t.Context()
	createTopic(t, ctx, b, "doomed", 2)
	createTopic(t, ctx, b, "kept", 1)
	adm := newAdmin(t, b)
	commit := func(group string, os kadm.Offsets) {
		t.Helper()
		if r, err := adm.CommitOffsets(ctx, group, os); err != nil || r.Error() != nil {
			t.Fatalf("CommitOffsets %s: %v %v", group, err, r.Error())
		}
	}
	both := kadm.Offsets{}
	both.Add(kadm.Offset{Topic: "doomed", Partition: 0, At: 5, LeaderEpoch: -1})
	both.Add(kadm.Offset{Topic: "doomed", Partition: 1, At: 7, LeaderEpoch: -1})
	both.Add(kadm.Offset{Topic: "kept", Partition: 0, At: 3, LeaderEpoch: -1})
	commit("g-both", both)
	only := kadm.Offsets{}
	only.Add(kadm.Offset{Topic: "doomed", Partition: 0, At: 9, LeaderEpoch: -1})
	commit("g-only", only)

	r, err := adm.DeleteTopics(ctx, "doomed")
	if err != nil || r.Error() != nil {
		t.Fatalf("DeleteTopics: %v %v", err, r.Error())
	}
	check := func(when string) {
		t.Helper()
		var got kadm.OffsetResponses
		waitFor(t, 10*time.Second, "offsets of the deleted topic to go ("+when+")", func() bool {
			var err error
			got, err = adm.FetchOffsets(ctx, "g-both")
			if err != nil {
				t.Fatalf("FetchOffsets: %v", err)
			}
			_, has := got["doomed"]
			return !has
		})
		k, ok := got.Lookup("kept", 0)
		if !ok || k.Err != nil || k.At != 3 {
			t.Fatalf("%s: kept-0 offset %+v (found %v), want 3", when, k, ok)
		}
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatalf("ListGroups: %v", err)
		}
		if _, ok := groups["g-only"]; ok {
			t.Fatalf("%s: group g-only still listed after its only topic was deleted: %v", when, groups.Groups())
		}
		if _, ok := groups["g-both"]; !ok {
			t.Fatalf("%s: group g-both not listed: %v", when, groups.Groups())
		}
		o, err := adm.FetchOffsets(ctx, "g-only")
		if err != nil {
			t.Fatalf("FetchOffsets g-only: %v", err)
		}
		if _, has := o["doomed"]; has {
			t.Fatalf("%s: g-only still has offsets %v", when, o)
		}
	}
	check("after delete")
	createTopic(t, ctx, b, "doomed", 2)
	check("after re-create")
	b.Restart()
	adm = newAdmin(t, b)
	check("after restart")
}

// TestDeleteLongTopicNameAndStrayDir deletes a topic whose name is near
// Kafka's 249-character limit (its "-<p>.<id>-delete" name must be cut
// to 255 bytes) and creates it again: the new topic must not serve the
// deleted records. It also plants a partition directory whose
// partition.metadata names another topic id (the remains of a deleted
// topic) and checks that creating the topic moves it aside.
func TestDeleteLongTopicNameAndStrayDir(t *testing.T) {
	data := t.TempDir()
	stray := filepath.Join(data, "stray-0")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "partition.metadata"), []byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "left-behind"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, data)
	ctx := t.Context()
	long := strings.Repeat("y", 240)
	createTopic(t, ctx, b, long, 1)
	cl := newClient(t, b)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: long, Value: []byte("old-record")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	adm := newAdmin(t, b)
	if r, err := adm.DeleteTopics(ctx, long); err != nil || r.Error() != nil {
		t.Fatalf("DeleteTopics: %v %v", err, r.Error())
	}
	waitFor(t, 10*time.Second, "the deleted partition directory to go", func() bool {
		_, err := os.Stat(filepath.Join(data, long+"-0"))
		return os.IsNotExist(err)
	})
	createTopic(t, ctx, b, long, 1)
	lo, err := adm.ListEndOffsets(ctx, long)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	if o, ok := lo.Lookup(long, 0); !ok || o.Err != nil || o.Offset != 0 {
		t.Fatalf("end offset of the re-created topic: %+v (found %v), want 0", o, ok)
	}

	createTopic(t, ctx, b, "stray", 1)
	if _, err := os.Stat(filepath.Join(stray, "left-behind")); !os.IsNotExist(err) {
		t.Fatalf("stray directory content still in %s (stat: %v)", stray, err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "stray", Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatalf("produce to the re-created stray topic: %v", err)
	}
	lo, err = adm.ListEndOffsets(ctx, "stray")
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	if o, ok := lo.Lookup("stray", 0); !ok || o.Err != nil || o.Offset != 1 {
		t.Fatalf("end offset of stray: %+v (found %v), want 1", o, ok)
	}
}
