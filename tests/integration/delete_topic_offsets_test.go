package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
