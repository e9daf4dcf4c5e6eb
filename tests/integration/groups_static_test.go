package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestGroupsStaticLeaderRejoin: raw JoinGroup/SyncGroup requests. Two
// static members form a Stable group; the leader restarts (a JoinGroup with
// no member id and its instance id). Below v9 the answer names the old
// leader id and no members, so it does not assign; at v9 it is told it
// leads with SkipAssignment (KIP-814). No rebalance: the generation stays
// and its SyncGroup returns its kept assignment.
func TestGroupsStaticLeaderRejoin(t *testing.T) {
	b := startBroker(t, "", groupBrokerOverrides...)
	cl := newClient(t, b)
	defer cl.Close()
	v8 := kversion.Stable()
	v8.SetMaxKeyVersion(11, 5) // JoinGroup v5, as librdkafka 2.0.2 sends it
	cl5 := newClient(t, b, kgo.MaxVersions(v8))
	defer cl5.Close()
	// b waits in its JoinGroup while a rejoins: its own connection.
	clb := newClient(t, b, kgo.MaxVersions(v8))
	defer clb.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const group = "static-rejoin"
	var joinOn func(c5 *kgo.Client, version int16, member, instance string) *kmsg.JoinGroupResponse
	join := func(version int16, member, instance string) *kmsg.JoinGroupResponse {
		return joinOn(cl5, version, member, instance)
	}
	joinOn = func(c5 *kgo.Client, version int16, member, instance string) *kmsg.JoinGroupResponse {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = version
		req.Group, req.MemberID, req.InstanceID = group, member, kmsg.StringPtr(instance)
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 30000, 30000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte("md")
		req.Protocols = append(req.Protocols, p)
		c := cl
		if version < 9 {
			c = c5
		}
		resp, err := req.RequestWith(ctx, c)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("JoinGroup v%d %s: %v code %v", version, instance, err, resp)
		}
		return resp
	}
	sync := func(gen int32, member, instance string, assign map[string]string) string {
		t.Helper()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, kmsg.StringPtr(instance)
		for id, a := range assign {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = id, []byte(a)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("SyncGroup %s: %v %v", member, err, resp)
		}
		return string(resp.MemberAssignment)
	}
	a := join(5, "", "ia")
	if a.LeaderID != a.MemberID {
		t.Fatalf("first member is not the leader: %+v", a)
	}
	sync(a.Generation, a.MemberID, "ia", map[string]string{a.MemberID: "A0"})
	bch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { bch <- joinOn(clb, 5, "", "ib") }()
	var a2 *kmsg.JoinGroupResponse
	waitFor(t, 30*time.Second, "a rejoin completing the rebalance", func() bool {
		a2 = join(5, a.MemberID, "ia")
		return a2.Generation > a.Generation && len(a2.Members) == 2
	})
	bj := <-bch
	gen := a2.Generation
	if got := sync(gen, a.MemberID, "ia", map[string]string{a.MemberID: "A", bj.MemberID: "B"}); got != "A" {
		t.Fatalf("leader assignment %q", got)
	}
	if got := sync(gen, bj.MemberID, "ib", nil); got != "B" {
		t.Fatalf("follower assignment %q", got)
	}
	r5 := join(5, "", "ia")
	if r5.Generation != gen || r5.LeaderID != a.MemberID || r5.MemberID == a.MemberID || len(r5.Members) != 0 || r5.SkipAssignment {
		t.Fatalf("v5 leader restart: gen %d leader %s member %s members %d skip %v; want gen %d leader %s (old id), no members",
			r5.Generation, r5.LeaderID, r5.MemberID, len(r5.Members), r5.SkipAssignment, gen, a.MemberID)
	}
	if got := sync(gen, r5.MemberID, "ia", nil); got != "A" {
		t.Fatalf("restarted leader assignment %q, want A", got)
	}
	r9 := join(9, "", "ia")
	if r9.Generation != gen || r9.LeaderID != r9.MemberID || len(r9.Members) != 2 || !r9.SkipAssignment {
		t.Fatalf("v9 leader restart: gen %d leader %s member %s members %d skip %v; want leader = itself, 2 members, skip",
			r9.Generation, r9.LeaderID, r9.MemberID, len(r9.Members), r9.SkipAssignment)
	}
	if got := sync(gen, bj.MemberID, "ib", nil); got != "B" {
		t.Fatalf("follower assignment after the restarts %q, want B", got)
	}
}
