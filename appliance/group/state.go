package group

// This file is the classic group membership state machine (KIP-62, KIP-394,
// KIP-345, KIP-429 client side): Empty, PreparingRebalance,
// CompletingRebalance, Stable and Dead, as Kafka's GroupCoordinator runs it.
//
// A Manager owns the groups of one __consumer_offsets partition. It is
// driven by method calls on the partition's owner shard and never blocks:
// answers that have to wait (JoinGroup until the rebalance completes,
// SyncGroup until the leader's assignment is stored) are callbacks, and every
// timer (session expiry, rebalance timeout, initial rebalance delay, pending
// member expiry, sync timeout) comes from Env.afterFunc, whose callback
// runs on the same shard. Tests drive it with a fake clock (TestGroupScripts).

import (
	"bytes"
	"math"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is a classic group's state, named as Kafka names it.
type groupState int8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

var groupStateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s groupState) String() string { return groupStateNames[s] }

// newMemberJoinTimeout bounds how long a new member may wait in a join
// before it is dropped (Kafka's GroupCoordinator.NewMemberJoinTimeoutMs).
const newMemberJoinTimeout = 5 * time.Minute

// Timer is a timer whose callback has not run yet; Stop keeps it from
// running. It is an alias of the unnamed interface, so an Env also
// satisfies a share group package's environment that declares the same
// method without importing this package.
type Timer = interface{ Stop() }

// Env is what a Manager needs from the broker: a clock, timers whose
// callbacks run on the owning shard, member ids, and durable appends to its
// __consumer_offsets partition. Every method is called on the owning shard;
// the callbacks they take run there too.
type Env interface {
	// Now is the current time.
	Now() time.Time
	// AfterFunc runs fn on the owning shard after d, unless the Timer is
	// stopped first.
	AfterFunc(d time.Duration, fn func()) Timer
	// NewMemberID returns a fresh member id for a client
	// ("<client id>-<uuid>").
	NewMemberID(clientID string) string
	// Persist appends recs to the partition as one batch and calls done
	// once they are durable (acks=-1), or with the append's error.
	Persist(recs []kmsg.Record, done func(error))
	// Post runs fn on the shard after the work already queued there (a
	// group's coalesced target-assignment recomputation).
	Post(fn func())
	// Warn logs one line at Warn.
	Warn(msg string, args ...any)
}

// Config holds the broker's group settings.
type Config struct {
	numPartitions         int32         // offsets.topic.num.partitions
	minSessionTimeout     time.Duration // group.min.session.timeout.ms
	maxSessionTimeout     time.Duration // group.max.session.timeout.ms
	initialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	maxSize               int           // group.max.size
	offsetsRetention      time.Duration // offsets.retention.minutes
	retentionCheck        time.Duration // offsets.retention.check.interval.ms
	maxMetadataBytes      int           // offset.metadata.max.bytes

	// KIP-848 consumer groups (Manager.consumerHeartbeat).
	consumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	consumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	consumerAssignors         []string      // group.consumer.assignors, the first is the default
	consumerMaxSize           int           // group.consumer.max.size
	consumerProtocol          bool          // "consumer" in group.coordinator.rebalance.protocols
}

// DefaultConfig is Kafka's defaults for the group settings.
func DefaultConfig() Config {
	return Config{
		numPartitions:         50,
		minSessionTimeout:     6 * time.Second,
		maxSessionTimeout:     30 * time.Minute,
		initialRebalanceDelay: 3 * time.Second,
		maxSize:               1 << 30,
		offsetsRetention:      7 * 24 * time.Hour,
		retentionCheck:        10 * time.Minute,
		maxMetadataBytes:      4096,

		consumerHeartbeatInterval: 5 * time.Second,
		consumerSessionTimeout:    45 * time.Second,
		consumerAssignors:         []string{"uniform", "range"},
		consumerMaxSize:           1<<31 - 1,
		consumerProtocol:          true,
	}
}

type groupProtocol struct {
	name     string
	metadata []byte
}

type groupMember struct {
	seq              uint64 // join order, for deterministic iteration
	id               string
	instanceID       string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []groupProtocol
	assignment       []byte

	joinDone func(joinResult) // set while awaiting a join answer
	syncDone func(syncResult) // set while awaiting a sync answer
	isNew    bool
	hbTimer  Timer
}

func (m *groupMember) metadataFor(protocol string) ([]byte, bool) {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata, true
		}
	}
	return nil, false
}

func sameProtocols(a, b []groupProtocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || !bytes.Equal(a[i].metadata, b[i].metadata) {
			return false
		}
	}
	return true
}

type groupTP struct {
	topic     string
	partition int32
}

// groupOffset is one committed offset.
type groupOffset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // ms
	expireTime  int64 // ms, -1 when the retention applies
	seq         uint64
}

type group struct {
	id           string
	state        groupState
	stateTime    time.Time
	protocolType string
	protocolName string
	generation   int32
	leader       string
	members      map[string]*groupMember
	static       map[string]string // instance id -> member id
	pending      map[string]Timer  // member ids handed out with MEMBER_ID_REQUIRED
	pendingSync  map[string]bool

	newMemberAdded bool
	initialDelay   bool          // the join waits for the initial rebalance delay
	delayRemaining time.Duration // rebalance timeout left for initial delay extensions
	joinTimer      Timer
	syncTimer      Timer

	offsets map[groupTP]groupOffset

	// cg is set when the group uses the KIP-848 consumer protocol
	// (Manager.toConsumerGroup); the classic fields above are then unused.
	cg *consumerGroup
}

func (g *group) sortedMembers() []*groupMember {
	out := make([]*groupMember, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// fenced reports a static member whose instance id now maps to another member id.
func (g *group) fenced(instanceID, memberID string) bool {
	if instanceID == "" {
		return false
	}
	id, ok := g.static[instanceID]
	return ok && id != memberID
}

// supports reports whether a joining member's protocols fit the group.
func (g *group) supports(protocolType string, protocols []groupProtocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		all := true
		for _, m := range g.members {
			if _, ok := m.metadataFor(p.name); !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol every member supports with the most
// first-choice votes; ties go to the leader's preference.
func (g *group) selectProtocol() string {
	members := g.sortedMembers()
	var candidates []string
	for _, p := range members[0].protocols {
		all := true
		for _, m := range members {
			if _, ok := m.metadataFor(p.name); !ok {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.name)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	votes := map[string]int{}
	for _, m := range members {
		for _, p := range m.protocols {
			if contains(candidates, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	pref := candidates
	if l := g.members[g.leader]; l != nil {
		pref = nil
		for _, p := range l.protocols {
			if contains(candidates, p.name) {
				pref = append(pref, p.name)
			}
		}
	}
	best := pref[0]
	for _, c := range pref {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinDone == nil {
			return false
		}
	}
	return true
}

// Manager holds the groups coordinated by one __consumer_offsets
// partition. Every method runs on the partition's owner shard.
type Manager struct {
	env       Env
	cfg       Config
	groups    map[string]*group
	seq       uint64
	commitSeq uint64
	// txnOffsets are transactional commits awaiting their marker, by
	// producer id (Manager.txnCommitOffsets).
	txnOffsets map[int64][]txnPendingOffset
	// image is the latest metadata image a ConsumerGroupHeartbeat brought;
	// consumer group subscriptions are resolved against it.
	image Image
	// share is the same partition's share groups (KIP-932), nil in tests
	// and brokers without them: one group id namespace, so a classic or
	// consumer request for a share group's id is refused.
	share ShareGroups
}

// isShareGroup reports whether id names a share group of this partition.
func (m *Manager) isShareGroup(id string) bool {
	return m.share != nil && m.share.IsShareGroup(id)
}

// NewManager returns the Manager of one __consumer_offsets partition, with
// no groups: the broker replays the partition into it (LoadRecord,
// LoadTxnRecord, LoadTxnMarker, FinishLoad) before serving.
func NewManager(env Env, cfg Config) *Manager {
	return &Manager{env: env, cfg: cfg, groups: map[string]*group{}}
}

// SetShareGroups gives m the same partition's share groups, which share
// its group id namespace. Call it before the partition is loaded.
func (m *Manager) SetShareGroups(s ShareGroups) { m.share = s }

// HasGroup reports whether id names a classic or consumer group of this
// partition that is not Dead (the share coordinator's half of the one
// group id namespace).
func (m *Manager) HasGroup(id string) bool {
	g := m.groups[id]
	return g != nil && g.state != groupDead
}

func (m *Manager) newGroup(id string) *group {
	g := &group{id: id, state: groupEmpty, stateTime: m.env.Now(), members: map[string]*groupMember{},
		static: map[string]string{}, pending: map[string]Timer{}, pendingSync: map[string]bool{},
		offsets: map[groupTP]groupOffset{}}
	m.groups[id] = g
	return g
}

func (m *Manager) transition(g *group, s groupState) {
	g.state = s
	g.stateTime = m.env.Now()
}

// joinArgs is a JoinGroup request for one group.
type joinArgs struct {
	group, memberID, instanceID, clientID, clientHost, protocolType string
	sessionTimeout, rebalanceTimeout                                time.Duration
	protocols                                                       []groupProtocol
	requireKnownMemberID                                            bool // v4+
	// skipAssignment: the client reads SkipAssignment (v9+, KIP-814), so
	// a returning static leader may be told it leads.
	skipAssignment bool
}

type joinResultMember struct {
	id, instanceID string
	metadata       []byte
}

// joinResult is a JoinGroup answer.
type joinResult struct {
	err            *kerr.Error
	memberID       string
	generation     int32
	protocolType   string
	protocolName   string
	leader         string
	skipAssignment bool
	members        []joinResultMember
}

func joinError(err *kerr.Error, memberID string) joinResult {
	return joinResult{err: err, memberID: memberID, generation: -1}
}

// maxGroupIDBytes is the longest group id a __consumer_offsets key can
// hold: the keys write it as an int16-length string, as Kafka's do.
const maxGroupIDBytes = math.MaxInt16

// groupIDTooLong reports, logging one line at Warn, a group id no
// __consumer_offsets record can hold. Kafka fails such a record when it
// serializes it and answers UNKNOWN_SERVER_ERROR, which clients do not
// retry (a retriable NOT_COORDINATOR would have them retry forever).
func (m *Manager) groupIDTooLong(api, group string) bool {
	if len(group) <= maxGroupIDBytes {
		return false
	}
	m.env.Warn("group id too long for __consumer_offsets: request refused with UNKNOWN_SERVER_ERROR", "api", api, "groupIdBytes", len(group), "maxBytes", maxGroupIDBytes)
	return true
}

// toClassicGroup turns an Empty consumer-protocol group back into a classic
// one; the tombstone of its consumer group record makes the change durable.
func (m *Manager) toClassicGroup(g *group) {
	g.cg = nil
	g.protocolType = ""
	m.transition(g, groupEmpty)
	m.env.Persist([]kmsg.Record{{Key: consumerGroupKey(g.id)}}, func(error) {})
}

// join handles a JoinGroup; done runs once, now or when the rebalance completes.
func (m *Manager) join(a joinArgs, done func(joinResult)) {
	switch {
	case a.group == "":
		done(joinError(kerr.InvalidGroupID, a.memberID))
		return
	case m.groupIDTooLong("JoinGroup", a.group):
		done(joinError(kerr.UnknownServerError, a.memberID))
		return
	case a.sessionTimeout < m.cfg.minSessionTimeout || a.sessionTimeout > m.cfg.maxSessionTimeout:
		done(joinError(kerr.InvalidSessionTimeout, a.memberID))
		return
	case a.protocolType == "" || len(a.protocols) == 0:
		done(joinError(kerr.InconsistentGroupProtocol, a.memberID))
		return
	}
	if m.isShareGroup(a.group) {
		done(joinError(kerr.InconsistentGroupProtocol, a.memberID))
		return
	}
	g := m.groups[a.group]
	if g != nil && g.cg != nil {
		// A consumer-protocol group: a classic member may only take it
		// over while it has no members (KIP-848).
		if len(g.cg.members) > 0 {
			done(joinError(kerr.InconsistentGroupProtocol, a.memberID))
			return
		}
		m.toClassicGroup(g)
	}
	if a.memberID == "" {
		if g == nil {
			g = m.newGroup(a.group)
		}
		m.joinNewMember(g, a, done)
		return
	}
	if g == nil {
		done(joinError(kerr.UnknownMemberID, a.memberID))
		return
	}
	m.joinKnownMember(g, a, done)
}

func (m *Manager) joinNewMember(g *group, a joinArgs, done func(joinResult)) {
	if g.state == groupDead {
		done(joinError(kerr.CoordinatorNotAvailable, ""))
		return
	}
	if !g.supports(a.protocolType, a.protocols) {
		done(joinError(kerr.InconsistentGroupProtocol, ""))
		return
	}
	if len(g.members)+len(g.pending) >= m.cfg.maxSize && g.static[a.instanceID] == "" {
		done(joinError(kerr.GroupMaxSizeReached, ""))
		return
	}
	id := m.env.NewMemberID(a.clientID)
	if a.instanceID != "" {
		if old, ok := g.static[a.instanceID]; ok {
			m.replaceStaticMember(g, old, id, a, done)
			return
		}
		m.addMemberAndRebalance(g, id, a, done)
		return
	}
	if a.requireKnownMemberID {
		g.pending[id] = m.env.AfterFunc(a.sessionTimeout, func() { m.expirePending(g, id) })
		done(joinError(kerr.MemberIDRequired, id))
		return
	}
	m.addMemberAndRebalance(g, id, a, done)
}

func (m *Manager) joinKnownMember(g *group, a joinArgs, done func(joinResult)) {
	if g.state == groupDead {
		done(joinError(kerr.CoordinatorNotAvailable, a.memberID))
		return
	}
	if t, ok := g.pending[a.memberID]; ok {
		if !g.supports(a.protocolType, a.protocols) {
			done(joinError(kerr.InconsistentGroupProtocol, a.memberID))
			return
		}
		t.Stop()
		delete(g.pending, a.memberID)
		m.addMemberAndRebalance(g, a.memberID, a, done)
		return
	}
	if g.fenced(a.instanceID, a.memberID) {
		done(joinError(kerr.FencedInstanceID, a.memberID))
		return
	}
	mem := g.members[a.memberID]
	if mem == nil {
		done(joinError(kerr.UnknownMemberID, a.memberID))
		return
	}
	if !g.supports(a.protocolType, a.protocols) {
		done(joinError(kerr.InconsistentGroupProtocol, a.memberID))
		return
	}
	switch g.state {
	case groupPreparingRebalance:
		m.updateMemberAndRebalance(g, mem, a, done)
	case groupCompletingRebalance:
		if sameProtocols(mem.protocols, a.protocols) {
			// The member lost the join answer: send it again.
			done(m.currentJoinResult(g, mem, false))
			return
		}
		m.updateMemberAndRebalance(g, mem, a, done)
	case groupStable:
		if mem.id == g.leader || !sameProtocols(mem.protocols, a.protocols) {
			m.updateMemberAndRebalance(g, mem, a, done)
			return
		}
		done(m.currentJoinResult(g, mem, false))
	default:
		done(joinError(kerr.UnknownMemberID, a.memberID))
	}
}

// currentJoinResult answers mem with the current generation; the leader gets
// every member's metadata.
func (m *Manager) currentJoinResult(g *group, mem *groupMember, skip bool) joinResult {
	r := joinResult{memberID: mem.id, generation: g.generation, protocolType: g.protocolType,
		protocolName: g.protocolName, leader: g.leader, skipAssignment: skip}
	if mem.id == g.leader {
		for _, o := range g.sortedMembers() {
			md, _ := o.metadataFor(g.protocolName)
			r.members = append(r.members, joinResultMember{id: o.id, instanceID: o.instanceID, metadata: md})
		}
	}
	return r
}

func (m *Manager) addMemberAndRebalance(g *group, id string, a joinArgs, done func(joinResult)) {
	m.seq++
	mem := &groupMember{seq: m.seq, id: id, instanceID: a.instanceID, clientID: a.clientID, clientHost: a.clientHost,
		sessionTimeout: a.sessionTimeout, rebalanceTimeout: a.rebalanceTimeout, protocolType: a.protocolType,
		protocols: a.protocols, joinDone: done, isNew: true}
	if g.state == groupPreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	if len(g.members) == 0 {
		g.protocolType = a.protocolType
	}
	if g.leader == "" {
		g.leader = id
	}
	g.members[id] = mem
	if a.instanceID != "" {
		g.static[a.instanceID] = id
	}
	m.scheduleHeartbeat(g, mem, newMemberJoinTimeout)
	m.maybePrepareRebalance(g)
	m.tryCompleteJoin(g)
}

func (m *Manager) updateMemberAndRebalance(g *group, mem *groupMember, a joinArgs, done func(joinResult)) {
	mem.protocols = a.protocols
	mem.sessionTimeout = a.sessionTimeout
	mem.rebalanceTimeout = a.rebalanceTimeout
	mem.clientID, mem.clientHost = a.clientID, a.clientHost
	if mem.joinDone != nil {
		mem.joinDone(joinError(kerr.RebalanceInProgress, mem.id))
	}
	mem.joinDone = done
	m.maybePrepareRebalance(g)
	m.tryCompleteJoin(g)
}

// replaceStaticMember gives a restarted static member (new member id, same
// instance id) the old member's place; the old id is fenced from now on
// (KIP-345, Kafka's GroupCoordinator.updateStaticMemberAndRebalance).
//
// In a Stable group the member keeps its assignment and nothing rebalances
// unless its new protocols change the protocol the group would select;
// its protocol metadata may change otherwise (Kafka compares only the
// selected protocol). The answer carries the current generation. From
// JoinGroup v9 (KIP-814) a returning leader is told it leads, with every
// member's metadata and SkipAssignment set; below v9 it gets the leader id
// the group had before the replacement and no members, so a leader that
// restarted does not think it leads and does not run its assignor (its
// assignment would be ignored by a Stable group). If the group record
// cannot be stored the replacement is undone and the join fails.
// CompletingRebalance rebalances (the leader may be assigning the old
// member id); PreparingRebalance lets the new id join in the old one's place.
func (m *Manager) replaceStaticMember(g *group, oldID, newID string, a joinArgs, done func(joinResult)) {
	mem := g.members[oldID]
	prevLeader := g.leader
	if mem.joinDone != nil {
		mem.joinDone(joinError(kerr.FencedInstanceID, oldID))
		mem.joinDone = nil
	}
	if mem.syncDone != nil {
		mem.syncDone(syncResult{err: kerr.FencedInstanceID})
		mem.syncDone = nil
	}
	m.renameMember(g, mem, newID)
	oldClientID, oldClientHost := mem.clientID, mem.clientHost
	oldSession, oldRebalance, oldProtocols := mem.sessionTimeout, mem.rebalanceTimeout, mem.protocols
	mem.clientID, mem.clientHost = a.clientID, a.clientHost
	mem.sessionTimeout, mem.rebalanceTimeout = a.sessionTimeout, a.rebalanceTimeout
	mem.protocols = a.protocols
	if g.state != groupStable || g.selectProtocol() != g.protocolName {
		// A rebalance, or the running one goes on with the new member id.
		mem.joinDone = done
		m.maybePrepareRebalance(g)
		m.tryCompleteJoin(g)
		return
	}
	m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
	gen := g.generation
	m.env.Persist([]kmsg.Record{groupMetadataRecord(g, m.env.Now())}, func(err error) {
		if err != nil {
			// Undo the replacement unless the group moved on meanwhile:
			// the old member id stays valid.
			undo := g.members[newID] == mem && g.static[a.instanceID] == newID && g.members[oldID] == nil
			if undo {
				m.renameMember(g, mem, oldID)
				mem.clientID, mem.clientHost = oldClientID, oldClientHost
				mem.sessionTimeout, mem.rebalanceTimeout, mem.protocols = oldSession, oldRebalance, oldProtocols
				m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
			}
			m.env.Warn("cannot store group metadata for a rejoining static member", "group", g.id,
				"instanceId", a.instanceID, "replacementUndone", undo, "err", err)
			r := joinError(kerr.CoordinatorNotAvailable, "")
			r.generation = g.generation
			done(r)
			return
		}
		if g.members[newID] != mem || g.generation != gen {
			done(joinError(kerr.RebalanceInProgress, newID))
			return
		}
		if !a.skipAssignment {
			r := m.currentJoinResult(g, mem, false)
			r.leader, r.members = prevLeader, nil
			done(r)
			return
		}
		done(m.currentJoinResult(g, mem, newID == g.leader))
	})
}

// renameMember moves mem to member id id, with its instance id, leadership
// and pending sync.
func (m *Manager) renameMember(g *group, mem *groupMember, id string) {
	oldID := mem.id
	delete(g.members, oldID)
	mem.id = id
	g.members[id] = mem
	if mem.instanceID != "" {
		g.static[mem.instanceID] = id
	}
	if g.leader == oldID {
		g.leader = id
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[id] = true
	}
}

func (m *Manager) expirePending(g *group, id string) {
	if _, ok := g.pending[id]; !ok {
		return
	}
	delete(g.pending, id)
	m.tryCompleteJoin(g)
}

func (m *Manager) maybePrepareRebalance(g *group) {
	switch g.state {
	case groupStable, groupCompletingRebalance, groupEmpty:
		m.prepareRebalance(g)
	}
}

func (m *Manager) prepareRebalance(g *group) {
	if g.state == groupCompletingRebalance {
		m.failPendingSyncs(g, kerr.RebalanceInProgress)
	}
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	clear(g.pendingSync)
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	wasEmpty := g.state == groupEmpty
	m.transition(g, groupPreparingRebalance)
	rt := g.maxRebalanceTimeout()
	if wasEmpty && m.cfg.initialRebalanceDelay > 0 {
		d := min(m.cfg.initialRebalanceDelay, rt)
		g.initialDelay = true
		g.delayRemaining = rt - d
		g.joinTimer = m.env.AfterFunc(d, func() { m.expireInitialDelay(g) })
		return
	}
	g.initialDelay = false
	g.joinTimer = m.env.AfterFunc(rt, func() { g.joinTimer = nil; m.completeJoin(g) })
}

func (m *Manager) expireInitialDelay(g *group) {
	g.joinTimer = nil
	if g.state != groupPreparingRebalance {
		return
	}
	if g.newMemberAdded && g.delayRemaining > 0 {
		g.newMemberAdded = false
		d := min(m.cfg.initialRebalanceDelay, g.delayRemaining)
		g.delayRemaining -= d
		g.joinTimer = m.env.AfterFunc(d, func() { m.expireInitialDelay(g) })
		return
	}
	g.initialDelay = false
	m.completeJoin(g)
}

// failPendingSyncs clears the assignments and answers waiting syncs with err.
func (m *Manager) failPendingSyncs(g *group, err *kerr.Error) {
	for _, mem := range g.sortedMembers() {
		mem.assignment = nil
		if mem.syncDone != nil {
			d := mem.syncDone
			mem.syncDone = nil
			d(syncResult{err: err})
		}
	}
}

func (m *Manager) tryCompleteJoin(g *group) {
	if g.state == groupPreparingRebalance && !g.initialDelay && g.allJoined() {
		m.completeJoin(g)
	}
}

// completeJoin ends the join phase: members that did not rejoin are
// dropped, the next generation starts and every waiting join is answered.
func (m *Manager) completeJoin(g *group) {
	if g.state != groupPreparingRebalance {
		return
	}
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	g.initialDelay = false
	for _, mem := range g.sortedMembers() {
		if mem.joinDone == nil && mem.instanceID == "" {
			m.removeMember(g, mem, kerr.UnknownMemberID)
		}
	}
	if !m.electJoinedLeader(g) && len(g.members) > 0 {
		// Only static members that have not rejoined are left: wait for them
		// to rejoin or for their sessions to expire.
		g.joinTimer = m.env.AfterFunc(g.maxRebalanceTimeout(), func() { g.joinTimer = nil; m.completeJoin(g) })
		return
	}
	g.generation++
	g.newMemberAdded = false
	if len(g.members) == 0 {
		g.protocolName = ""
		m.transition(g, groupEmpty)
		m.env.Persist([]kmsg.Record{groupMetadataRecord(g, m.env.Now())}, func(error) {})
		return
	}
	g.protocolName = g.selectProtocol()
	m.transition(g, groupCompletingRebalance)
	for id := range g.members {
		g.pendingSync[id] = true
	}
	gen := g.generation
	g.syncTimer = m.env.AfterFunc(g.maxRebalanceTimeout(), func() { m.expireSync(g, gen) })
	for _, mem := range g.sortedMembers() {
		if mem.joinDone == nil {
			continue
		}
		d := mem.joinDone
		mem.joinDone = nil
		mem.isNew = false
		m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
		d(m.currentJoinResult(g, mem, false))
	}
}

func (m *Manager) electJoinedLeader(g *group) bool {
	if l := g.members[g.leader]; l != nil && l.joinDone != nil {
		return true
	}
	for _, mem := range g.sortedMembers() {
		if mem.joinDone != nil {
			g.leader = mem.id
			return true
		}
	}
	if len(g.members) == 0 {
		g.leader = ""
	}
	return false
}

// expireSync drops the members that did not sync within the rebalance timeout.
func (m *Manager) expireSync(g *group, gen int32) {
	g.syncTimer = nil
	if g.generation != gen || (g.state != groupCompletingRebalance && g.state != groupStable) || len(g.pendingSync) == 0 {
		return
	}
	for _, mem := range g.sortedMembers() {
		if g.pendingSync[mem.id] {
			m.removeMember(g, mem, kerr.UnknownMemberID)
		}
	}
	m.prepareRebalance(g)
	m.tryCompleteJoin(g)
}

// removeMember takes mem out of g, answering its waiting calls with err.
func (m *Manager) removeMember(g *group, mem *groupMember, err *kerr.Error) {
	if mem.hbTimer != nil {
		mem.hbTimer.Stop()
		mem.hbTimer = nil
	}
	delete(g.members, mem.id)
	if mem.instanceID != "" && g.static[mem.instanceID] == mem.id {
		delete(g.static, mem.instanceID)
	}
	delete(g.pendingSync, mem.id)
	if mem.joinDone != nil {
		d := mem.joinDone
		mem.joinDone = nil
		d(joinError(err, mem.id))
	}
	if mem.syncDone != nil {
		d := mem.syncDone
		mem.syncDone = nil
		d(syncResult{err: err})
	}
	if g.leader == mem.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMemberAndUpdate removes mem and moves the group on: a rebalance
// from Stable or CompletingRebalance, a join completion check while preparing.
func (m *Manager) removeMemberAndUpdate(g *group, mem *groupMember) {
	m.removeMember(g, mem, kerr.UnknownMemberID)
	switch g.state {
	case groupStable, groupCompletingRebalance:
		m.prepareRebalance(g)
		m.tryCompleteJoin(g)
	case groupPreparingRebalance:
		m.tryCompleteJoin(g)
	}
}

func (m *Manager) scheduleHeartbeat(g *group, mem *groupMember, d time.Duration) {
	if mem.hbTimer != nil {
		mem.hbTimer.Stop()
	}
	mem.hbTimer = m.env.AfterFunc(d, func() { mem.hbTimer = nil; m.expireHeartbeat(g, mem) })
}

func (m *Manager) expireHeartbeat(g *group, mem *groupMember) {
	if g.members[mem.id] != mem {
		return
	}
	if (mem.joinDone != nil && !mem.isNew) || g.pendingSync[mem.id] {
		// Awaiting a join or sync answer: the rebalance and sync timeouts bound it.
		m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
		return
	}
	m.removeMemberAndUpdate(g, mem)
}

// syncArgs is a SyncGroup request.
type syncArgs struct {
	group, memberID, instanceID string
	generation                  int32
	protocolType, protocolName  *string
	assignments                 map[string][]byte
}

type syncResult struct {
	err          *kerr.Error
	protocolType string
	protocolName string
	assignment   []byte
}

// sync handles a SyncGroup; done runs once, now or when the leader's
// assignment is stored.
func (m *Manager) sync(a syncArgs, done func(syncResult)) {
	g := m.groups[a.group]
	switch {
	case a.group == "":
		done(syncResult{err: kerr.InvalidGroupID})
		return
	case g == nil:
		done(syncResult{err: kerr.UnknownMemberID})
		return
	case g.state == groupDead:
		done(syncResult{err: kerr.CoordinatorNotAvailable})
		return
	case g.fenced(a.instanceID, a.memberID):
		done(syncResult{err: kerr.FencedInstanceID})
		return
	}
	mem := g.members[a.memberID]
	switch {
	case mem == nil:
		done(syncResult{err: kerr.UnknownMemberID})
		return
	case a.generation != g.generation:
		done(syncResult{err: kerr.IllegalGeneration})
		return
	case a.protocolType != nil && *a.protocolType != g.protocolType,
		a.protocolName != nil && *a.protocolName != g.protocolName:
		done(syncResult{err: kerr.InconsistentGroupProtocol})
		return
	}
	switch g.state {
	case groupEmpty:
		done(syncResult{err: kerr.UnknownMemberID})
	case groupPreparingRebalance:
		done(syncResult{err: kerr.RebalanceInProgress})
	case groupCompletingRebalance:
		if mem.syncDone != nil {
			mem.syncDone(syncResult{err: kerr.RebalanceInProgress})
		}
		mem.syncDone = done
		m.syncedMember(g, mem)
		if mem.id != g.leader {
			return
		}
		assign := map[string][]byte{}
		for id := range g.members {
			assign[id] = a.assignments[id]
		}
		gen := g.generation
		rec := groupMetadataRecordWith(g, m.env.Now(), assign)
		m.env.Persist([]kmsg.Record{rec}, func(err error) {
			if g.state != groupCompletingRebalance || g.generation != gen || m.groups[g.id] != g {
				return
			}
			if err != nil {
				m.failPendingSyncs(g, kerr.CoordinatorNotAvailable)
				m.prepareRebalance(g)
				m.tryCompleteJoin(g)
				return
			}
			for id, as := range assign {
				if mem := g.members[id]; mem != nil {
					mem.assignment = as
				}
			}
			m.transition(g, groupStable)
			for _, mem := range g.sortedMembers() {
				if mem.syncDone != nil {
					d := mem.syncDone
					mem.syncDone = nil
					d(syncResult{protocolType: g.protocolType, protocolName: g.protocolName, assignment: mem.assignment})
				}
			}
		})
	case groupStable:
		m.syncedMember(g, mem)
		done(syncResult{protocolType: g.protocolType, protocolName: g.protocolName, assignment: mem.assignment})
	}
}

func (m *Manager) syncedMember(g *group, mem *groupMember) {
	delete(g.pendingSync, mem.id)
	if len(g.pendingSync) == 0 && g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
}

// heartbeat handles a Heartbeat.
func (m *Manager) heartbeat(groupID, memberID, instanceID string, generation int32) *kerr.Error {
	g := m.groups[groupID]
	switch {
	case groupID == "":
		return kerr.InvalidGroupID
	case g == nil:
		return kerr.UnknownMemberID
	case g.state == groupDead:
		return kerr.CoordinatorNotAvailable
	case g.fenced(instanceID, memberID):
		return kerr.FencedInstanceID
	}
	mem := g.members[memberID]
	switch {
	case mem == nil:
		return kerr.UnknownMemberID
	case generation != g.generation:
		return kerr.IllegalGeneration
	}
	switch g.state {
	case groupEmpty:
		return kerr.UnknownMemberID
	case groupPreparingRebalance:
		m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
		return kerr.RebalanceInProgress
	default:
		m.scheduleHeartbeat(g, mem, mem.sessionTimeout)
		return nil
	}
}

type leaveMember struct {
	memberID, instanceID string
}

// leave handles a LeaveGroup for several members: a group-level error, or
// one error per member (nil for those that left).
func (m *Manager) leave(groupID string, members []leaveMember) (*kerr.Error, []*kerr.Error) {
	g := m.groups[groupID]
	out := make([]*kerr.Error, len(members))
	switch {
	case groupID == "":
		return kerr.InvalidGroupID, nil
	case g == nil:
		for i := range out {
			out[i] = kerr.UnknownMemberID
		}
		return nil, out
	case g.state == groupDead:
		return kerr.CoordinatorNotAvailable, nil
	}
	for i, lm := range members {
		if lm.instanceID != "" {
			id, ok := g.static[lm.instanceID]
			switch {
			case !ok:
				out[i] = kerr.UnknownMemberID
			case lm.memberID != "" && lm.memberID != id:
				out[i] = kerr.FencedInstanceID
			default:
				m.removeMemberAndUpdate(g, g.members[id])
			}
			continue
		}
		if t, ok := g.pending[lm.memberID]; ok {
			t.Stop()
			delete(g.pending, lm.memberID)
			m.tryCompleteJoin(g)
			continue
		}
		mem := g.members[lm.memberID]
		if mem == nil {
			out[i] = kerr.UnknownMemberID
			continue
		}
		m.removeMemberAndUpdate(g, mem)
	}
	return nil, out
}
