package appliance

import (
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share, classic and consumer groups share one group id namespace: a
// partition's share.Manager is its group.Manager's group.ShareGroups, so
// the group coordinator refuses a share group's id and creates no group
// under it (appliance/group's TestShareGroupIDRefusedByOtherProtocols
// drives the classic and consumer APIs against it), lists it and deletes
// it.
func TestShareGroupIDRefusedByOtherProtocols(t *testing.T) {
	b, cl, _ := shareTestClient(t)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "s", "a", []string{"st"}
	if r := shareReq(t, cl, hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("share join: %d", r.ErrorCode)
	}
	op := b.coord.groups.partitionOf("s")
	commitErrs := make(chan []*kerr.Error, 1)
	delErr := make(chan *kerr.Error, 1)
	var hasClassic, deleted, deletedOther bool
	var listed []string
	op.st.loop.Call(func() {
		m := op.mgr.Manager
		m.TxnCommitOffsets(group.TxnCommit{Group: "s", Generation: -1, ProducerID: 1, Offsets: []group.TxnOffset{{Topic: "st", LeaderEpoch: -1}}},
			func(e []*kerr.Error) { commitErrs <- e })
		hasClassic = m.HasGroup("s")
		op.share.EachShareGroup(func(id, state string) { listed = append(listed, id+":"+state) })
		deleted = op.share.DeleteShareGroup("s", func(err *kerr.Error) { delErr <- err })
		deletedOther = op.share.DeleteShareGroup("other", func(*kerr.Error) {})
	})
	timeout := time.After(10 * time.Second)
	select {
	case errs := <-commitErrs:
		if len(errs) != 1 || errs[0] != kerr.GroupIDNotFound {
			t.Fatalf("offset commit to a share group: %v", errs)
		}
	case <-timeout:
		t.Fatal("the offset commit was not answered")
	}
	if hasClassic {
		t.Fatal("a classic group was created under the share group's id")
	}
	if len(listed) != 1 || listed[0] != "s:Stable" {
		t.Fatalf("listed share groups: %v", listed)
	}
	select {
	case err := <-delErr:
		if !deleted || err != kerr.NonEmptyGroup {
			t.Fatalf("deleting a share group with a member: %v %v", deleted, err)
		}
	case <-timeout:
		t.Fatal("the share group delete was not answered")
	}
	if deletedOther {
		t.Fatal("a group that is no share group was deleted as one")
	}
}
