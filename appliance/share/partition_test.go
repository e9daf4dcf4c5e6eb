package share

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testSharePart(spso int64) *sharePartition {
	return newSharePartition("g", TopicID{1}, 0, spso, 0, sharePartConfig{lockMs: 1000, deliveryLimit: 3, maxInFlight: 100})
}

func states(sp *sharePartition) []recordState {
	out := make([]recordState, len(sp.recs))
	for i, r := range sp.recs {
		out[i] = r.state
	}
	return out
}

func TestSharePartitionAcquireAndAccept(t *testing.T) {
	sp := testSharePart(10)
	c := sp.candidates(4, 20)
	if want := []offsetRange{{10, 13}}; !reflect.DeepEqual(c, want) {
		t.Fatalf("candidates = %v, want %v", c, want)
	}
	got := sp.acquire(c, "m1", 0)
	if want := []acquiredRange{{10, 13, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquire = %v, want %v", got, want)
	}
	if sp.endOffset() != 14 {
		t.Fatalf("SPEO = %d, want 14", sp.endOffset())
	}
	// Nothing Available in flight: the next candidates start at the SPEO.
	if c := sp.candidates(10, 16); !reflect.DeepEqual(c, []offsetRange{{14, 15}}) {
		t.Fatalf("candidates after acquire = %v", c)
	}
	// Another member cannot acknowledge m1's records.
	if _, err := sp.acknowledge("m2", 10, 10, []int8{ackAccept}, false, 1); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("ack by another member: %v, want INVALID_RECORD_STATE", err)
	}
	// Accepting 11-12 leaves the SPSO at 10 (10 still Acquired).
	if _, err := sp.acknowledge("m1", 11, 12, []int8{ackAccept}, false, 1); err != nil {
		t.Fatal(err)
	}
	if sp.startOffset != 10 {
		t.Fatalf("SPSO = %d, want 10", sp.startOffset)
	}
	// Per-offset types: 10 accept, then 13 reject via a one-offset batch.
	if _, err := sp.acknowledge("m1", 10, 10, []int8{ackAccept}, false, 1); err != nil {
		t.Fatal(err)
	}
	if sp.startOffset != 13 {
		t.Fatalf("SPSO = %d, want 13", sp.startOffset)
	}
	if _, err := sp.acknowledge("m1", 13, 13, []int8{ackReject}, false, 1); err != nil {
		t.Fatal(err)
	}
	if sp.startOffset != 14 || len(sp.recs) != 0 {
		t.Fatalf("SPSO = %d with %d in flight, want 14 and 0", sp.startOffset, len(sp.recs))
	}
	// Acknowledging again: outside the in-flight records.
	if _, err := sp.acknowledge("m1", 13, 13, []int8{ackAccept}, false, 1); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("double ack: %v, want INVALID_RECORD_STATE", err)
	}
}

func TestSharePartitionReleaseRedeliversWithHigherCount(t *testing.T) {
	sp := testSharePart(0)
	sp.acquire(sp.candidates(3, 3), "m1", 0)
	woke, err := sp.acknowledge("m1", 0, 2, []int8{ackAccept, ackRelease, ackAccept}, false, 1)
	if err != nil || !woke {
		t.Fatalf("release: woke %v err %v", woke, err)
	}
	if want := []recordState{recAvailable, recAcknowledged}; sp.startOffset != 1 || !reflect.DeepEqual(states(sp), want) {
		t.Fatalf("SPSO %d states %v", sp.startOffset, states(sp))
	}
	got := sp.acquire(sp.candidates(10, 3), "m2", 2)
	if want := []acquiredRange{{1, 1, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("redelivery = %v, want %v", got, want)
	}
}

func TestSharePartitionDeliveryLimitArchives(t *testing.T) {
	sp := testSharePart(0) // limit 3
	for i := 1; i <= 3; i++ {
		got := sp.acquire(sp.candidates(1, 1), "m", int64(i))
		if len(got) != 1 || got[0].deliveries != int16(i) {
			t.Fatalf("delivery %d: acquired %v", i, got)
		}
		if _, err := sp.acknowledge("m", 0, 0, []int8{ackRelease}, false, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The third release reached the limit: Archived, and the SPSO moved past it.
	if sp.startOffset != 1 || len(sp.recs) != 0 {
		t.Fatalf("SPSO %d in flight %v, want 1 and none", sp.startOffset, states(sp))
	}
	if c := sp.candidates(10, 1); len(c) != 0 {
		t.Fatalf("archived record offered again: %v", c)
	}
}

func TestSharePartitionLockExpiry(t *testing.T) {
	sp := testSharePart(0) // lock 1000 ms, limit 3
	sp.acquire(sp.candidates(2, 2), "m", 0)
	if woke, next := sp.expireLocks(999); woke || next != 1000 {
		t.Fatalf("before the deadline: woke %v next %d", woke, next)
	}
	// Renew 1 at 500: its lock runs to 1500.
	if _, err := sp.acknowledge("m", 1, 1, []int8{ackRenew}, false, 500); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("renew without IsRenewAck: %v, want INVALID_REQUEST", err)
	}
	if _, err := sp.acknowledge("m", 1, 1, []int8{ackRenew}, true, 500); err != nil {
		t.Fatal(err)
	}
	woke, next := sp.expireLocks(1000)
	if !woke || next != 1500 {
		t.Fatalf("at the deadline: woke %v next %d", woke, next)
	}
	if want := []recordState{recAvailable, recAcquired}; !reflect.DeepEqual(states(sp), want) {
		t.Fatalf("states %v, want %v", states(sp), want)
	}
	// The expired record cannot be acknowledged by its old owner any more.
	if _, err := sp.acknowledge("m", 0, 0, []int8{ackAccept}, false, 1001); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("ack after expiry: %v", err)
	}
	// Delivery count limit through expiry: two more acquisitions and expiries archive it.
	for i := 2; i <= 3; i++ {
		now := int64(2000 * i)
		if got := sp.acquire([]offsetRange{{0, 0}}, "m2", now); len(got) != 1 || got[0].deliveries != int16(i) {
			t.Fatalf("acquisition %d: %v", i, got)
		}
		sp.expireLocks(now + 1000)
	}
	if sp.startOffset != 1 || sp.recs[0].state != recAvailable {
		t.Fatalf("after reaching the delivery limit: SPSO %d states %v, want 1 and [Available]", sp.startOffset, states(sp))
	}
}

func TestSharePartitionReleaseMemberAndLimits(t *testing.T) {
	sp := testSharePart(0)
	sp.cfg.maxInFlight = 5
	sp.acquire(sp.candidates(3, 100), "a", 0)
	sp.acquire(sp.candidates(3, 100), "b", 0)
	if sp.endOffset() != 5 {
		t.Fatalf("in-flight window not bounded: SPEO %d", sp.endOffset())
	}
	if c := sp.candidates(10, 100); len(c) != 0 {
		t.Fatalf("candidates beyond max.record.locks: %v", c)
	}
	if !sp.releaseMember("a") {
		t.Fatal("releasing a's records woke nothing")
	}
	if c := sp.candidates(10, 100); !reflect.DeepEqual(c, []offsetRange{{0, 2}}) {
		t.Fatalf("after release: %v", c)
	}
}

func TestSharePartitionBadAcks(t *testing.T) {
	sp := testSharePart(0)
	sp.acquire(sp.candidates(3, 3), "m", 0)
	for _, tc := range []struct {
		first, last int64
		types       []int8
	}{
		{2, 1, []int8{1}},
		{0, 2, nil},
		{0, 2, []int8{1, 1}},
		{0, 0, []int8{9}},
		{0, 0, []int8{-1}},
	} {
		if _, err := sp.acknowledge("m", tc.first, tc.last, tc.types, false, 0); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("ack %+v: %v, want INVALID_REQUEST", tc, err)
		}
	}
	// A batch with one bad offset changes nothing.
	if _, err := sp.acknowledge("m", 0, 5, []int8{1}, false, 0); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("ack past the SPEO: %v", err)
	}
	if want := []recordState{recAcquired, recAcquired, recAcquired}; !reflect.DeepEqual(states(sp), want) {
		t.Fatalf("states %v after a refused batch", states(sp))
	}
	// Gap archives.
	if _, err := sp.acknowledge("m", 0, 2, []int8{ackGap}, false, 0); err != nil || sp.startOffset != 3 {
		t.Fatalf("gap: err %v SPSO %d", err, sp.startOffset)
	}
}

func TestSharePartitionLogStartAndReset(t *testing.T) {
	sp := testSharePart(0)
	sp.acquire(sp.candidates(5, 5), "m", 0)
	sp.moveStart(3)
	if sp.startOffset != 3 || len(sp.recs) != 2 {
		t.Fatalf("moveStart: SPSO %d, %d in flight", sp.startOffset, len(sp.recs))
	}
	sp.reset(10)
	if sp.startOffset != 10 || len(sp.recs) != 0 || sp.stateEpoch != 1 {
		t.Fatalf("reset: SPSO %d, %d in flight, state epoch %d", sp.startOffset, len(sp.recs), sp.stateEpoch)
	}
	if lag := sp.lag(15); lag != 5 {
		t.Fatalf("lag = %d, want 5", lag)
	}
}

// shareTestImage has topic "t" with 2 partitions and "u" with 1.
func shareTestImage() Image {
	return fakeImage{{ID: TopicID{1}, Name: "t", Partitions: 2}, {ID: TopicID{2}, Name: "u", Partitions: 1}}
}

func TestShareManagerHeartbeatAssignment(t *testing.T) {
	env := &fakeEnv{t: time.Unix(1000, 0)}
	sm := newManager(env, fakeClassicGroups{})
	var released []string
	sm.released = func(g, m string) { released = append(released, g+"/"+m) }
	im := shareTestImage()
	set := shareGroupSettings{sessionTimeout: 45 * time.Second}
	hb := func(member string, epoch int32, topics []string) shareHeartbeatResult {
		return sm.heartbeat(shareHeartbeatArgs{group: "g", member: member, memberEpoch: epoch, topics: topics, settings: set, im: im})
	}
	if r := hb("a", 0, nil); !errors.Is(r.err, kerr.InvalidRequest) {
		t.Fatalf("join without topics: %v", r.err)
	}
	if r := hb("a", 3, nil); !errors.Is(r.err, kerr.UnknownMemberID) {
		t.Fatalf("unknown member: %v", r.err)
	}
	ra := hb("a", 0, []string{"t", "u"})
	if ra.err != nil || ra.epoch != 1 || len(ra.assignment[TopicID{1}]) != 2 || len(ra.assignment[TopicID{2}]) != 1 {
		t.Fatalf("first join: %+v", ra)
	}
	rb := hb("b", 0, []string{"t", "u"})
	if rb.epoch != 2 || !reflect.DeepEqual(rb.assignment[TopicID{1}], []int32{1}) || !reflect.DeepEqual(rb.assignment[TopicID{2}], []int32{0}) {
		t.Fatalf("second join: %+v", rb)
	}
	// a's next heartbeat (epoch 1, now previous) gets its shrunk assignment;
	// u's single partition is shared by both members.
	ra = hb("a", 1, nil)
	if ra.err != nil || ra.epoch != 2 || !reflect.DeepEqual(ra.assignment[TopicID{1}], []int32{0}) || !reflect.DeepEqual(ra.assignment[TopicID{2}], []int32{0}) {
		t.Fatalf("a after b joined: %+v", ra)
	}
	if r := hb("a", 7, nil); !errors.Is(r.err, kerr.FencedMemberEpoch) {
		t.Fatalf("wrong epoch: %v", r.err)
	}
	// b stops heartbeating: removed after the session timeout, its records released.
	for i := 0; i < 5; i++ {
		env.advance(10 * time.Second)
		v, _ := sm.view("g")
		for _, m := range v.members {
			if m.id == "a" {
				if r := hb("a", m.epoch, nil); r.err != nil {
					t.Fatal(r.err)
				}
			}
		}
	}
	if len(released) != 1 || released[0] != "g/b" {
		t.Fatalf("released %v, want [g/b]", released)
	}
	if v, _ := sm.view("g"); len(v.members) != 1 || v.state != "Stable" {
		t.Fatalf("view after expiry: %+v", v)
	}
	set.maxSize = 1
	if r := hb("c", 0, []string{"t"}); !errors.Is(r.err, kerr.GroupMaxSizeReached) {
		t.Fatalf("join past group.share.max.size: %v", r.err)
	}
	set.maxSize = 0
	// Non-empty group cannot be deleted; after leaving it can.
	var derr *kerr.Error
	sm.deleteGroup("g", func(e *kerr.Error) { derr = e })
	if derr != kerr.NonEmptyGroup {
		t.Fatalf("delete non-empty: %v", derr)
	}
	v, _ := sm.view("g")
	if r := hb("a", v.members[0].epoch, nil); r.err != nil {
		t.Fatal(r.err)
	}
	v, _ = sm.view("g")
	if r := hb("a", -1, nil); r.err != nil || r.epoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	derr = kerr.UnknownServerError
	if !sm.deleteGroup("g", func(e *kerr.Error) { derr = e }) || derr != nil {
		t.Fatalf("delete empty: %v", derr)
	}
	if _, ok := sm.view("g"); ok {
		t.Fatal("group still there after delete")
	}
}

func TestShareManagerPersistAndReplay(t *testing.T) {
	env := &fakeEnv{t: time.Unix(1000, 0)}
	sm := newManager(env, fakeClassicGroups{})
	tp := shareTP{TopicID{7}, 3}
	sm.setStart("g", tp, shareStart{offset: 41, stateEpoch: 0}, false, func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	})
	if _, ok := sm.startFor("g", tp); ok {
		t.Fatal("a flush (create false) created a share-partition")
	}
	sm.setStart("g", tp, shareStart{offset: 42, stateEpoch: 0}, true, func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	})
	var out map[shareTP]shareStart
	sm.alterStarts("g", map[shareTP]int64{{TopicID{7}, 4}: 9}, func(err *kerr.Error, o map[shareTP]shareStart) {
		if err != nil {
			t.Fatal(err)
		}
		out = o
	})
	if out[shareTP{TopicID{7}, 4}] != (shareStart{9, 1}) {
		t.Fatalf("alter: %v", out)
	}
	// A flush with an older state epoch than an alter is stale.
	sm.alterStarts("g", map[shareTP]int64{tp: 100}, func(*kerr.Error, map[shareTP]shareStart) {})
	sm.setStart("g", tp, shareStart{offset: 50, stateEpoch: 0}, false, func(error) {})
	if s, _ := sm.startFor("g", tp); s != (shareStart{100, 1}) {
		t.Fatalf("stale flush applied: %v", s)
	}
	// Replay the log into a fresh manager: same state.
	replay := func() *Manager {
		sm2 := newManager(env, fakeClassicGroups{})
		for _, r := range env.records {
			if !IsShareKey(r.Key) {
				t.Fatalf("record with a key version that is not ours: %x", r.Key[:2])
			}
			if err := sm2.LoadRecord(r.Key, r.Value); err != nil {
				t.Fatal(err)
			}
		}
		return sm2
	}
	sm2 := replay()
	if s, ok := sm2.startFor("g", tp); !ok || s != (shareStart{100, 1}) {
		t.Fatalf("replayed %v %v", s, ok)
	}
	if s, ok := sm2.startFor("g", shareTP{TopicID{7}, 4}); !ok || s != (shareStart{9, 1}) {
		t.Fatalf("replayed %v %v", s, ok)
	}
	// DeleteShareGroupOffsets tombstones survive a replay too.
	sm.deleteStarts("g", map[TopicID]bool{{7}: true}, func(err *kerr.Error) {
		if err != nil {
			t.Fatal(err)
		}
	})
	if _, ok := replay().startFor("g", tp); ok {
		t.Fatal("deleted share-partition state came back after replay")
	}
	// A flush racing the delete does not bring it back either.
	sm.setStart("g", tp, shareStart{offset: 120, stateEpoch: 1}, false, func(error) {})
	if _, ok := sm.startFor("g", tp); ok {
		t.Fatal("a flush after DeleteShareGroupOffsets brought the share-partition back")
	}
	// A classic group's id is not a share group.
	sm.classic = fakeClassicGroups{"classic": true}
	if r := sm.heartbeat(shareHeartbeatArgs{group: "classic", member: "m", topics: []string{"t"}, im: shareTestImage()}); !errors.Is(r.err, kerr.GroupIDNotFound) {
		t.Fatalf("share heartbeat on a classic group: %v", r.err)
	}
	if err := sm.LoadRecord([]byte{0, 101, 0, 1, 'g', 1}, []byte{0}); err == nil {
		t.Fatal("truncated share key loaded")
	}
	_ = kmsg.Record{}
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT1H": time.Hour, "P1D": 24 * time.Hour, "PT0.5S": 500 * time.Millisecond, "P1DT2H3M4S": 26*time.Hour + 3*time.Minute + 4*time.Second,
	} {
		if got, err := parseISODuration(in); err != nil || got != want {
			t.Errorf("parseISODuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "P", "PT", "-PT1H", "1H", "PT1X"} {
		if _, err := parseISODuration(in); err == nil {
			t.Errorf("parseISODuration(%q) accepted", in)
		}
	}
}

// fakeClassicGroups is a classicGroups holding fixed group ids.
type fakeClassicGroups map[string]bool

func (f fakeClassicGroups) HasGroup(id string) bool { return f[id] }
