package group

// Tests of the KIP-848 consumer group state machine (Manager.consumerHeartbeat,
// consumerGroup) driven through Manager with fakeGroupEnv's fake clock and log.

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgHarness drives one Manager with a metadata image of its own.
type cgHarness struct {
	t   *testing.T
	env *fakeGroupEnv
	m   *Manager
	im  *testImage
}

// testImage is an Image of topics only.
type testImage struct {
	offset int64
	topics map[string]testTopic
}

type testTopic struct {
	id         TopicID
	partitions int32
}

func (im *testImage) Offset() int64 { return im.offset }

func (im *testImage) Topic(name string) (TopicID, int32, bool) {
	t, ok := im.topics[name]
	return t.id, t.partitions, ok
}

func (im *testImage) TopicByID(id TopicID) (string, int32, bool) {
	for n, t := range im.topics {
		if t.id == id {
			return n, t.partitions, true
		}
	}
	return "", 0, false
}

func (im *testImage) EachTopic(fn func(name string)) {
	for n := range im.topics {
		fn(n)
	}
}

// testTopicID is a random topic id.
func testTopicID() TopicID {
	var id TopicID
	_, _ = rand.Read(id[:])
	return id
}

func newCGHarness(t *testing.T, topics map[string]int) *cgHarness {
	env := &fakeGroupEnv{t: time.UnixMilli(1_700_000_000_000), ids: map[string]int{}, out: &strings.Builder{}}
	h := &cgHarness{t: t, env: env, m: NewManager(env, DefaultConfig()), im: &testImage{offset: -1, topics: map[string]testTopic{}}}
	for name, n := range topics {
		h.addTopic(name, n)
	}
	return h
}

// addTopic adds (or grows) a topic in a new image.
func (h *cgHarness) addTopic(name string, partitions int) {
	im := &testImage{offset: h.im.offset + 1, topics: map[string]testTopic{}}
	for n, t := range h.im.topics {
		im.topics[n] = t
	}
	id := testTopicID()
	if old, ok := im.topics[name]; ok {
		id = old.id
	}
	im.topics[name] = testTopic{id: id, partitions: int32(partitions)}
	h.im = im
}

func (h *cgHarness) removeTopic(name string) {
	im := &testImage{offset: h.im.offset + 1, topics: map[string]testTopic{}}
	for n, t := range h.im.topics {
		if n != name {
			im.topics[n] = t
		}
	}
	h.im = im
}

// hb sends a heartbeat; owned nil leaves TopicPartitions null.
func (h *cgHarness) hb(a cgHeartbeatArgs) cgHeartbeatResult {
	h.t.Helper()
	if a.group == "" {
		a.group = "g"
	}
	if a.rebalanceTimeoutMillis == 0 {
		a.rebalanceTimeoutMillis = -1
	}
	a.image = h.im
	var res *cgHeartbeatResult
	h.m.consumerHeartbeat(a, func(r cgHeartbeatResult) { res = &r })
	if res == nil {
		h.t.Fatalf("heartbeat %+v was not answered", a)
	}
	return *res
}

func (h *cgHarness) join(member string, topics ...string) cgHeartbeatResult {
	h.t.Helper()
	return h.hb(cgHeartbeatArgs{memberID: member, epoch: 0, rebalanceTimeoutMillis: 30000, names: topics, namesSet: true})
}

// owned lists a member's partitions as "topic:p" sorted, from a result.
func (h *cgHarness) names(s partSet) string {
	var out []string
	for _, tp := range s.sorted() {
		out = append(out, fmt.Sprintf("%s:%d", h.im.nameOf(tp.topic), tp.partition))
	}
	return strings.Join(out, ",")
}

func (h *cgHarness) tps(spec string) partSet {
	out := partSet{}
	if spec == "" {
		return out
	}
	for _, f := range strings.Split(spec, ",") {
		name, p, _ := strings.Cut(f, ":")
		out[tpID{h.im.idOf(name), int32(atoiOr(p, 0))}] = true
	}
	return out
}

func mustOK(t *testing.T, r cgHeartbeatResult) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("unexpected error %v (%s)", r.err, r.msg)
	}
}

func TestConsumerGroupJoinRevokeThenAssign(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 4})
	a := h.join("A", "t")
	mustOK(t, a)
	if a.epoch != 1 || h.names(a.assignment) != "t:0,t:1,t:2,t:3" {
		t.Fatalf("A joined with epoch %d assignment %s, want epoch 1 and every partition", a.epoch, h.names(a.assignment))
	}
	b := h.join("B", "t")
	mustOK(t, b)
	if b.epoch != 2 || len(b.assignment) != 0 {
		t.Fatalf("B joined with epoch %d assignment %s: want epoch 2 and nothing until A revokes", b.epoch, h.names(b.assignment))
	}
	// A learns it must give up two partitions; its epoch stays.
	a = h.hb(cgHeartbeatArgs{memberID: "A", epoch: 1, owned: h.tps("t:0,t:1,t:2,t:3")})
	mustOK(t, a)
	if a.epoch != 1 || len(a.assignment) != 2 {
		t.Fatalf("A: epoch %d assignment %s, want epoch 1 and two partitions kept", a.epoch, h.names(a.assignment))
	}
	kept := a.assignment
	// B may not get them while A owns them.
	b = h.hb(cgHeartbeatArgs{memberID: "B", epoch: 2, owned: partSet{}})
	mustOK(t, b)
	if len(b.assignment) != 0 {
		t.Fatalf("B got %s while A still owns it", h.names(b.assignment))
	}
	// A acknowledges the revocation and moves to epoch 2.
	a = h.hb(cgHeartbeatArgs{memberID: "A", epoch: 1, owned: kept})
	mustOK(t, a)
	if a.epoch != 2 {
		t.Fatalf("A after revoking: epoch %d, want 2", a.epoch)
	}
	b = h.hb(cgHeartbeatArgs{memberID: "B", epoch: 2, owned: partSet{}})
	mustOK(t, b)
	if len(b.assignment) != 2 {
		t.Fatalf("B after A released: %s, want two partitions", h.names(b.assignment))
	}
	for tp := range b.assignment {
		if kept[tp] {
			t.Fatalf("%s assigned to both A and B", h.names(partSet{tp: true}))
		}
	}
	if s := h.m.describeConsumer("g"); s.state != "Stable" || s.epoch != 2 || len(s.members) != 2 {
		t.Fatalf("describe: %+v", s)
	}
	// KIP-1251: A, now at epoch 2, may still commit with epoch 1 the
	// partitions it has held since epoch 1, not the ones it gave to B.
	commit := func(member string, epoch int32, tp tpID) *kerr.Error {
		var out []*kerr.Error
		h.m.commitOffsets(offsetCommitArgs{group: "g", memberID: member, generation: epoch,
			items: []offsetCommitItem{{topic: h.im.nameOf(tp.topic), partition: tp.partition, offset: 1, leaderEpoch: -1, expireTime: -1}}},
			func(e []*kerr.Error) { out = e })
		return out[0]
	}
	for tp := range kept {
		if err := commit("A", 1, tp); err != nil {
			t.Fatalf("A's commit with its previous epoch of a partition it kept: %v", err)
		}
	}
	for tp := range b.assignment {
		if err := commit("A", 1, tp); err != kerr.StaleMemberEpoch {
			t.Fatalf("A's commit with its previous epoch of a partition now B's: %v", err)
		}
		if err := commit("B", 1, tp); err != kerr.StaleMemberEpoch {
			t.Fatalf("B's commit with an epoch before it got the partition: %v", err)
		}
		if err := commit("B", 3, tp); err != kerr.FencedMemberEpoch {
			t.Fatalf("B's commit with a future epoch: %v, want FENCED_MEMBER_EPOCH", err)
		}
	}
	// B leaves: A gets everything at epoch 3.
	l := h.hb(cgHeartbeatArgs{memberID: "B", epoch: cgLeaveEpoch})
	mustOK(t, l)
	if l.epoch != cgLeaveEpoch {
		t.Fatalf("leave answered epoch %d", l.epoch)
	}
	a = h.hb(cgHeartbeatArgs{memberID: "A", epoch: 2, owned: kept})
	if a.epoch != 3 || h.names(a.assignment) != "t:0,t:1,t:2,t:3" {
		t.Fatalf("A after B left: epoch %d %s", a.epoch, h.names(a.assignment))
	}
}

func TestConsumerGroupEpochErrors(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 2})
	mustOK(t, h.join("A", "t"))
	if r := h.hb(cgHeartbeatArgs{memberID: "A", epoch: 5}); r.err != kerr.FencedMemberEpoch {
		t.Fatalf("future epoch: %v, want FENCED_MEMBER_EPOCH", r.err)
	}
	if r := h.hb(cgHeartbeatArgs{memberID: "nobody", epoch: 1}); r.err != kerr.UnknownMemberID {
		t.Fatalf("unknown member: %v", r.err)
	}
	if r := h.hb(cgHeartbeatArgs{group: "other", memberID: "X", epoch: 3}); r.err != kerr.GroupIDNotFound {
		t.Fatalf("unknown group: %v", r.err)
	}
	// A lost the answer that moved it to epoch 2: the previous epoch with a
	// subset of its partitions is accepted.
	mustOK(t, h.join("B", "t"))
	r := h.hb(cgHeartbeatArgs{memberID: "A", epoch: 1, owned: h.tps("t:0,t:1")})
	mustOK(t, r)
	kept := r.assignment
	r = h.hb(cgHeartbeatArgs{memberID: "A", epoch: 1, owned: kept})
	mustOK(t, r)
	if r.epoch != 2 {
		t.Fatalf("epoch %d", r.epoch)
	}
	if r := h.hb(cgHeartbeatArgs{memberID: "A", epoch: 1, owned: kept}); r.err != nil {
		t.Fatalf("previous epoch with owned subset: %v", r.err)
	}
	if r := h.hb(cgHeartbeatArgs{memberID: "A", epoch: 1}); r.err != kerr.FencedMemberEpoch {
		t.Fatalf("previous epoch without owned partitions: %v", r.err)
	}
}

func TestConsumerGroupCommitChecks(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 1})
	commit := func(member string, gen int32) *kerr.Error {
		var out []*kerr.Error
		h.m.commitOffsets(offsetCommitArgs{group: "g", memberID: member, generation: gen,
			items: []offsetCommitItem{{topic: "t", partition: 0, offset: 7, leaderEpoch: -1, expireTime: -1}}},
			func(e []*kerr.Error) { out = e })
		return out[0]
	}
	a := h.join("A", "t")
	mustOK(t, a)
	if err := commit("A", a.epoch); err != nil {
		t.Fatalf("commit at the member epoch: %v", err)
	}
	if err := commit("A", a.epoch-1); err != kerr.StaleMemberEpoch {
		t.Fatalf("stale commit: %v", err)
	}
	// An epoch above the member's was never given to it: fenced, for
	// OffsetCommit and TxnOffsetCommit alike (Kafka's validateOffsetCommit).
	if err := commit("A", a.epoch+1); err != kerr.FencedMemberEpoch {
		t.Fatalf("commit with a future member epoch: %v, want FENCED_MEMBER_EPOCH", err)
	}
	var txnErr []*kerr.Error
	h.m.txnCommitOffsets(offsetCommitArgs{group: "g", memberID: "A", generation: a.epoch + 1, pid: 1,
		items: []offsetCommitItem{{topic: "t", partition: 0, offset: 8, leaderEpoch: -1}}}, func(e []*kerr.Error) { txnErr = e })
	if len(txnErr) != 1 || txnErr[0] != kerr.FencedMemberEpoch {
		t.Fatalf("txn commit with a future member epoch: %v, want FENCED_MEMBER_EPOCH", txnErr)
	}
	h.m.txnCommitOffsets(offsetCommitArgs{group: "g", memberID: "A", generation: a.epoch - 1, pid: 1,
		items: []offsetCommitItem{{topic: "t", partition: 0, offset: 8, leaderEpoch: -1}}}, func(e []*kerr.Error) { txnErr = e })
	if len(txnErr) != 1 || txnErr[0] != kerr.StaleMemberEpoch {
		t.Fatalf("txn commit with an older member epoch: %v, want STALE_MEMBER_EPOCH", txnErr)
	}
	if err := commit("Z", a.epoch); err != kerr.UnknownMemberID {
		t.Fatalf("unknown member commit: %v", err)
	}
	if err := commit("", -1); err != kerr.UnknownMemberID {
		t.Fatalf("admin commit to a group with members: %v", err)
	}
	if err := h.m.checkFetchMember("g", "A", a.epoch+1); err != kerr.StaleMemberEpoch {
		t.Fatalf("fetch with another epoch: %v", err)
	}
	var delErr *kerr.Error
	h.m.deleteGroup("g", func(e *kerr.Error) { delErr = e })
	if delErr != kerr.NonEmptyGroup {
		t.Fatalf("delete of a group with members: %v", delErr)
	}
	mustOK(t, h.hb(cgHeartbeatArgs{memberID: "A", epoch: cgLeaveEpoch}))
	if err := commit("", -1); err != nil {
		t.Fatalf("admin commit to an empty group: %v", err)
	}
	if got := h.m.fetchOffsets("g", map[string][]int32{"t": {0}}, []string{"t"}); got[0].offset != 7 {
		t.Fatalf("fetched %+v", got)
	}
	// A classic join may take the empty group over.
	var jr joinResult
	h.m.join(joinArgs{group: "g", clientID: "c", protocolType: "consumer", sessionTimeout: 10 * time.Second,
		rebalanceTimeout: 10 * time.Second, protocols: []groupProtocol{{name: "range"}}}, func(r joinResult) { jr = r })
	if jr.err != nil && jr.err != kerr.MemberIDRequired {
		t.Fatalf("classic join of an empty consumer group: %v", jr.err)
	}
}

func TestConsumerGroupClassicConflict(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 1})
	mustOK(t, h.join("A", "t"))
	var jr joinResult
	h.m.join(joinArgs{group: "g", clientID: "c", protocolType: "consumer", sessionTimeout: 10 * time.Second,
		rebalanceTimeout: 10 * time.Second, protocols: []groupProtocol{{name: "range"}}}, func(r joinResult) { jr = r })
	if jr.err != kerr.InconsistentGroupProtocol {
		t.Fatalf("classic join of a consumer group with members: %v", jr.err)
	}
	// And the other way: a classic group with members.
	h.m.join(joinArgs{group: "c", clientID: "c", protocolType: "consumer", sessionTimeout: 10 * time.Second,
		rebalanceTimeout: 10 * time.Second, protocols: []groupProtocol{{name: "range"}}}, func(r joinResult) { jr = r })
	if r := h.hb(cgHeartbeatArgs{group: "c", memberID: "A", epoch: 0, rebalanceTimeoutMillis: 1000, names: []string{"t"}, namesSet: true}); r.err != kerr.GroupIDNotFound {
		t.Fatalf("consumer heartbeat to a classic group with members: %v", r.err)
	}
	if top, per := h.m.leave("g", []leaveMember{{memberID: "A"}}); top != nil || per[0] != kerr.UnknownMemberID {
		t.Fatalf("classic leave of a consumer member: %v %v", top, per)
	}
}

func TestConsumerGroupSessionAndRebalanceTimeouts(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 2})
	mustOK(t, h.join("A", "t"))
	mustOK(t, h.join("B", "t"))
	// B stops heartbeating; A keeps going and ends up with both partitions.
	var a cgHeartbeatResult
	for i := 0; i < 12; i++ {
		h.env.advance(5 * time.Second)
		owned := partSet{}
		if a.assignment != nil {
			owned = a.assignment
		}
		a = h.hb(cgHeartbeatArgs{memberID: "A", epoch: h.m.groups["g"].cg.members["A"].epoch, owned: owned})
		mustOK(t, a)
	}
	if len(h.m.groups["g"].cg.members) != 1 {
		t.Fatalf("B was not removed after its session timeout")
	}
	if a.assignment != nil && len(a.assignment) != 2 {
		t.Fatalf("A has %s", h.names(a.assignment))
	}
	// A member that never acknowledges a revocation is fenced after its
	// rebalance timeout.
	h2 := newCGHarness(t, map[string]int{"t": 2})
	h2.hb(cgHeartbeatArgs{memberID: "A", epoch: 0, rebalanceTimeoutMillis: 1000, names: []string{"t"}, namesSet: true})
	mustOK(t, h2.join("B", "t"))
	r := h2.hb(cgHeartbeatArgs{memberID: "A", epoch: 1, owned: h2.tps("t:0,t:1")})
	mustOK(t, r)
	if h2.m.groups["g"].cg.members["A"].state != cgUnrevokedPartitions {
		t.Fatalf("A state %v", h2.m.groups["g"].cg.members["A"].state)
	}
	h2.env.advance(1500 * time.Millisecond)
	if h2.m.groups["g"].cg.members["A"] != nil {
		t.Fatalf("A was not fenced after its rebalance timeout")
	}
	if r := h2.hb(cgHeartbeatArgs{memberID: "A", epoch: 1}); r.err != kerr.UnknownMemberID {
		t.Fatalf("fenced member heartbeat: %v", r.err)
	}
}

func TestConsumerGroupStaticMembers(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 2})
	inst := "i1"
	r := h.hb(cgHeartbeatArgs{memberID: "A", epoch: 0, instanceID: &inst, rebalanceTimeoutMillis: 1000, names: []string{"t"}, namesSet: true})
	mustOK(t, r)
	if r := h.hb(cgHeartbeatArgs{memberID: "A2", epoch: 0, instanceID: &inst, rebalanceTimeoutMillis: 1000, names: []string{"t"}, namesSet: true}); r.err != kerr.UnreleasedInstanceID {
		t.Fatalf("second member with the instance id: %v", r.err)
	}
	l := h.hb(cgHeartbeatArgs{memberID: "A", epoch: cgStaticLeaveEpoch, instanceID: &inst})
	mustOK(t, l)
	if l.epoch != cgStaticLeaveEpoch {
		t.Fatalf("static leave answered epoch %d", l.epoch)
	}
	epoch := h.m.groups["g"].cg.epoch
	r2 := h.hb(cgHeartbeatArgs{memberID: "A2", epoch: 0, instanceID: &inst, rebalanceTimeoutMillis: 1000, names: []string{"t"}, namesSet: true})
	mustOK(t, r2)
	if h.names(r2.assignment) != "t:0,t:1" || h.m.groups["g"].cg.epoch != epoch {
		t.Fatalf("replacement got %s at group epoch %d (was %d)", h.names(r2.assignment), h.m.groups["g"].cg.epoch, epoch)
	}
	if r := h.hb(cgHeartbeatArgs{memberID: "A", epoch: r.epoch, instanceID: &inst}); r.err != kerr.FencedInstanceID {
		t.Fatalf("old incarnation: %v", r.err)
	}
}

func TestConsumerGroupRegexAndMetadataChanges(t *testing.T) {
	h := newCGHarness(t, map[string]int{"orders": 1, "other": 1})
	re := "ord.*"
	a := consumerHeartbeatArgsOrFail(t, "A", re)
	a.image = h.im
	r := h.hb(a)
	mustOK(t, r)
	if h.names(r.assignment) != "orders:0" {
		t.Fatalf("regex assignment %s", h.names(r.assignment))
	}
	// A new matching topic and more partitions are picked up.
	h.addTopic("orders-v2", 1)
	h.addTopic("orders", 2)
	r = h.hb(cgHeartbeatArgs{memberID: "A", epoch: r.epoch, owned: r.assignment})
	mustOK(t, r)
	if h.names(r.assignment) != "orders-v2:0,orders:0,orders:1" && h.names(r.assignment) != "orders:0,orders:1,orders-v2:0" {
		t.Fatalf("after new topics: %s", h.names(r.assignment))
	}
	// Deleting a topic removes its partitions.
	id := h.im.idOf("orders-v2")
	h.removeTopic("orders-v2")
	r = h.hb(cgHeartbeatArgs{memberID: "A", epoch: r.epoch, owned: r.assignment})
	mustOK(t, r)
	for tp := range r.assignment {
		if tp.topic == id {
			t.Fatalf("deleted topic still assigned")
		}
	}
}

func consumerHeartbeatArgsOrFail(t *testing.T, member, regex string) cgHeartbeatArgs {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.SubscribedTopicRegex = "g", member, 30000, &regex
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	a, err, msg := consumerHeartbeatArgs(req, 1)
	if err != nil {
		t.Fatalf("%v: %s", err, msg)
	}
	return a
}

func TestConsumerGroupHeartbeatFieldChecks(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		version int16
		mod     func(*kmsg.ConsumerGroupHeartbeatRequest)
		want    *kerr.Error
	}{
		{"ok", 1, func(*kmsg.ConsumerGroupHeartbeatRequest) {}, nil},
		{"empty group", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"v1 empty member id", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"v0 empty member id on join", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, nil},
		{"epoch below -2", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"static leave without instance", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"empty instance id", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = str("") }, kerr.InvalidRequest},
		{"join without rebalance timeout", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"join without subscription", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"join with owned partitions", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"join with null owned partitions", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest},
		{"blank rack id", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = str(" ") }, kerr.InvalidRequest},
		{"heartbeat without subscription", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.SubscribedTopicNames, r.RebalanceTimeoutMillis, r.Topics = 3, nil, -1, nil
		}, nil},
		{"empty subscription on join", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{} }, nil},
		{"bad regex", 1, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = str("a(") }, kerr.InvalidRegularExpression},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = "g", "m", 1000, []string{"t"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			tc.mod(req)
			if _, err, msg := consumerHeartbeatArgs(req, tc.version); err != tc.want {
				t.Fatalf("got %v (%s), want %v", err, msg, tc.want)
			}
		})
	}
}

func TestConsumerGroupPersistAndReload(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 1})
	a := h.join("A", "t")
	mustOK(t, a)
	var out []*kerr.Error
	h.m.commitOffsets(offsetCommitArgs{group: "g", memberID: "A", generation: a.epoch,
		items: []offsetCommitItem{{topic: "t", partition: 0, offset: 42, leaderEpoch: -1, expireTime: -1}}},
		func(e []*kerr.Error) { out = e })
	if out[0] != nil {
		t.Fatal(out[0])
	}
	mustOK(t, h.join("B", "t"))
	// Replay the log into a new manager, as a restart does.
	m2 := NewManager(h.env, DefaultConfig())
	for _, r := range h.env.records {
		if err := m2.LoadRecord(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	m2.FinishLoad()
	g := m2.groups["g"]
	if g == nil || g.cg == nil || g.cg.epoch != 2 || len(g.cg.members) != 0 {
		t.Fatalf("reloaded group: %+v", g)
	}
	if got := m2.fetchOffsets("g", map[string][]int32{"t": {0}}, []string{"t"}); got[0].offset != 42 {
		t.Fatalf("reloaded offsets %+v", got)
	}
	h.m = m2
	if r := h.hb(cgHeartbeatArgs{memberID: "A", epoch: a.epoch, owned: partSet{}}); r.err != kerr.UnknownMemberID {
		t.Fatalf("old member after reload: %v", r.err)
	}
	r := h.join("A", "t")
	mustOK(t, r)
	if r.epoch != 3 {
		t.Fatalf("rejoin epoch %d, want 3 (after the persisted 2)", r.epoch)
	}
	// Deleting the empty group writes tombstones for both record kinds.
	mustOK(t, h.hb(cgHeartbeatArgs{memberID: "A", epoch: cgLeaveEpoch}))
	var derr *kerr.Error = kerr.UnknownServerError
	h.m.deleteGroup("g", func(e *kerr.Error) { derr = e })
	if derr != nil {
		t.Fatal(derr)
	}
	m3 := NewManager(h.env, DefaultConfig())
	for _, r := range h.env.records {
		if err := m3.LoadRecord(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	if m3.groups["g"] != nil {
		t.Fatalf("deleted group came back after replay")
	}
}

func TestConsumerGroupListAndDescribe(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 3})
	mustOK(t, h.join("A", "t"))
	var found bool
	for _, s := range h.m.list() {
		if s.id == "g" {
			found = true
			if s.groupType != "consumer" || s.state != "Stable" || s.protocolType != "consumer" {
				t.Fatalf("list: %+v", s)
			}
		}
	}
	if !found {
		t.Fatal("group not listed")
	}
	if d := h.m.describe("g"); d.state != "Dead" || d.groupType != "consumer" || len(d.members) != 0 {
		t.Fatalf("classic describe of a consumer group: %+v", d)
	}
	d := h.m.describeConsumer("g")
	if d.err != nil || d.state != "Stable" || d.assignor != "uniform" || len(d.members) != 1 || len(d.members[0].assigned) != 3 ||
		!d.members[0].assigned.equal(d.members[0].target) {
		t.Fatalf("describe: %+v", d)
	}
	if s := h.m.describeConsumer("nope"); s.err != kerr.GroupIDNotFound {
		t.Fatalf("describe of an unknown group: %v", s.err)
	}
	var jr joinResult
	h.m.join(joinArgs{group: "classic", clientID: "c", protocolType: "consumer", sessionTimeout: 10 * time.Second,
		rebalanceTimeout: 10 * time.Second, protocols: []groupProtocol{{name: "range"}}, requireKnownMemberID: false}, func(r joinResult) { jr = r })
	_ = jr
	if s := h.m.describeConsumer("classic"); s.err != kerr.GroupIDNotFound {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %v", s.err)
	}
}

// FuzzReadConsumerGroupRecord: any key and value decode or fail, never
// panic, and what consumerGroupRecord writes reads back.
func FuzzReadConsumerGroupRecord(f *testing.F) {
	r := consumerGroupRecord("group-1", 42)
	f.Add(r.Key, r.Value)
	f.Add([]byte{0, 3, 0xff, 0xff}, []byte{0, 0})
	f.Add([]byte{0, 3}, []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_, _, _ = readConsumerGroupRecord(key, value)
		m := NewManager(&fakeGroupEnv{t: time.UnixMilli(0), ids: map[string]int{}, out: &strings.Builder{}}, DefaultConfig())
		_ = m.LoadRecord(append([]byte{0, 3}, key...), value)
		if len(key) < 200 {
			rec := consumerGroupRecord(string(key), int32(len(value)))
			g, e, err := readConsumerGroupRecord(rec.Key, rec.Value)
			if err != nil || g != string(key) || e != int32(len(value)) {
				t.Fatalf("round trip of %q: %q %d %v", key, g, e, err)
			}
		}
	})
}

// Share, classic and consumer groups share one group id namespace: the
// classic and consumer APIs refuse a share group's id.
func TestShareGroupIDRefusedByOtherProtocols(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 1})
	// The share groups themselves live in appliance (shareManager); here a
	// fake one holds share group "s" (appliance's
	// TestShareGroupIDRefusedByOtherProtocols drives the real one).
	h.m.SetShareGroups(fakeShareGroups{"s": "Stable"})
	var jr joinResult
	h.m.join(joinArgs{group: "s", clientID: "c", protocolType: "consumer", sessionTimeout: 10 * time.Second,
		rebalanceTimeout: 10 * time.Second, protocols: []groupProtocol{{name: "range"}}}, func(r joinResult) { jr = r })
	if jr.err != kerr.InconsistentGroupProtocol {
		t.Fatalf("classic join of a share group: %v", jr.err)
	}
	if r := h.hb(cgHeartbeatArgs{group: "s", memberID: "A", epoch: 0, rebalanceTimeoutMillis: 1000, names: []string{"t"}, namesSet: true}); r.err != kerr.GroupIDNotFound {
		t.Fatalf("consumer heartbeat to a share group: %v", r.err)
	}
	var errs []*kerr.Error
	h.m.commitOffsets(offsetCommitArgs{group: "s", generation: -1, items: []offsetCommitItem{{topic: "t", offset: 1, leaderEpoch: -1, expireTime: -1}}},
		func(e []*kerr.Error) { errs = e })
	if len(errs) != 1 || errs[0] != kerr.GroupIDNotFound {
		t.Fatalf("offset commit to a share group: %v", errs)
	}
	if h.m.groups["s"] != nil {
		t.Fatal("a classic group was created under the share group's id")
	}
}

// A group id longer than a __consumer_offsets key can hold is refused with
// the non-retriable UNKNOWN_SERVER_ERROR (not NOT_COORDINATOR, which
// clients retry forever) and one Warn line, by ConsumerGroupHeartbeat,
// JoinGroup and OffsetCommit alike, and leaves no group behind; an epoch
// record the offsets topic refuses is UNKNOWN_SERVER_ERROR too.
func TestConsumerGroupHugeGroupID(t *testing.T) {
	h := newCGHarness(t, map[string]int{"t": 1})
	big := strings.Repeat("g", 1<<20)
	r := h.hb(cgHeartbeatArgs{group: big, epoch: 0, rebalanceTimeoutMillis: 30000, names: []string{"t"}, namesSet: true})
	if r.err != kerr.UnknownServerError {
		t.Fatalf("heartbeat with a 1 MiB group id: %v (%s), want UNKNOWN_SERVER_ERROR", r.err, r.msg)
	}
	if len(h.env.warnings) != 1 || len(h.m.groups) != 0 {
		t.Fatalf("warnings %d, groups %d: want one warning and no group", len(h.env.warnings), len(h.m.groups))
	}
	var jr joinResult
	h.m.join(joinArgs{group: big, clientID: "c", protocolType: "consumer", sessionTimeout: 10 * time.Second, rebalanceTimeout: 30 * time.Second,
		protocols: []groupProtocol{{name: "range", metadata: []byte("x")}}}, func(r joinResult) { jr = r })
	if jr.err != kerr.UnknownServerError || len(h.env.warnings) != 2 || len(h.m.groups) != 0 {
		t.Fatalf("JoinGroup with a 1 MiB group id: %v, %d warnings, %d groups", jr.err, len(h.env.warnings), len(h.m.groups))
	}
	var ce []*kerr.Error
	h.m.commitOffsets(offsetCommitArgs{group: big, generation: -1,
		items: []offsetCommitItem{{topic: "t", partition: 0, offset: 1, leaderEpoch: -1, expireTime: -1}}}, func(e []*kerr.Error) { ce = e })
	if len(ce) != 1 || ce[0] != kerr.UnknownServerError || len(h.m.groups) != 0 {
		t.Fatalf("OffsetCommit with a 1 MiB group id: %v, %d groups", ce, len(h.m.groups))
	}
	// The longest id that fits still works.
	mustOK(t, h.hb(cgHeartbeatArgs{group: strings.Repeat("g", maxGroupIDBytes), epoch: 0, rebalanceTimeoutMillis: 30000, names: []string{"t"}, namesSet: true}))

	h.env.persistErr = kerr.MessageTooLarge
	warned := len(h.env.warnings)
	r = h.join("A", "t")
	if r.err != kerr.UnknownServerError || len(h.env.warnings) != warned+1 {
		t.Fatalf("join whose epoch record is refused: %v, %d new warnings", r.err, len(h.env.warnings)-warned)
	}
	h.env.persistErr = kerr.NotEnoughReplicas
	if r = h.join("B", "t"); r.err != kerr.NotCoordinator {
		t.Fatalf("join whose epoch record cannot be written now: %v, want NOT_COORDINATOR", r.err)
	}
}

// nameOf is the name of the topic with id ("" when none).
func (im *testImage) nameOf(id TopicID) string {
	n, _, _ := im.TopicByID(id)
	return n
}

// idOf is the id of the topic named name (zero when none).
func (im *testImage) idOf(name string) TopicID { return im.topics[name].id }

// fakeShareGroups is a ShareGroups of fixed groups (id to state).
type fakeShareGroups map[string]string

func (f fakeShareGroups) IsShareGroup(id string) bool { _, ok := f[id]; return ok }

func (f fakeShareGroups) EachShareGroup(fn func(id, state string)) {
	for id, st := range f {
		fn(id, st)
	}
}

func (f fakeShareGroups) DeleteShareGroup(id string, reply func(*kerr.Error)) bool {
	if !f.IsShareGroup(id) {
		return false
	}
	delete(f, id)
	reply(nil)
	return true
}
