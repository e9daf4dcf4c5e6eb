package group

// Committed offsets and the group admin operations of a Manager, and
// the __consumer_offsets record schemas: OffsetCommitKey v1 with
// OffsetCommitValue v3, GroupMetadataKey v2 with GroupMetadataValue v3
// (Kafka's own schemas, so the log reads like Kafka's); a key with a null
// value is a tombstone. Records are applied to memory only after their
// durable append (acks=-1), and replayed from the log at start.

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetCommitRecord(group string, tp groupTP, o groupOffset) kmsg.Record {
	v := kmsg.OffsetCommitValue{Version: 3, Offset: o.offset, LeaderEpoch: o.leaderEpoch, Metadata: o.metadata, CommitTimestamp: o.commitTime}
	return kmsg.Record{Key: offsetCommitKey(group, tp.topic, tp.partition), Value: v.AppendTo(nil)}
}

func groupMetadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

func groupMetadataRecord(g *group, now time.Time) kmsg.Record {
	assign := map[string][]byte{}
	for id, m := range g.members {
		assign[id] = m.assignment
	}
	return groupMetadataRecordWith(g, now, assign)
}

// groupMetadataRecordWith encodes g with the given assignments.
func groupMetadataRecordWith(g *group, now time.Time, assign map[string][]byte) kmsg.Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocolName != "" {
		p := g.protocolName
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = now.UnixMilli()
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		if m.instanceID != "" {
			iid := m.instanceID
			vm.InstanceID = &iid
		}
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		md, _ := m.metadataFor(g.protocolName)
		vm.Subscription = md
		vm.Assignment = assign[m.id]
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return kmsg.Record{Key: groupMetadataKey(g.id), Value: v.AppendTo(nil)}
}

// offsetCommitItem is one partition of an OffsetCommit that passed the
// handler's checks (known topic and partition).
type offsetCommitItem struct {
	topic       string
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
	expireTime  int64 // ms, -1 for the retention
}

// offsetCommitArgs is an OffsetCommit or a TxnOffsetCommit that passed
// the handler's checks; pid and epoch are the transactional producer's
// (TxnOffsetCommit only).
type offsetCommitArgs struct {
	group, memberID, instanceID string
	generation                  int32
	pid                         int64
	epoch                       int16
	items                       []offsetCommitItem
}

// commitOffsets handles an OffsetCommit; done gets one error per item
// (nil when committed), after the records are durable.
func (m *Manager) commitOffsets(a offsetCommitArgs, done func([]*kerr.Error)) {
	g, out, recs, vals, ok := m.prepareCommit(a, false, done)
	if !ok {
		return
	}
	m.env.Persist(recs, func(err error) {
		if err != nil {
			for i := range out {
				if out[i] == nil {
					out[i] = kerr.NotCoordinator
				}
			}
			done(out)
			return
		}
		if m.groups[a.group] == g {
			for _, v := range vals {
				if cur, have := g.offsets[v.tp]; !have || cur.seq < v.o.seq {
					g.offsets[v.tp] = v.o
				}
			}
		}
		done(out)
	})
}

// committedOffset is one offset of a commit that passed its checks, as
// it will be stored once durable (or once its transaction commits).
type committedOffset struct {
	tp groupTP
	o  groupOffset
}

// prepareCommit runs the checks an OffsetCommit (txn false) and a
// TxnOffsetCommit (txn true) share, and turns the items that pass into
// records. When the whole commit is refused, or no item passed, it calls
// done itself and answers ok=false. Otherwise out holds the per-item
// refusals (nil for the items that have a record in recs, in order, with
// their values in vals).
func (m *Manager) prepareCommit(a offsetCommitArgs, txn bool, done func([]*kerr.Error)) (g *group, out []*kerr.Error, recs []kmsg.Record, vals []committedOffset, ok bool) {
	all := func(err *kerr.Error) {
		out := make([]*kerr.Error, len(a.items))
		for i := range out {
			out[i] = err
		}
		done(out)
	}
	api := "OffsetCommit"
	if txn {
		api = "TxnOffsetCommit"
	}
	switch {
	case a.group == "":
		all(kerr.InvalidGroupID)
		return nil, nil, nil, nil, false
	case m.groupIDTooLong(api, a.group):
		all(kerr.UnknownServerError)
		return nil, nil, nil, nil, false
	case m.isShareGroup(a.group): // share groups keep share-partition state, not offsets
		all(kerr.GroupIDNotFound)
		return nil, nil, nil, nil, false
	}
	g = m.groups[a.group]
	if g == nil {
		if !txn && a.generation >= 0 {
			all(kerr.IllegalGeneration)
			return nil, nil, nil, nil, false
		}
		g = m.newGroup(a.group)
	}
	// perItem checks each partition of a consumer group member's commit
	// made with an older member epoch (group.cgCheckCommit).
	var perItem func(topic string, partition int32) *kerr.Error
	switch {
	case g.state == groupDead:
		all(kerr.CoordinatorNotAvailable)
		return nil, nil, nil, nil, false
	case txn && a.memberID == "" && a.generation < 0:
		// TxnOffsetCommit v0-v2, or a producer outside the group: no member check.
	case g.cg != nil:
		// A consumer-protocol group: the generation is the member epoch.
		err, check := g.cgCheckCommit(a.memberID, a.generation, m.image)
		if err != nil {
			all(err)
			return nil, nil, nil, nil, false
		}
		perItem = check
	case g.fenced(a.instanceID, a.memberID):
		all(kerr.FencedInstanceID)
		return nil, nil, nil, nil, false
	case !txn && a.generation < 0 && g.state == groupEmpty:
		// A simple (standalone) consumer committing.
	case !txn && g.state == groupCompletingRebalance:
		all(kerr.RebalanceInProgress)
		return nil, nil, nil, nil, false
	case g.members[a.memberID] == nil:
		all(kerr.UnknownMemberID)
		return nil, nil, nil, nil, false
	case a.generation != g.generation:
		all(kerr.IllegalGeneration)
		return nil, nil, nil, nil, false
	case !txn:
		mem := g.members[a.memberID]
		if mem.joinDone == nil && !g.pendingSync[mem.id] {
			m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
		}
	}
	out = make([]*kerr.Error, len(a.items))
	now := m.env.Now().UnixMilli()
	for i, it := range a.items {
		if perItem != nil {
			if out[i] = perItem(it.topic, it.partition); out[i] != nil {
				continue
			}
		}
		if len(it.metadata) > m.cfg.maxMetadataBytes {
			out[i] = kerr.OffsetMetadataTooLarge
			continue
		}
		expire := it.expireTime
		if txn {
			expire = -1 // transactional offsets keep the retention
		}
		m.commitSeq++
		v := committedOffset{tp: groupTP{it.topic, it.partition},
			o: groupOffset{offset: it.offset, leaderEpoch: it.leaderEpoch, metadata: it.metadata, commitTime: now, expireTime: expire, seq: m.commitSeq}}
		recs = append(recs, offsetCommitRecord(a.group, v.tp, v.o))
		vals = append(vals, v)
	}
	if len(recs) == 0 {
		done(out)
		return nil, nil, nil, nil, false
	}
	return g, out, recs, vals, true
}

// fetchedOffset is one partition of an OffsetFetch answer.
type fetchedOffset struct {
	topic       string
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
	err         *kerr.Error // UNSTABLE_OFFSET_COMMIT under require_stable (Manager.unstableOffset)
}

// fetchOffsets answers an OffsetFetch for one group; topics nil means every
// committed partition. Unknown groups and partitions give offset -1.
func (m *Manager) fetchOffsets(groupID string, topics map[string][]int32, order []string) []fetchedOffset {
	g := m.groups[groupID]
	var out []fetchedOffset
	if topics == nil {
		if g == nil {
			return nil
		}
		for tp, o := range g.offsets {
			out = append(out, fetchedOffset{topic: tp.topic, partition: tp.partition, offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].topic != out[j].topic {
				return out[i].topic < out[j].topic
			}
			return out[i].partition < out[j].partition
		})
		return out
	}
	for _, t := range order {
		for _, p := range topics[t] {
			f := fetchedOffset{topic: t, partition: p, offset: -1, leaderEpoch: -1}
			if g != nil {
				if o, ok := g.offsets[groupTP{t, p}]; ok {
					f.offset, f.leaderEpoch, f.metadata = o.offset, o.leaderEpoch, o.metadata
				}
			}
			out = append(out, f)
		}
	}
	return out
}

// checkFetchMember validates the member of an OffsetFetch v9 against a
// consumer-protocol group; other groups are not checked.
func (m *Manager) checkFetchMember(groupID, memberID string, epoch int32) *kerr.Error {
	g := m.groups[groupID]
	if g == nil || g.cg == nil || (memberID == "" && epoch < 0) {
		return nil
	}
	return g.cgCheckMember(memberID, epoch)
}

// groupSummary is one group as ListGroups and DescribeGroups show it.
type groupSummary struct {
	id, state, protocolType, protocolName string
	groupType                             string // ListGroups v5: "classic" or "consumer"
	members                               []memberSummary
}

type memberSummary struct {
	id, instanceID, clientID, clientHost string
	metadata, assignment                 []byte
}

func (m *Manager) describe(groupID string) groupSummary {
	if m.isShareGroup(groupID) {
		// A share group (KIP-932) is not a classic group either.
		return groupSummary{id: groupID, state: groupDead.String(), groupType: "share"}
	}
	g := m.groups[groupID]
	if g == nil {
		return groupSummary{id: groupID, state: groupDead.String()}
	}
	if g.cg != nil {
		// Not a classic group: Kafka answers GROUP_ID_NOT_FOUND and Dead
		// (handleDescribeGroups sets the error).
		return groupSummary{id: g.id, state: groupDead.String(), groupType: "consumer"}
	}
	s := groupSummary{id: g.id, state: g.state.String(), protocolType: g.protocolType}
	if g.state == groupStable || g.state == groupCompletingRebalance {
		s.protocolName = g.protocolName
	}
	for _, mem := range g.sortedMembers() {
		ms := memberSummary{id: mem.id, instanceID: mem.instanceID, clientID: mem.clientID, clientHost: mem.clientHost}
		if g.state == groupStable {
			ms.metadata, _ = mem.metadataFor(g.protocolName)
			ms.assignment = mem.assignment
		}
		s.members = append(s.members, ms)
	}
	return s
}

func (m *Manager) list() []groupSummary {
	var out []groupSummary
	for _, g := range m.groups {
		if g.state == groupDead {
			continue
		}
		if g.cg != nil {
			out = append(out, groupSummary{id: g.id, state: g.cg.stateName(), protocolType: "consumer", groupType: "consumer"})
			continue
		}
		out = append(out, groupSummary{id: g.id, state: g.state.String(), protocolType: g.protocolType, groupType: "classic"})
	}
	return out
}

// deleteGroup handles one group of a DeleteGroups.
func (m *Manager) deleteGroup(groupID string, done func(*kerr.Error)) {
	g := m.groups[groupID]
	switch {
	case groupID == "":
		done(kerr.InvalidGroupID)
		return
	case g == nil || g.state == groupDead:
		done(kerr.GroupIDNotFound)
		return
	case g.state != groupEmpty:
		done(kerr.NonEmptyGroup)
		return
	}
	recs := m.tombstones(g, nil)
	recs = append(recs, groupTombstones(g)...)
	m.transition(g, groupDead)
	m.env.Persist(recs, func(err error) {
		if err != nil {
			m.transition(g, groupEmpty)
			done(kerr.CoordinatorNotAvailable)
			return
		}
		if m.groups[groupID] == g {
			delete(m.groups, groupID)
		}
		done(nil)
	})
}

// groupTombstones deletes g's group records: the classic GroupMetadataKey
// and, for a consumer-protocol group, its ConsumerGroupMetadataKey. The
// classic tombstone comes last, so a replay forgets the whole group.
func groupTombstones(g *group) []kmsg.Record {
	if g.cg != nil {
		return []kmsg.Record{{Key: consumerGroupKey(g.id)}, {Key: groupMetadataKey(g.id)}}
	}
	return []kmsg.Record{{Key: groupMetadataKey(g.id)}}
}

// tombstones deletes the offsets of g for which keep returns false (all when keep is nil).
func (m *Manager) tombstones(g *group, del func(groupTP) bool) []kmsg.Record {
	var tps []groupTP
	for tp := range g.offsets {
		if del == nil || del(tp) {
			tps = append(tps, tp)
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
	recs := make([]kmsg.Record, 0, len(tps))
	for _, tp := range tps {
		recs = append(recs, kmsg.Record{Key: offsetCommitKey(g.id, tp.topic, tp.partition)})
	}
	return recs
}

// subscribedTopics is the union of the consumer-protocol subscriptions of
// g's members; ok is false when g does not use the consumer protocol.
func (g *group) subscribedTopics() (map[string]bool, bool) {
	if g.cg != nil {
		return g.cg.subscribedTopics(), true
	}
	if g.protocolType != "consumer" || g.protocolName == "" {
		return nil, false
	}
	out := map[string]bool{}
	for _, mem := range g.members {
		md, _ := mem.metadataFor(g.protocolName)
		var cm kmsg.ConsumerMemberMetadata
		if err := cm.ReadFrom(md); err != nil {
			return nil, false
		}
		for _, t := range cm.Topics {
			out[t] = true
		}
	}
	return out, true
}

// deleteOffsets handles an OffsetDelete: a group error, or one error per
// partition.
func (m *Manager) deleteOffsets(groupID string, tps []groupTP, done func(*kerr.Error, []*kerr.Error)) {
	g := m.groups[groupID]
	switch {
	case groupID == "":
		done(kerr.InvalidGroupID, nil)
		return
	case g == nil || g.state == groupDead:
		done(kerr.GroupIDNotFound, nil)
		return
	}
	out := make([]*kerr.Error, len(tps))
	var subscribed map[string]bool
	if g.state != groupEmpty {
		s, ok := g.subscribedTopics()
		if !ok {
			done(kerr.NonEmptyGroup, nil)
			return
		}
		subscribed = s
	}
	del := map[groupTP]bool{}
	for i, tp := range tps {
		if subscribed[tp.topic] {
			out[i] = kerr.GroupSubscribedToTopic
			continue
		}
		if _, ok := g.offsets[tp]; ok {
			del[tp] = true
		}
	}
	if len(del) == 0 {
		done(nil, out)
		return
	}
	recs := m.tombstones(g, func(tp groupTP) bool { return del[tp] })
	m.env.Persist(recs, func(err error) {
		if err != nil {
			done(kerr.CoordinatorNotAvailable, nil)
			return
		}
		for tp := range del {
			delete(g.offsets, tp)
		}
		done(nil, out)
	})
}

// ExpireOffsets drops the offsets of Empty groups older than
// offsets.retention.minutes (from the time the group became empty for
// consumer groups, from the commit for standalone ones), and then removes
// Empty groups left without offsets.
func (m *Manager) ExpireOffsets() {
	now := m.env.Now()
	nowMs := now.UnixMilli()
	ret := m.cfg.offsetsRetention.Milliseconds()
	ids := make([]string, 0, len(m.groups))
	for id := range m.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := m.groups[id]
		if g.state != groupEmpty || len(g.pending) > 0 {
			continue
		}
		expired := func(tp groupTP) bool {
			o := g.offsets[tp]
			if o.expireTime > 0 {
				return o.expireTime <= nowMs
			}
			base := o.commitTime
			if g.protocolType != "" {
				base = max(base, g.stateTime.UnixMilli())
			}
			return base+ret <= nowMs
		}
		recs := m.tombstones(g, expired)
		removeGroup := len(recs) == len(g.offsets)
		if removeGroup {
			recs = append(recs, groupTombstones(g)...)
		}
		if len(recs) == 0 {
			continue
		}
		for tp := range g.offsets {
			if expired(tp) {
				delete(g.offsets, tp)
			}
		}
		if removeGroup {
			m.transition(g, groupDead)
			delete(m.groups, id)
		}
		m.env.Persist(recs, func(error) {})
	}
}

// DropTopicOffsets deletes every group's committed offsets of a deleted
// topic, as Kafka's coordinator does when partitions are deleted, so a
// topic created again with the same name does not resume from them. An
// Empty group left without offsets is removed.
func (m *Manager) DropTopicOffsets(topic string) {
	ids := make([]string, 0, len(m.groups))
	for id := range m.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var recs []kmsg.Record
	for _, id := range ids {
		g := m.groups[id]
		of := func(tp groupTP) bool { return tp.topic == topic }
		drop := m.tombstones(g, of)
		if len(drop) == 0 {
			continue
		}
		recs = append(recs, drop...)
		for tp := range g.offsets {
			if of(tp) {
				delete(g.offsets, tp)
			}
		}
		if g.state == groupEmpty && len(g.offsets) == 0 && len(g.pending) == 0 {
			recs = append(recs, groupTombstones(g)...)
			m.transition(g, groupDead)
			delete(m.groups, id)
		}
	}
	if len(recs) > 0 {
		m.env.Persist(recs, func(error) {})
	}
}

// LoadRecord applies one record replayed from the partition's log.
func (m *Manager) LoadRecord(key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("cannot read __consumer_offsets key of %d bytes", len(key))
	}
	version := int16(key[0])<<8 | int16(key[1])
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("cannot read offset commit key: %w", err)
		}
		tp := groupTP{k.Topic, k.Partition}
		g := m.groups[k.Group]
		if value == nil {
			if g != nil {
				delete(g.offsets, tp)
			}
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("cannot read offset commit value of group %q: %w", k.Group, err)
		}
		if g == nil {
			g = m.newGroup(k.Group)
		}
		exp := int64(-1)
		if v.Version == 1 {
			exp = v.ExpireTimestamp
		}
		le := v.LeaderEpoch
		if v.Version < 3 {
			le = -1
		}
		m.commitSeq++
		g.offsets[tp] = groupOffset{offset: v.Offset, leaderEpoch: le, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: exp, seq: m.commitSeq}
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("cannot read group metadata key: %w", err)
		}
		if value == nil {
			delete(m.groups, k.Group)
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("cannot read group metadata of %q: %w", k.Group, err)
		}
		g := m.groups[k.Group]
		if g == nil {
			g = m.newGroup(k.Group)
		}
		g.cg = nil
		g.protocolType = v.ProtocolType
		g.generation = v.Generation
		g.protocolName, g.leader = "", ""
		if v.Protocol != nil {
			g.protocolName = *v.Protocol
		}
		if v.Leader != nil {
			g.leader = *v.Leader
		}
		if v.CurrentStateTimestamp > 0 {
			g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
		}
		clear(g.members)
		clear(g.static)
		for _, vm := range v.Members {
			m.seq++
			mem := &groupMember{seq: m.seq, id: vm.MemberID, clientID: vm.ClientID, clientHost: vm.ClientHost,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
				protocolType:     v.ProtocolType, assignment: vm.Assignment}
			if mem.rebalanceTimeout <= 0 {
				mem.rebalanceTimeout = mem.sessionTimeout
			}
			if vm.InstanceID != nil {
				mem.instanceID = *vm.InstanceID
				g.static[mem.instanceID] = mem.id
			}
			mem.protocols = []groupProtocol{{name: g.protocolName, metadata: vm.Subscription}}
			g.members[mem.id] = mem
		}
		if len(g.members) > 0 {
			g.state = groupStable
		} else {
			g.state = groupEmpty
		}
	case 3:
		// ConsumerGroupMetadataKey (consumerGroupRecord): a KIP-848 group and
		// its group epoch; a tombstone turns the group back into a classic
		// one (DeleteGroups also writes the classic tombstone after it).
		id, epoch, err := readConsumerGroupRecord(key, value)
		if err != nil {
			return fmt.Errorf("cannot read consumer group metadata record: %w", err)
		}
		g := m.groups[id]
		if value == nil {
			if g != nil && g.cg != nil {
				g.cg = nil
				g.protocolType = ""
			}
			return nil
		}
		if g == nil {
			g = m.newGroup(id)
		}
		clear(g.members)
		clear(g.static)
		g.protocolName, g.leader = "", ""
		g.protocolType = "consumer"
		g.state = groupEmpty
		g.cg = newConsumerGroup(epoch)
	default:
		// A record type we do not know (a newer Kafka's): skip it.
	}
	return nil
}

// FinishLoad starts the session timers of the loaded members: a member that
// does not heartbeat within its session timeout after a restart is removed.
func (m *Manager) FinishLoad() {
	for _, g := range m.groups {
		for _, mem := range g.sortedMembers() {
			m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
		}
	}
}
