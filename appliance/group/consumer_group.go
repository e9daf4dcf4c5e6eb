package group

// This file is the consumer group protocol of KIP-848 ("next generation
// rebalance protocol") as a Manager runs it on the shard of the group's
// __consumer_offsets partition: members heartbeat (ConsumerGroupHeartbeat,
// handleConsumerGroupHeartbeat) with their subscription and the partitions
// they own, and the coordinator answers with their assignment.
//
// The terms are the KIP's:
//
//   - group epoch: bumped whenever the membership, a subscription, the
//     resolved metadata of the subscribed topics or the assignor changes;
//   - target assignment: computed by the server-side assignor
//     (computeAssignment) for the group epoch, which becomes the
//     assignment epoch;
//   - member epoch: the epoch of the target assignment a member has
//     reconciled to. A member reconciles incrementally: partitions of its
//     current assignment that the target gives to another member are revoked
//     first (member state "unrevoked partitions", the member epoch stays);
//     once the member acknowledges (a heartbeat whose owned partitions no
//     longer hold them) it moves to the assignment epoch, with the new
//     partitions that no other member still owns ("unreleased partitions"
//     while some are still owned elsewhere, "stable" once it has all of its
//     target). A partition is never handed to a member while another member
//     still owns or is revoking it.
//
// Members are reconciled on their own heartbeats, as in Kafka, so a member
// learns of a new target assignment within one heartbeat interval.
//
// Timers: a member that sends no heartbeat within
// group.consumer.session.timeout.ms is removed; a member that has not
// acknowledged a revocation within its rebalance timeout is removed (fenced).
// Either bumps the group epoch.
//
// Coalescing: a join, a leave, an expiry or a subscription change only marks
// the target assignment out of date (cgSchedule); one cgFlush, posted to the
// shard behind the work already queued there, bumps the group epoch once,
// computes the target once, answers the heartbeats that waited for it and
// persists one epoch record. A burst of thousands of joins or of expiries
// that fire together costs one assignment, so a large group does not hold
// up the other groups of its shard. Partition owners (cg.owners) and the
// member order are kept incrementally for the same reason.
//
// Persistence: the group's existence and its group epoch are written to
// __consumer_offsets in Kafka's own schemas: ConsumerGroupMetadataKey
// (record type 3 in the key's version field, then the group id as an int16
// length-prefixed string) with ConsumerGroupMetadataValue v0 (flexible: the
// group epoch as int32, then tagged fields; Kafka 4.1+'s optional
// MetadataHash and CreationTimeMs tags are not written, and are skipped when
// read). A tombstone of that key turns the group back into a classic one;
// DeleteGroups and offset expiry write it before the classic
// GroupMetadataKey tombstone, which forgets the group. Members,
// subscriptions and assignments are NOT persisted (Kafka also writes record
// types 4-8 for them): after a restart the group is loaded Empty with its
// epoch and committed offsets, and a member heartbeating with its old member
// id is answered UNKNOWN_MEMBER_ID, so it rejoins with epoch 0.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumer group member epochs with a meaning of their own (KIP-848).
const (
	cgJoinEpoch        = 0
	cgLeaveEpoch       = -1
	cgStaticLeaveEpoch = -2
)

// cgMemberState is a member's reconciliation state, named as Kafka names it.
type cgMemberState int8

const (
	cgStable cgMemberState = iota
	cgUnrevokedPartitions
	cgUnreleasedPartitions
)

var cgMemberStateNames = [...]string{"stable", "unrevoked_partitions", "unreleased_partitions"}

func (s cgMemberState) String() string { return cgMemberStateNames[s] }

// tpID is one partition by topic id.
type tpID struct {
	topic     TopicID
	partition int32
}

// partSet is a set of partitions.
type partSet map[tpID]bool

func (s partSet) clone() partSet {
	out := make(partSet, len(s))
	for tp := range s {
		out[tp] = true
	}
	return out
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for tp := range s {
		if !o[tp] {
			return false
		}
	}
	return true
}

// sorted lists s by topic id and partition.
func (s partSet) sorted() []tpID {
	out := make([]tpID, 0, len(s))
	for tp := range s {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if c := strings.Compare(string(out[i].topic[:]), string(out[j].topic[:])); c != 0 {
			return c < 0
		}
		return out[i].partition < out[j].partition
	})
	return out
}

// byTopic groups s by topic, topics and partitions sorted.
func (s partSet) byTopic() ([]TopicID, map[TopicID][]int32) {
	m := map[TopicID][]int32{}
	var ids []TopicID
	for _, tp := range s.sorted() {
		if _, ok := m[tp.topic]; !ok {
			ids = append(ids, tp.topic)
		}
		m[tp.topic] = append(m[tp.topic], tp.partition)
	}
	return ids, m
}

// cgMember is one member of a consumer group.
type cgMember struct {
	seq              uint64
	id               string
	instanceID       string
	rackID           string
	clientID         string
	clientHost       string
	epoch            int32 // member epoch
	prevEpoch        int32 // member epoch before the last advance
	state            cgMemberState
	rebalanceTimeout time.Duration
	names            []string // SubscribedTopicNames, sorted
	regex            string   // SubscribedTopicRegex, "" for none
	re               *regexp.Regexp
	assignor         string // ServerAssignor, "" for the group's default

	assigned partSet         // the partitions the member may own now
	target   partSet         // the member's part of the group's target assignment
	revoking partSet         // the partitions it must give up before advancing
	topics   map[string]bool // resolved subscription
	// resolvedAt is the image offset topics was resolved against; valid
	// is false once the subscription changed.
	resolvedAt    int64
	resolvedValid bool
	// since is the member epoch at which each partition of assigned and
	// revoking was given to the member (KIP-1251's assignment epoch).
	since map[tpID]int32

	sendAssignment bool // the assignment changed since the member was last told
	left           bool // a static member that left with epoch -2
	sessionTimer   Timer
	rebalanceTimer Timer
}

// consumerGroup is the KIP-848 state of a group; group.cg is non-nil for a
// group that uses the consumer protocol.
type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	assignor        string
	members         map[string]*cgMember
	static          map[string]string  // instance id -> member id
	imageOffset     int64              // metadata image the subscriptions were last resolved against
	resolved        map[string]cgTopic // the subscribed topics as last resolved
	// owners maps every partition some member owns or is revoking to that
	// member, kept up to date as members reconcile, join and go.
	owners map[tpID]string
	// order is the members sorted by id while orderOK.
	order   []*cgMember
	orderOK bool
	// dirty: the membership or a subscription changed since the target
	// assignment was last computed. The epoch bump, the recomputation and
	// the persisting of the epoch run once, from one post to the shard
	// (flushPosted), for every change made before it runs: a burst of
	// joins, leaves or session expiries costs one assignment, not one per
	// member. waiters are the heartbeats answered after it.
	dirty       bool
	flushPosted bool
	waiters     []func() func(fail *cgHeartbeatResult)
}

// cgTopic is a subscribed topic as the assignment saw it.
type cgTopic struct {
	id         TopicID
	partitions int32
}

func newConsumerGroup(epoch int32) *consumerGroup {
	return &consumerGroup{epoch: epoch, assignmentEpoch: epoch, members: map[string]*cgMember{},
		static: map[string]string{}, imageOffset: -2, owners: map[tpID]string{}}
}

// sortedMembers lists the members by id; the slice is the group's own, not
// to be changed.
func (cg *consumerGroup) sortedMembers() []*cgMember {
	if cg.orderOK && len(cg.order) == len(cg.members) {
		return cg.order
	}
	out := make([]*cgMember, 0, len(cg.members))
	for _, m := range cg.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	cg.order, cg.orderOK = out, true
	return out
}

// orderAdd and orderDrop keep cg.order sorted as members come and go, so a
// join or a leave does not sort the whole group again.
func (cg *consumerGroup) orderAdd(mem *cgMember) {
	if !cg.orderOK {
		return
	}
	i := sort.Search(len(cg.order), func(i int) bool { return cg.order[i].id >= mem.id })
	cg.order = slices.Insert(cg.order, i, mem)
}

func (cg *consumerGroup) orderDrop(mem *cgMember) {
	if !cg.orderOK {
		return
	}
	i := sort.Search(len(cg.order), func(i int) bool { return cg.order[i].id >= mem.id })
	if i < len(cg.order) && cg.order[i] == mem {
		cg.order = slices.Delete(cg.order, i, i+1)
		return
	}
	cg.order, cg.orderOK = nil, false
}

// stateName is the group state as ListGroups and ConsumerGroupDescribe name
// it: Empty, Assigning (the target is behind the group epoch), Reconciling
// (some member is not yet at the assignment epoch) or Stable.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.assignmentEpoch < cg.epoch || cg.dirty:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.left {
			continue
		}
		if m.epoch != cg.assignmentEpoch || m.state != cgStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// consumerGroupKey is Kafka's ConsumerGroupMetadataKey: record type 3 (in
// the key's version field) and the group id.
func consumerGroupKey(group string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 3)
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	return append(b, group...)
}

// consumerGroupRecord is the record of group at group epoch epoch:
// ConsumerGroupMetadataValue v0 is the epoch and an empty tagged-field
// section.
func consumerGroupRecord(group string, epoch int32) kmsg.Record {
	v := binary.BigEndian.AppendUint16(nil, 0)
	v = binary.BigEndian.AppendUint32(v, uint32(epoch))
	v = append(v, 0)
	return kmsg.Record{Key: consumerGroupKey(group), Value: v}
}

var errBadConsumerGroupRecord = errors.New("malformed consumer group metadata record")

// readConsumerGroupRecord decodes a ConsumerGroupMetadataKey and, when value
// is not nil, the epoch of its value (tagged fields after it are ignored).
func readConsumerGroupRecord(key, value []byte) (group string, epoch int32, err error) {
	if len(key) < 4 {
		return "", 0, errBadConsumerGroupRecord
	}
	n := int(int16(binary.BigEndian.Uint16(key[2:])))
	if n < 0 || 4+n > len(key) {
		return "", 0, errBadConsumerGroupRecord
	}
	group = string(key[4 : 4+n])
	if value == nil {
		return group, 0, nil
	}
	if len(value) < 6 {
		return "", 0, errBadConsumerGroupRecord
	}
	return group, int32(binary.BigEndian.Uint32(value[2:])), nil
}

// cgHeartbeatArgs is a ConsumerGroupHeartbeat that passed the handler's
// field checks. Nil fields are "unchanged since the last heartbeat".
type cgHeartbeatArgs struct {
	group, memberID        string
	epoch                  int32
	instanceID, rackID     *string
	rebalanceTimeoutMillis int32 // -1: unchanged
	names                  []string
	namesSet               bool
	regex                  *string
	re                     *regexp.Regexp // compiled regex, anchored
	assignor               *string
	owned                  partSet // nil: unchanged
	clientID, clientHost   string
	image                  Image
}

// full reports a heartbeat that carries the member's whole state; it is
// answered with the assignment even when that did not change.
func (a *cgHeartbeatArgs) full() bool {
	return a.rebalanceTimeoutMillis != -1 && (a.namesSet || a.regex != nil) && a.owned != nil
}

// cgHeartbeatResult is a ConsumerGroupHeartbeat answer.
type cgHeartbeatResult struct {
	err        *kerr.Error
	msg        string
	memberID   string
	epoch      int32
	assignment partSet // nil: not sent
}

func cgError(err *kerr.Error, msg string) cgHeartbeatResult {
	return cgHeartbeatResult{err: err, msg: msg}
}

// instanceMismatch checks a static member's instance id against the
// member id it comes with: UNKNOWN_MEMBER_ID when no member holds it,
// FENCED_INSTANCE_ID when another member does; bad is false when a has no
// instance id or it matches.
func (cg *consumerGroup) instanceMismatch(a cgHeartbeatArgs) (r cgHeartbeatResult, bad bool) {
	if a.instanceID == nil {
		return r, false
	}
	id, ok := cg.static[*a.instanceID]
	switch {
	case !ok:
		return cgError(kerr.UnknownMemberID, "unknown instance id"), true
	case id != a.memberID:
		return cgError(kerr.FencedInstanceID, "the instance id is used by member "+id), true
	}
	return r, false
}

// consumerHeartbeat handles a ConsumerGroupHeartbeat; done runs once on the
// shard, after the group epoch it reports (if it changed) is durable.
func (m *Manager) consumerHeartbeat(a cgHeartbeatArgs, done func(cgHeartbeatResult)) {
	if a.image != nil && (m.image == nil || a.image.Offset() >= m.image.Offset()) {
		// Handlers read the image before posting here, so an older one
		// may arrive after a newer one: never go back.
		m.image = a.image
	}
	if m.groupIDTooLong("ConsumerGroupHeartbeat", a.group) {
		done(cgError(kerr.UnknownServerError, fmt.Sprintf("the group id (%d bytes) is longer than the %d bytes a __consumer_offsets record can hold", len(a.group), maxGroupIDBytes)))
		return
	}
	if m.isShareGroup(a.group) {
		done(cgError(kerr.GroupIDNotFound, "group "+a.group+" is a share group"))
		return
	}
	g := m.groups[a.group]
	if a.epoch < 0 {
		m.consumerLeave(g, a, done)
		return
	}
	if g == nil {
		if a.epoch != cgJoinEpoch {
			done(cgError(kerr.GroupIDNotFound, "group "+a.group+" does not exist"))
			return
		}
		g = m.newGroup(a.group)
	}
	if g.state == groupDead {
		done(cgError(kerr.CoordinatorNotAvailable, ""))
		return
	}
	if g.cg == nil {
		if len(g.members) > 0 || len(g.pending) > 0 {
			done(cgError(kerr.GroupIDNotFound, "group "+a.group+" is not a consumer group"))
			return
		}
		m.toConsumerGroup(g)
	}
	cg := g.cg
	var mem *cgMember
	changed := false
	if a.epoch == cgJoinEpoch {
		if a.owned == nil {
			a.owned = partSet{} // a (re)joining member owns nothing
		}
		var err *kerr.Error
		var msg string
		mem, changed, err, msg = m.cgJoin(g, a)
		if err != nil {
			done(cgError(err, msg))
			return
		}
	} else {
		if r, bad := cg.instanceMismatch(a); bad {
			done(r)
			return
		}
		mem = cg.members[a.memberID]
		if mem == nil {
			done(cgError(kerr.UnknownMemberID, ""))
			return
		}
		if mem.left || !cgEpochValid(mem, a) {
			done(cgError(kerr.FencedMemberEpoch, "the member epoch is fenced"))
			return
		}
	}
	if m.cgUpdateMember(mem, a) {
		changed = true
	}
	m.cgSession(g, mem)
	answer := func() cgHeartbeatResult {
		m.cgReconcile(g, mem, a.owned)
		res := cgHeartbeatResult{memberID: mem.id, epoch: mem.epoch}
		if a.epoch == cgJoinEpoch || a.full() || mem.sendAssignment {
			res.assignment = mem.assigned.clone()
			mem.sendAssignment = false
		}
		return res
	}
	if changed {
		// Answered once the coalesced recomputation has run and its
		// epoch is durable.
		m.cgSchedule(g, func() func(*cgHeartbeatResult) {
			if g.cg != cg || cg.members[mem.id] != mem {
				done(cgError(kerr.UnknownMemberID, "the member left the group"))
				return nil
			}
			res := answer()
			return func(fail *cgHeartbeatResult) {
				if fail != nil {
					done(*fail)
					return
				}
				done(res)
			}
		})
		return
	}
	bumped := m.cgRefresh(g, false)
	res := answer()
	if !bumped {
		done(res)
		return
	}
	m.env.Persist([]kmsg.Record{consumerGroupRecord(g.id, cg.epoch)}, func(err error) {
		if err != nil {
			done(m.cgPersistError(g, err))
			return
		}
		done(res)
	})
}

// cgSchedule marks g's target assignment out of date and makes sure one
// recomputation (cgFlush) is posted to the shard; waiter, if not nil, runs
// after it (see consumerGroup.waiters) and returns what to call once the
// new epoch is persisted (with the error answer if that failed).
func (m *Manager) cgSchedule(g *group, waiter func() func(*cgHeartbeatResult)) {
	cg := g.cg
	cg.dirty = true
	if waiter != nil {
		cg.waiters = append(cg.waiters, waiter)
	}
	if cg.flushPosted {
		return
	}
	cg.flushPosted = true
	m.env.Post(func() { m.cgFlush(g, cg) })
}

// cgFlush bumps the group epoch once for every change cgSchedule recorded,
// computes the target assignment, reconciles and answers the waiting
// heartbeats, and persists the epoch.
func (m *Manager) cgFlush(g *group, cg *consumerGroup) {
	cg.flushPosted = false
	waiters := cg.waiters
	cg.waiters = nil
	live := g.cg == cg && m.groups[g.id] == g
	bumped := false
	if live && cg.dirty {
		cg.dirty = false
		bumped = m.cgRefresh(g, true)
	}
	var finish []func(*cgHeartbeatResult)
	for _, w := range waiters {
		if f := w(); f != nil {
			finish = append(finish, f)
		}
	}
	if !bumped {
		for _, f := range finish {
			f(nil)
		}
		return
	}
	m.env.Persist([]kmsg.Record{consumerGroupRecord(g.id, cg.epoch)}, func(err error) {
		var fail *cgHeartbeatResult
		if err != nil {
			r := m.cgPersistError(g, err) // logs once for the whole batch
			fail = &r
		}
		for _, f := range finish {
			f(fail)
		}
	})
}

// cgPersistError is the answer to a heartbeat whose group epoch could not
// be written. A record the offsets topic refuses (too large: a group id of
// megabytes) will never be written, so that is UNKNOWN_SERVER_ERROR, as
// Kafka's coordinator maps it, and not retriable; it is logged once per
// failed write.
func (m *Manager) cgPersistError(g *group, err error) cgHeartbeatResult {
	if recordRefused(err) {
		m.env.Warn("cannot persist a consumer group epoch: the offsets topic refuses the record", "groupIdBytes", len(g.id), "err", err)
		return cgError(kerr.UnknownServerError, "the group's metadata record cannot be written to __consumer_offsets: "+err.Error())
	}
	return cgError(kerr.NotCoordinator, "cannot persist the group epoch")
}

// recordRefused reports a persist error that retrying cannot fix.
func recordRefused(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage)
}

// cgEpochValid applies KIP-848's member epoch check: the member's epoch,
// or its previous epoch when the owned partitions show the member lost the
// answer that moved it on.
func cgEpochValid(mem *cgMember, a cgHeartbeatArgs) bool {
	if a.epoch == mem.epoch {
		return true
	}
	if a.epoch != mem.prevEpoch || a.owned == nil {
		return false
	}
	for tp := range a.owned {
		if !mem.assigned[tp] {
			return false
		}
	}
	return true
}

// toConsumerGroup turns an Empty classic group (or one that only holds
// offsets) into a consumer group.
func (m *Manager) toConsumerGroup(g *group) {
	g.cg = newConsumerGroup(0)
	g.protocolType = "consumer"
	g.protocolName, g.leader = "", ""
	m.transition(g, groupEmpty)
}

// cgJoin handles a heartbeat with member epoch 0: a new member, a member
// rejoining after losing an answer or being fenced (same member id), or a
// static member replacing its earlier incarnation that left with epoch -2.
func (m *Manager) cgJoin(g *group, a cgHeartbeatArgs) (*cgMember, bool, *kerr.Error, string) {
	cg := g.cg
	id := a.memberID
	if id == "" { // v0: the coordinator names the member
		id = m.env.NewMemberID(a.clientID)
	}
	mem := cg.members[id]
	if a.instanceID != nil {
		if oldID, ok := cg.static[*a.instanceID]; ok && oldID != id && cg.members[oldID] != nil {
			old := cg.members[oldID]
			if !old.left {
				return nil, false, kerr.UnreleasedInstanceID, "instance id " + *a.instanceID + " is used by member " + oldID
			}
			if mem != nil {
				return nil, false, kerr.UnreleasedInstanceID, "member " + id + " already exists"
			}
			m.cgStopTimers(old)
			delete(cg.members, oldID)
			cg.order, cg.orderOK = nil, false
			m.seq++
			// The new incarnation takes the old one's assignment at member
			// epoch 0; reconciling moves it to the assignment epoch.
			mem = &cgMember{seq: m.seq, id: id, instanceID: old.instanceID, state: old.state, assigned: old.assigned, revoking: old.revoking, since: old.since, names: old.names, regex: old.regex,
				re: old.re, assignor: old.assignor, topics: old.topics, rebalanceTimeout: old.rebalanceTimeout, sendAssignment: true, target: old.target}
			cg.members[id] = mem
			cg.static[mem.instanceID] = id
			for tp := range mem.assigned {
				cg.owners[tp] = id
			}
			for tp := range mem.revoking {
				cg.owners[tp] = id
			}
			return mem, false, nil, ""
		}
	}
	if mem != nil {
		if mem.left {
			mem.left = false
			mem.epoch = mem.prevEpoch
		}
		mem.sendAssignment = true
		return mem, false, nil, ""
	}
	if len(cg.members) >= m.cfg.consumerMaxSize {
		return nil, false, kerr.GroupMaxSizeReached, "the group is full"
	}
	m.seq++
	mem = &cgMember{seq: m.seq, id: id, assigned: partSet{}, since: map[tpID]int32{}, sendAssignment: true}
	if a.instanceID != nil {
		mem.instanceID = *a.instanceID
		cg.static[mem.instanceID] = id
	}
	cg.members[id] = mem
	cg.orderAdd(mem)
	m.cgSyncState(g)
	return mem, true, nil, ""
}

// cgUpdateMember applies the heartbeat's non-null fields to mem; true when
// what the assignment depends on changed.
func (m *Manager) cgUpdateMember(mem *cgMember, a cgHeartbeatArgs) bool {
	changed := false
	mem.clientID, mem.clientHost = a.clientID, a.clientHost
	if a.rackID != nil {
		mem.rackID = *a.rackID
	}
	if a.rebalanceTimeoutMillis > 0 {
		mem.rebalanceTimeout = time.Duration(a.rebalanceTimeoutMillis) * time.Millisecond
	}
	if a.namesSet {
		names := slices.Clone(a.names)
		sort.Strings(names)
		names = slices.Compact(names)
		if !slices.Equal(names, mem.names) {
			mem.names = names
			mem.resolvedValid = false
			changed = true
		}
	}
	if a.regex != nil && *a.regex != mem.regex {
		mem.regex, mem.re = *a.regex, a.re
		mem.resolvedValid = false
		changed = true
	}
	if a.assignor != nil && *a.assignor != mem.assignor {
		mem.assignor = *a.assignor
		changed = true
	}
	if mem.rebalanceTimeout <= 0 {
		mem.rebalanceTimeout = m.cfg.consumerSessionTimeout
	}
	return changed
}

// cgResolve computes the topics mem subscribes to in im.
func cgResolve(mem *cgMember, im Image) map[string]bool {
	out := map[string]bool{}
	if im == nil {
		return out
	}
	for _, n := range mem.names {
		if _, _, ok := im.Topic(n); ok {
			out[n] = true
		}
	}
	if mem.re != nil {
		im.EachTopic(func(n string) {
			if mem.re.MatchString(n) {
				out[n] = true
			}
		})
	}
	return out
}

// cgRefresh re-resolves the subscriptions when the metadata image or a
// member changed and, if the group's resolved subscription, membership or
// assignor changed (or force), bumps the group epoch and computes the new
// target assignment. It reports whether the epoch was bumped.
func (m *Manager) cgRefresh(g *group, force bool) bool {
	cg := g.cg
	im := m.image
	off := int64(-1)
	if im != nil {
		off = im.Offset()
	}
	if !force && off == cg.imageOffset {
		return false
	}
	cg.imageOffset = off
	resolved := map[string]cgTopic{}
	for _, mem := range cg.members {
		if !mem.resolvedValid || mem.resolvedAt != off {
			mem.topics = cgResolve(mem, im)
			mem.resolvedAt, mem.resolvedValid = off, true
		}
		for n := range mem.topics {
			id, partitions, _ := im.Topic(n)
			resolved[n] = cgTopic{id: id, partitions: partitions}
		}
	}
	assignor := m.cgAssignor(cg)
	same := len(resolved) == len(cg.resolved) && assignor == cg.assignor
	if same {
		for n, t := range resolved {
			if cg.resolved[n] != t {
				same = false
				break
			}
		}
	}
	if same && !force {
		return false
	}
	cg.resolved = resolved
	cg.assignor = assignor
	m.cgBump(g)
	return true
}

// cgAssignor picks the assignor most members ask for; ties and members
// without a preference go to the first of group.consumer.assignors.
func (m *Manager) cgAssignor(cg *consumerGroup) string {
	votes := map[string]int{}
	for _, mem := range cg.members {
		if mem.assignor != "" {
			votes[mem.assignor]++
		}
	}
	best, n := "", 0
	for _, name := range m.cfg.consumerAssignors {
		if votes[name] > n {
			best, n = name, votes[name]
		}
	}
	if best == "" && len(m.cfg.consumerAssignors) > 0 {
		best = m.cfg.consumerAssignors[0]
	}
	return best
}

// cgBump starts a new group epoch and computes its target assignment.
func (m *Manager) cgBump(g *group) {
	cg := g.cg
	cg.epoch++
	members := cg.sortedMembers()
	subs := make([]cgSubscriber, len(members))
	for i, mem := range members {
		subs[i] = cgSubscriber{id: mem.id, instanceID: mem.instanceID, topics: mem.topics, prev: mem.target}
	}
	for i, t := range assignSubscribers(cg.assignor, subs, cg.resolved) {
		members[i].target = t
	}
	cg.assignmentEpoch = cg.epoch
	m.cgSyncState(g)
}

// cgSyncState keeps the classic state of g in line with its consumer
// group: Empty without members, Stable otherwise (the offset, expiry and
// delete paths read it).
func (m *Manager) cgSyncState(g *group) {
	want := groupStable
	if len(g.cg.members) == 0 {
		want = groupEmpty
	}
	if g.state != want {
		m.transition(g, want)
	}
}

// cgDisown drops mem as the owner of ps in cg.owners.
func cgDisown(cg *consumerGroup, mem *cgMember, ps partSet) {
	for tp := range ps {
		if cg.owners[tp] == mem.id {
			delete(cg.owners, tp)
		}
	}
}

// cgReconcile moves mem toward its target assignment (see the file
// comment). owned is what the member reported owning, nil when it did not
// say.
func (m *Manager) cgReconcile(g *group, mem *cgMember, owned partSet) {
	cg := g.cg
	target := mem.target
	switch mem.state {
	case cgUnrevokedPartitions:
		if owned == nil {
			return
		}
		for tp := range mem.revoking {
			if owned[tp] {
				return
			}
		}
		for tp := range mem.revoking {
			delete(mem.since, tp)
		}
		cgDisown(cg, mem, mem.revoking)
		mem.revoking = nil
		mem.state = cgStable
		if mem.rebalanceTimer != nil {
			mem.rebalanceTimer.Stop()
			mem.rebalanceTimer = nil
		}
	case cgUnreleasedPartitions:
		if mem.epoch == cg.assignmentEpoch {
			m.cgAddReleased(cg, mem, target)
			return
		}
	case cgStable:
		if mem.epoch == cg.assignmentEpoch {
			return
		}
	}
	keep := partSet{}
	revoke := partSet{}
	for tp := range mem.assigned {
		if target[tp] {
			keep[tp] = true
		} else {
			revoke[tp] = true
		}
	}
	if len(revoke) > 0 {
		mem.assigned = keep
		mem.revoking = revoke
		mem.state = cgUnrevokedPartitions
		mem.sendAssignment = true
		epoch := mem.epoch
		if mem.rebalanceTimer != nil {
			mem.rebalanceTimer.Stop()
		}
		mem.rebalanceTimer = m.env.AfterFunc(mem.rebalanceTimeout, func() {
			mem.rebalanceTimer = nil
			if cg.members[mem.id] == mem && mem.state == cgUnrevokedPartitions && mem.epoch == epoch {
				m.cgRemove(g, mem)
			}
		})
		return
	}
	mem.prevEpoch, mem.epoch = mem.epoch, cg.assignmentEpoch
	mem.state = cgStable
	m.cgAddReleased(cg, mem, target)
}

// cgAddReleased gives mem the partitions of its target that no other member
// owns any more; the member is stable once it has its whole target.
func (m *Manager) cgAddReleased(cg *consumerGroup, mem *cgMember, target partSet) {
	missing := false
	for tp := range target {
		if mem.assigned[tp] {
			continue
		}
		if o, ok := cg.owners[tp]; ok && o != mem.id {
			missing = true
			continue
		}
		cg.owners[tp] = mem.id
		mem.assigned[tp] = true
		mem.since[tp] = mem.epoch
		mem.sendAssignment = true
	}
	if missing {
		mem.state = cgUnreleasedPartitions
	} else {
		mem.state = cgStable
	}
}

// cgSession restarts mem's session timer.
func (m *Manager) cgSession(g *group, mem *cgMember) {
	if mem.sessionTimer != nil {
		mem.sessionTimer.Stop()
	}
	mem.sessionTimer = m.env.AfterFunc(m.cfg.consumerSessionTimeout, func() {
		mem.sessionTimer = nil
		if g.cg != nil && g.cg.members[mem.id] == mem {
			m.cgRemove(g, mem)
		}
	})
}

func (m *Manager) cgStopTimers(mem *cgMember) {
	if mem.sessionTimer != nil {
		mem.sessionTimer.Stop()
		mem.sessionTimer = nil
	}
	if mem.rebalanceTimer != nil {
		mem.rebalanceTimer.Stop()
		mem.rebalanceTimer = nil
	}
}

// cgRemove takes mem out of the group (session or rebalance timeout); the
// group epoch bump, the new target assignment and the persisting of the
// epoch follow from cgSchedule, once for every removal made before it runs.
func (m *Manager) cgRemove(g *group, mem *cgMember) {
	m.cgDrop(g, mem)
	m.cgSchedule(g, nil)
}

// cgDrop deletes mem from g's consumer group.
func (m *Manager) cgDrop(g *group, mem *cgMember) {
	cg := g.cg
	m.cgStopTimers(mem)
	delete(cg.members, mem.id)
	cg.orderDrop(mem)
	cgDisown(cg, mem, mem.assigned)
	cgDisown(cg, mem, mem.revoking)
	if mem.instanceID != "" && cg.static[mem.instanceID] == mem.id {
		delete(cg.static, mem.instanceID)
	}
	m.cgSyncState(g)
}

// consumerLeave handles member epoch -1 (leave) and -2 (a static member
// leaving for now: it keeps its assignment until its session expires).
func (m *Manager) consumerLeave(g *group, a cgHeartbeatArgs, done func(cgHeartbeatResult)) {
	if g == nil || g.cg == nil {
		done(cgError(kerr.UnknownMemberID, ""))
		return
	}
	cg := g.cg
	mem := cg.members[a.memberID]
	if r, bad := cg.instanceMismatch(a); bad {
		done(r)
		return
	}
	if mem == nil {
		done(cgError(kerr.UnknownMemberID, ""))
		return
	}
	res := cgHeartbeatResult{memberID: mem.id, epoch: a.epoch}
	if a.epoch == cgStaticLeaveEpoch && mem.instanceID != "" {
		if !mem.left {
			mem.left = true
			if mem.epoch > 0 {
				mem.prevEpoch = mem.epoch
			}
			if mem.rebalanceTimer != nil {
				mem.rebalanceTimer.Stop()
				mem.rebalanceTimer = nil
			}
		}
		done(res)
		return
	}
	m.cgDrop(g, mem)
	m.cgSchedule(g, func() func(*cgHeartbeatResult) {
		return func(fail *cgHeartbeatResult) {
			if fail != nil {
				done(*fail)
				return
			}
			done(res)
		}
	})
}

// cgCheckMember validates an OffsetFetch v9 by a consumer group member:
// member epoch -1 with an empty member id (an admin or standalone client)
// only while the group has no members; otherwise a known member
// (UNKNOWN_MEMBER_ID) at its current member epoch (STALE_MEMBER_EPOCH).
func (g *group) cgCheckMember(memberID string, epoch int32) *kerr.Error {
	if epoch < 0 && memberID == "" {
		if len(g.cg.members) == 0 {
			return nil
		}
		return kerr.UnknownMemberID
	}
	mem := g.cg.members[memberID]
	switch {
	case mem == nil:
		return kerr.UnknownMemberID
	case mem.epoch != epoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}

// cgCheckCommit validates an OffsetCommit or TxnOffsetCommit by a consumer
// group member; the generation is the member epoch. Member epoch -1 with an
// empty member id (an admin or standalone client, or a producer outside the
// group) is allowed only while the group has no members (UNKNOWN_MEMBER_ID
// otherwise); an unknown member answers UNKNOWN_MEMBER_ID and an epoch above
// the member's FENCED_MEMBER_EPOCH (as Kafka's ConsumerGroup
// validateOffsetCommit: the member claims an epoch it was never given). An
// older epoch is checked per partition
// (KIP-1251): the partition must still be the member's (assigned or being
// revoked) and have been given to it at that epoch or before, else
// STALE_MEMBER_EPOCH; perPartition is nil when every partition passes. im
// maps topic names to ids.
func (g *group) cgCheckCommit(memberID string, epoch int32, im Image) (err *kerr.Error, perPartition func(topic string, partition int32) *kerr.Error) {
	cg := g.cg
	if epoch < 0 && memberID == "" {
		if len(cg.members) == 0 {
			return nil, nil
		}
		return kerr.UnknownMemberID, nil
	}
	mem := cg.members[memberID]
	switch {
	case mem == nil:
		return kerr.UnknownMemberID, nil
	case epoch > mem.epoch:
		return kerr.FencedMemberEpoch, nil
	case epoch == mem.epoch:
		return nil, nil
	}
	return nil, func(topic string, partition int32) *kerr.Error {
		if im == nil {
			return kerr.StaleMemberEpoch
		}
		id, _, ok := im.Topic(topic)
		if !ok {
			return kerr.StaleMemberEpoch
		}
		tp := tpID{id, partition}
		if since, ok := mem.since[tp]; ok && since <= epoch && (mem.assigned[tp] || mem.revoking[tp]) {
			return nil
		}
		return kerr.StaleMemberEpoch
	}
}

// cgSummary is a consumer group as ConsumerGroupDescribe shows it.
type cgSummary struct {
	err             *kerr.Error
	state           string
	epoch           int32
	assignmentEpoch int32
	assignor        string
	members         []cgMemberSummary
}

type cgMemberSummary struct {
	id, instanceID, rackID, clientID, clientHost string
	epoch                                        int32
	names                                        []string
	regex                                        string
	assigned, target                             partSet
}

// describeConsumer answers ConsumerGroupDescribe for one group:
// GROUP_ID_NOT_FOUND for an unknown group or a classic one.
func (m *Manager) describeConsumer(groupID string) cgSummary {
	g := m.groups[groupID]
	if g == nil || g.cg == nil || g.state == groupDead {
		return cgSummary{err: kerr.GroupIDNotFound, state: "Dead"}
	}
	cg := g.cg
	s := cgSummary{state: cg.stateName(), epoch: cg.epoch, assignmentEpoch: cg.assignmentEpoch, assignor: cg.assignor}
	if s.assignor == "" {
		s.assignor = m.cgAssignor(cg)
	}
	for _, mem := range cg.sortedMembers() {
		ms := cgMemberSummary{id: mem.id, instanceID: mem.instanceID, rackID: mem.rackID, clientID: mem.clientID,
			clientHost: mem.clientHost, epoch: mem.epoch, names: mem.names, regex: mem.regex,
			assigned: mem.assigned.clone(), target: mem.target.clone()}
		if mem.left {
			ms.epoch = cgStaticLeaveEpoch
		}
		s.members = append(s.members, ms)
	}
	return s
}

// cgSubscribedTopics is the union of the members' resolved subscriptions.
func (cg *consumerGroup) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	for _, mem := range cg.members {
		for t := range mem.topics {
			out[t] = true
		}
		for _, t := range mem.names {
			out[t] = true
		}
	}
	return out
}
