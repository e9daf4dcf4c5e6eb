package share

// Share groups on their coordinator (KIP-932, "Share group membership" and
// "Share-group state persistence"). A share group is coordinated, like a
// classic group, by __consumer_offsets partition hash(group.id) % 50: its
// Manager lives next to that partition's classic group manager on the
// partition's owner shard and is driven only there (handlers post closures
// and wait). It holds the members (client-chosen member ids, member epoch,
// subscribed topic names, assignment), the group epoch, and the persisted
// share-partition start offsets (SPSO) with their state epochs. The
// in-flight records themselves live on the topic partitions' shards
// (sharePartition, driven by sharePass).
//
// Assignment is server-side and simple: each subscribed topic's partitions
// are spread round-robin over the members subscribed to it (in member id
// order); when a topic has fewer partitions than members, every member
// still gets one partition, so a partition may be shared by several
// members. The group epoch moves on whenever membership, subscriptions or
// the computed assignment change; a member's epoch is the group epoch it
// last received.
//
// Persistence: records in the group's __consumer_offsets partition with key
// versions of our own, above Kafka's (0-2 classic, 3-8 consumer and share
// records of Kafka's new coordinator), so the log never holds a record a
// Kafka tool would misread as its own:
//
//	key version 100  ShareGroup      key: int16 100, string group
//	                                 value: int16 0, int32 group epoch
//	key version 101  SharePartition  key: int16 101, string group, [16]byte topic id, int32 partition
//	                                 value: int16 0, int64 SPSO, int32 state epoch
//
// (strings are int16 length + bytes). A null value is a tombstone. The
// in-flight records are not persisted: after a restart every record at or
// above the persisted SPSO is Available again (at-least-once), as it is in
// Kafka after a share-coordinator failover without its snapshot.
// Members are not persisted either: after a restart they rejoin
// (UNKNOWN_MEMBER_ID makes the client send epoch 0).

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Our __consumer_offsets key versions for share groups.
const (
	shareGroupKeyVersion     = 100
	sharePartitionKeyVersion = 101
)

// shareTP is one topic partition of a share group, by topic id.
type shareTP struct {
	topic     TopicID
	partition int32
}

// shareStart is a persisted share-partition state: its SPSO and state epoch.
type shareStart struct {
	offset     int64
	stateEpoch int32
}

type shareMember struct {
	id, clientID, clientHost string
	rack                     string
	epoch, prevEpoch         int32
	topics                   []string // subscribed topic names, sorted
	assignment               map[TopicID][]int32
	timer                    interface{ Stop() }
}

type shareGroup struct {
	id          string
	epoch       int32 // group epoch
	assignEpoch int32
	members     map[string]*shareMember
	parts       map[shareTP]shareStart
}

func (g *shareGroup) state() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (g *shareGroup) sortedMembers() []*shareMember {
	out := make([]*shareMember, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Manager holds the share groups of one __consumer_offsets partition.
// Every method runs on that partition's owner shard (Store.AddManager
// makes one per partition).
type Manager struct {
	env     Env
	classic ClassicGroups // the same partition's classic groups: one group id namespace
	groups  map[string]*shareGroup
	shard   int // the owner shard of the partition (Store.AddManager)
	// released is called (on this shard) when a member leaves or expires,
	// to release the records it holds; it posts to the partitions' shards.
	released func(group, member string)
	// image is the current metadata image, for assignments computed on a
	// timer (a member's session expiry); nil in tests that pass images.
	image func() Image
	// dropGroup drops a deleted share group's share-partitions on every
	// shard (Store.dropGroup); it blocks, so it runs off the shard.
	// nil in tests.
	dropGroup func(group string)
}

// Env is what the share groups need of their __consumer_offsets
// partition (the group coordinator's environment satisfies it): timers whose callbacks run on the
// partition's shard and durable appends.
type Env interface {
	AfterFunc(d time.Duration, fn func()) interface{ Stop() }
	Persist(recs []kmsg.Record, done func(error))
}

// ClassicGroups is what the share groups need of the same partition's
// classic and consumer groups (the group coordinator's manager): whether an
// id is taken.
type ClassicGroups interface {
	HasGroup(id string) bool
}

// newManager returns the share groups of one partition beside its
// classic groups (the caller makes the Manager the classic groups' share
// group seam: IsShareGroup, EachShareGroup, DeleteShareGroup).
func newManager(env Env, classic ClassicGroups) *Manager {
	return &Manager{env: env, classic: classic, groups: map[string]*shareGroup{}, released: func(string, string) {}}
}

// Record encoding.

func appendShortString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func shareGroupKey(group string) []byte {
	return appendShortString(binary.BigEndian.AppendUint16(nil, shareGroupKeyVersion), group)
}

func sharePartitionKey(group string, tp shareTP) []byte {
	k := appendShortString(binary.BigEndian.AppendUint16(nil, sharePartitionKeyVersion), group)
	k = append(k, tp.topic[:]...)
	return binary.BigEndian.AppendUint32(k, uint32(tp.partition))
}

func shareGroupRecord(g *shareGroup) kmsg.Record {
	v := binary.BigEndian.AppendUint16(nil, 0)
	v = binary.BigEndian.AppendUint32(v, uint32(g.epoch))
	return kmsg.Record{Key: shareGroupKey(g.id), Value: v}
}

func sharePartitionRecord(group string, tp shareTP, s shareStart) kmsg.Record {
	v := binary.BigEndian.AppendUint16(nil, 0)
	v = binary.BigEndian.AppendUint64(v, uint64(s.offset))
	v = binary.BigEndian.AppendUint32(v, uint32(s.stateEpoch))
	return kmsg.Record{Key: sharePartitionKey(group, tp), Value: v}
}

// IsShareKey reports whether a __consumer_offsets key is one of ours.
func IsShareKey(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	v := binary.BigEndian.Uint16(key)
	return v == shareGroupKeyVersion || v == sharePartitionKeyVersion
}

// LoadRecord applies one replayed share record (key version 100 or 101).
func (sm *Manager) LoadRecord(key, value []byte) error {
	if len(key) < 4 {
		return fmt.Errorf("cannot read share key of %d bytes", len(key))
	}
	version := binary.BigEndian.Uint16(key)
	n := int(binary.BigEndian.Uint16(key[2:]))
	if len(key) < 4+n {
		return fmt.Errorf("cannot read share key: group of %d bytes in %d", n, len(key)-4)
	}
	group := string(key[4 : 4+n])
	rest := key[4+n:]
	switch version {
	case shareGroupKeyVersion:
		if len(rest) != 0 {
			return fmt.Errorf("cannot read share group key of %q: %d trailing bytes", group, len(rest))
		}
		if value == nil {
			delete(sm.groups, group)
			return nil
		}
		if len(value) < 6 {
			return fmt.Errorf("cannot read share group value of %q: %d bytes", group, len(value))
		}
		g := sm.group(group)
		g.epoch = int32(binary.BigEndian.Uint32(value[2:]))
		g.assignEpoch = g.epoch
	case sharePartitionKeyVersion:
		if len(rest) != 20 {
			return fmt.Errorf("cannot read share partition key of %q: %d bytes after the group", group, len(rest))
		}
		var tp shareTP
		copy(tp.topic[:], rest)
		tp.partition = int32(binary.BigEndian.Uint32(rest[16:]))
		if value == nil {
			if g := sm.groups[group]; g != nil {
				delete(g.parts, tp)
			}
			return nil
		}
		if len(value) < 14 {
			return fmt.Errorf("cannot read share partition value of %q: %d bytes", group, len(value))
		}
		sm.group(group).parts[tp] = shareStart{offset: int64(binary.BigEndian.Uint64(value[2:])), stateEpoch: int32(binary.BigEndian.Uint32(value[10:]))}
	}
	return nil
}

// group returns group id's share group, creating it (in memory) if missing.
func (sm *Manager) group(id string) *shareGroup {
	g := sm.groups[id]
	if g == nil {
		g = &shareGroup{id: id, members: map[string]*shareMember{}, parts: map[shareTP]shareStart{}}
		sm.groups[id] = g
	}
	return g
}

// isClassic reports whether id names a classic group of this partition.
func (sm *Manager) isClassic(id string) bool {
	return sm.classic.HasGroup(id)
}

// shareHeartbeatArgs is one ShareGroupHeartbeat.
type shareHeartbeatArgs struct {
	group, member, clientID, clientHost string
	memberEpoch                         int32
	rack                                *string
	topics                              []string // nil: unchanged
	settings                            shareGroupSettings
	im                                  Image
}

// shareHeartbeatResult is a ShareGroupHeartbeat's answer.
type shareHeartbeatResult struct {
	err        error
	epoch      int32
	assignment map[TopicID][]int32 // nil with an error or when leaving
}

// heartbeat handles a ShareGroupHeartbeat: epoch 0 joins, -1 leaves, any
// other must be the member's current (or previous) epoch.
func (sm *Manager) heartbeat(a shareHeartbeatArgs) shareHeartbeatResult {
	switch {
	case a.group == "":
		return shareHeartbeatResult{err: fmt.Errorf("%w: group id is empty", kerr.InvalidRequest)}
	case a.member == "":
		return shareHeartbeatResult{err: fmt.Errorf("%w: member id is empty", kerr.InvalidRequest)}
	case a.memberEpoch < -1:
		return shareHeartbeatResult{err: fmt.Errorf("%w: member epoch %d", kerr.InvalidRequest, a.memberEpoch)}
	case a.memberEpoch == 0 && len(a.topics) == 0:
		return shareHeartbeatResult{err: fmt.Errorf("%w: a joining member must subscribe to topics", kerr.InvalidRequest)}
	case sm.isClassic(a.group):
		return shareHeartbeatResult{err: fmt.Errorf("%w: group %q is not a share group", kerr.GroupIDNotFound, a.group)}
	}
	g := sm.groups[a.group]
	if a.memberEpoch == -1 {
		if g == nil || g.members[a.member] == nil {
			return shareHeartbeatResult{err: fmt.Errorf("%w: member %q is not in group %q", kerr.UnknownMemberID, a.member, a.group)}
		}
		sm.removeMember(g, g.members[a.member], a.im)
		return shareHeartbeatResult{epoch: -1}
	}
	var m *shareMember
	if g != nil {
		m = g.members[a.member]
	}
	if a.memberEpoch > 0 {
		switch {
		case m == nil:
			return shareHeartbeatResult{err: fmt.Errorf("%w: member %q is not in group %q", kerr.UnknownMemberID, a.member, a.group)}
		case a.memberEpoch != m.epoch && a.memberEpoch != m.prevEpoch:
			return shareHeartbeatResult{err: fmt.Errorf("%w: member epoch %d, current %d", kerr.FencedMemberEpoch, a.memberEpoch, m.epoch)}
		}
	}
	if g == nil {
		g = sm.group(a.group)
		g.epoch = 0
	}
	changed := false
	if m == nil {
		if a.settings.maxSize > 0 && len(g.members) >= a.settings.maxSize {
			return shareHeartbeatResult{err: fmt.Errorf("%w: group %q has %d members (group.share.max.size)", kerr.GroupMaxSizeReached, a.group, len(g.members))}
		}
		m = &shareMember{id: a.member}
		g.members[a.member] = m
		changed = true
	}
	m.clientID, m.clientHost = a.clientID, a.clientHost
	if a.rack != nil {
		m.rack = *a.rack
	}
	if a.topics != nil {
		topics := slices.Clone(a.topics)
		sort.Strings(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.topics) {
			m.topics = topics
			changed = true
		}
	}
	if sm.reassign(g, a.im) || changed {
		sm.bump(g)
	}
	if m.epoch != g.epoch {
		m.prevEpoch, m.epoch = m.epoch, g.epoch
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	timeout := a.settings.sessionTimeout
	m.timer = sm.env.AfterFunc(timeout, func() {
		if cur := sm.groups[g.id]; cur == g && g.members[m.id] == m {
			im := a.im
			if sm.image != nil {
				im = sm.image()
			}
			sm.removeMember(g, m, im)
		}
	})
	return shareHeartbeatResult{epoch: m.epoch, assignment: m.assignment}
}

// bump moves the group epoch on and persists the group record.
func (sm *Manager) bump(g *shareGroup) {
	g.epoch++
	g.assignEpoch = g.epoch
	sm.env.Persist([]kmsg.Record{shareGroupRecord(g)}, func(error) {})
}

// removeMember drops m from g, recomputes the assignment and releases the
// records m holds.
func (sm *Manager) removeMember(g *shareGroup, m *shareMember, im Image) {
	if m.timer != nil {
		m.timer.Stop()
	}
	delete(g.members, m.id)
	sm.reassign(g, im)
	sm.bump(g)
	sm.released(g.id, m.id)
}

// reassign recomputes every member's assignment from the subscriptions and
// the topics in im; it reports whether any member's assignment changed.
func (sm *Manager) reassign(g *shareGroup, im Image) bool {
	next := shareAssignment(g.sortedMembers(), im)
	changed := false
	for _, m := range g.members {
		a := next[m.id]
		if !sameShareAssignment(a, m.assignment) {
			changed = true
		}
		m.assignment = a
	}
	return changed
}

// shareAssignment spreads each subscribed topic's partitions over the
// members subscribed to it (members in id order).
func shareAssignment(members []*shareMember, im Image) map[string]map[TopicID][]int32 {
	out := make(map[string]map[TopicID][]int32, len(members))
	byTopic := map[string][]string{}
	for _, m := range members {
		out[m.id] = map[TopicID][]int32{}
		for _, t := range m.topics {
			byTopic[t] = append(byTopic[t], m.id)
		}
	}
	for name, subs := range byTopic {
		t, ok := im.TopicByName(name)
		if !ok || t.Partitions == 0 {
			continue
		}
		np := int(t.Partitions)
		if len(subs) <= np {
			for p := 0; p < np; p++ {
				id := subs[p%len(subs)]
				out[id][t.ID] = append(out[id][t.ID], int32(p))
			}
			continue
		}
		for i, id := range subs {
			out[id][t.ID] = append(out[id][t.ID], int32(i%np))
		}
	}
	return out
}

func sameShareAssignment(a, b map[TopicID][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// startFor returns the persisted state of a share-partition.
func (sm *Manager) startFor(group string, tp shareTP) (shareStart, bool) {
	g := sm.groups[group]
	if g == nil {
		return shareStart{}, false
	}
	s, ok := g.parts[tp]
	return s, ok
}

// setStart persists a share-partition's SPSO. With create it records a new
// share-partition (creating the group if needed: a ShareFetch may come
// before any heartbeat reached this coordinator); without it, it only moves
// an existing one, so a flush racing a DeleteGroups or
// DeleteShareGroupOffsets cannot bring the state back. Updates carrying an
// older state epoch than the persisted one are stale and dropped (an
// AlterShareGroupOffsets came in between). done gets the durable result.
func (sm *Manager) setStart(group string, tp shareTP, s shareStart, create bool, done func(error)) {
	if sm.isClassic(group) {
		done(fmt.Errorf("%w: group %q is not a share group", kerr.GroupIDNotFound, group))
		return
	}
	g := sm.groups[group]
	var recs []kmsg.Record
	if g == nil {
		if !create {
			done(nil)
			return
		}
		g = sm.group(group)
		recs = append(recs, shareGroupRecord(g))
	}
	cur, ok := g.parts[tp]
	if !ok && !create || ok && (cur.stateEpoch > s.stateEpoch || cur == s) {
		done(nil)
		return
	}
	g.parts[tp] = s
	recs = append(recs, sharePartitionRecord(group, tp, s))
	sm.env.Persist(recs, done)
}

// deleteGroup deletes an Empty share group and its share-partition states.
// ok is false when id is no share group here.
func (sm *Manager) deleteGroup(id string, done func(*kerr.Error)) bool {
	g := sm.groups[id]
	if g == nil {
		return false
	}
	if len(g.members) > 0 {
		done(kerr.NonEmptyGroup)
		return true
	}
	recs := []kmsg.Record{}
	for _, tp := range sortedShareTPs(g.parts) {
		recs = append(recs, kmsg.Record{Key: sharePartitionKey(id, tp)})
	}
	recs = append(recs, kmsg.Record{Key: shareGroupKey(id)})
	delete(sm.groups, id)
	sm.env.Persist(recs, func(err error) {
		if err != nil {
			done(kerr.CoordinatorNotAvailable)
			return
		}
		done(nil)
	})
	return true
}

func sortedShareTPs(m map[shareTP]shareStart) []shareTP {
	out := make([]shareTP, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if c := slices.Compare(out[i].topic[:], out[j].topic[:]); c != 0 {
			return c < 0
		}
		return out[i].partition < out[j].partition
	})
	return out
}

// alterStarts sets SPSOs of an Empty (or new) share group durably
// (AlterShareGroupOffsets); every state epoch moves on. The group error is
// NON_EMPTY_GROUP with members, GROUP_ID_NOT_FOUND for a classic group.
func (sm *Manager) alterStarts(group string, starts map[shareTP]int64, done func(*kerr.Error, map[shareTP]shareStart)) {
	switch {
	case group == "":
		done(kerr.InvalidGroupID, nil)
		return
	case sm.isClassic(group):
		done(kerr.GroupIDNotFound, nil)
		return
	}
	g := sm.groups[group]
	var recs []kmsg.Record
	if g == nil {
		g = sm.group(group)
		recs = append(recs, shareGroupRecord(g))
	}
	if len(g.members) > 0 {
		done(kerr.NonEmptyGroup, nil)
		return
	}
	out := map[shareTP]shareStart{}
	for tp, off := range starts {
		s := shareStart{offset: off, stateEpoch: g.parts[tp].stateEpoch + 1}
		out[tp] = s
	}
	for _, tp := range sortedShareTPs(out) {
		recs = append(recs, sharePartitionRecord(group, tp, out[tp]))
	}
	sm.env.Persist(recs, func(err error) {
		if err != nil {
			done(kerr.CoordinatorNotAvailable, nil)
			return
		}
		if sm.groups[group] == g {
			for tp, s := range out {
				g.parts[tp] = s
			}
		}
		done(nil, out)
	})
}

// deleteStarts deletes the share-partition states of topics of an Empty
// share group (DeleteShareGroupOffsets).
func (sm *Manager) deleteStarts(group string, topics map[TopicID]bool, done func(*kerr.Error)) {
	g := sm.groups[group]
	switch {
	case group == "":
		done(kerr.InvalidGroupID)
		return
	case g == nil:
		done(kerr.GroupIDNotFound)
		return
	case len(g.members) > 0:
		done(kerr.NonEmptyGroup)
		return
	}
	var recs []kmsg.Record
	for _, tp := range sortedShareTPs(g.parts) {
		if topics[tp.topic] {
			recs = append(recs, kmsg.Record{Key: sharePartitionKey(group, tp)})
			delete(g.parts, tp)
		}
	}
	if len(recs) == 0 {
		done(nil)
		return
	}
	sm.env.Persist(recs, func(err error) {
		if err != nil {
			done(kerr.CoordinatorNotAvailable)
			return
		}
		done(nil)
	})
}

// shareGroupView is a share group as ShareGroupDescribe, ListGroups and
// DescribeShareGroupOffsets show it (copied off the shard).
type shareGroupView struct {
	id, state          string
	epoch, assignEpoch int32
	members            []shareMemberView
	parts              map[shareTP]shareStart
}

type shareMemberView struct {
	id, clientID, clientHost, rack string
	epoch                          int32
	topics                         []string
	assignment                     map[TopicID][]int32
}

func (sm *Manager) view(id string) (shareGroupView, bool) {
	g := sm.groups[id]
	if g == nil {
		return shareGroupView{}, false
	}
	v := shareGroupView{id: g.id, state: g.state(), epoch: g.epoch, assignEpoch: g.assignEpoch, parts: make(map[shareTP]shareStart, len(g.parts))}
	for tp, s := range g.parts {
		v.parts[tp] = s
	}
	for _, m := range g.sortedMembers() {
		v.members = append(v.members, shareMemberView{id: m.id, clientID: m.clientID, clientHost: m.clientHost, rack: m.rack,
			epoch: m.epoch, topics: slices.Clone(m.topics), assignment: m.assignment})
	}
	return v, true
}

func (sm *Manager) list() []shareGroupView {
	out := make([]shareGroupView, 0, len(sm.groups))
	for _, g := range sm.groups {
		out = append(out, shareGroupView{id: g.id, state: g.state()})
	}
	return out
}

// shareNow is the clock of the share state machines, in unix ms.
func shareNow() int64 { return time.Now().UnixMilli() }

// The share group seam a Manager is to its partition's classic group
// manager (the one group id namespace; ListGroups and DeleteGroups).

// IsShareGroup reports whether id names a share group of this partition.
func (sm *Manager) IsShareGroup(id string) bool { return sm.groups[id] != nil }

// EachShareGroup calls fn with every share group's id and state, for
// ListGroups.
func (sm *Manager) EachShareGroup(fn func(id, state string)) {
	for _, v := range sm.list() {
		fn(v.id, v.state)
	}
}

// DeleteShareGroup runs on the group's coordinator shard for DeleteGroups:
// when id is a share group it deletes it (NON_EMPTY_GROUP with members),
// drops its share-partitions on every shard and answers through reply;
// false when id is no share group.
func (sm *Manager) DeleteShareGroup(id string, reply func(*kerr.Error)) bool {
	return sm.deleteGroup(id, func(err *kerr.Error) {
		if err != nil || sm.dropGroup == nil {
			reply(err)
			return
		}
		go func() {
			sm.dropGroup(id)
			reply(err)
		}()
	})
}
