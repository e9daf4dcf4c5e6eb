package share

// The share-partitions of every share group on this broker, and the share
// sessions (KIP-932, "Share sessions", "Share-partitions"). A
// sharePartition lives on the owner shard of its topic partition, in that
// shard's map (Store.parts[shard id]), and is touched only there: a
// ShareFetch or ShareAcknowledge handler posts one closure per run of
// partitions on the same shard (sharePass) and waits off the shard, as a
// fetch does. Acquisition locks are time.AfterFunc timers that post back to
// the shard. A share-partition is created on its first use from the SPSO
// persisted on the group's coordinator (Manager) or, for a new one,
// from share.auto.offset.reset; a flusher hands changed SPSOs to the
// coordinator every shareFlushInterval to persist.
//
// Share sessions are keyed by (group id, member id): the epoch expected next
// and the partitions in the session with their partition_max_bytes. They are
// guarded by one mutex, held only to check and move an epoch. A session is
// tied to the connection that opened it, as in Kafka: when that connection
// closes, the session ends and the member's records in it are released.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
)

// shareFlushInterval is how often changed SPSOs are persisted: at most this
// much progress is redelivered after a crash.
const shareFlushInterval = 250 * time.Millisecond

// tpKey is a topic partition by topic id.
type tpKey struct {
	id TopicID
	p  int32
}

type sharePartKey struct {
	group string
	tp    tpKey
}

type shareSessionKey struct{ group, member string }

// shareSession is one member's share session on this broker.
type shareSession struct {
	epoch int32           // the epoch the next request must carry
	parts map[tpKey]int32 // partitions in the session, with partition_max_bytes
	next  int             // rotates the first partition fetched
	done  chan struct{}   // closed when the session ends
}

// Store is the broker's share groups: the Managers of the
// __consumer_offsets partitions, the share-partitions and the share
// sessions. The group coordinator's start makes it (NewStore, AddManager
// per partition, Start once the partitions are loaded).
type Store struct {
	host     Host
	cfg      Config
	managers []*Manager                         // by __consumer_offsets partition
	parts    []map[sharePartKey]*sharePartition // by shard id; each touched only on its shard
	// live[shard id] is false while the shard holds no share-partition
	// (set where one is made, recomputed by each flush on the shard): the
	// flush ticker skips such shards, so an idle broker without share
	// groups does not wake every shard loop 4 times a second.
	live []atomic.Bool

	mu       sync.Mutex
	sessions map[shareSessionKey]*shareSession
}

// NewStore returns the share groups of a broker with host's shards, under
// cfg (ConfigFromProps).
func NewStore(host Host, cfg Config) *Store {
	s := &Store{host: host, cfg: cfg, sessions: map[shareSessionKey]*shareSession{}}
	for range host.Shards() {
		s.parts = append(s.parts, map[sharePartKey]*sharePartition{})
	}
	s.live = make([]atomic.Bool, host.Shards())
	return s
}

// AddManager makes the Manager of the next __consumer_offsets partition,
// whose owner is shard, beside its classic groups; env is the partition's.
// The caller makes the Manager the classic groups' share group seam.
func (s *Store) AddManager(env Env, classic ClassicGroups, shard int) *Manager {
	sm := newManager(env, classic)
	sm.shard = shard
	sm.released = func(group, member string) { go s.releaseMember(group, member, nil) }
	sm.dropGroup = func(group string) { s.dropGroup(group, nil) }
	sm.image = s.host.Image
	s.managers = append(s.managers, sm)
	return sm
}

// Start starts the flusher of changed share-partition start offsets; it
// runs until the broker closes.
func (s *Store) Start() { go s.flushLoop() }

// managerOf is the Manager coordinating group.
func (s *Store) managerOf(group string) *Manager {
	return s.managers[s.host.GroupPartition(group, int32(len(s.managers)))]
}

// shareTimer is an acquisition lock timer of one share-partition.
type shareTimer struct {
	t  *time.Timer
	at int64 // unix ms
}

// armLocks makes sure sp's lock timer fires by at (unix ms).
func (s *Store) armLocks(shard int, sp *sharePartition, at int64) {
	if at <= 0 || sp.lockTimer != nil && sp.lockTimer.at <= at {
		return
	}
	if sp.lockTimer != nil {
		sp.lockTimer.t.Stop()
	}
	tm := &shareTimer{at: at}
	sp.lockTimer = tm
	tm.t = time.AfterFunc(time.Until(time.UnixMilli(at)), func() {
		s.host.PostUnlessClosing(shard, func() {
			if sp.lockTimer != tm {
				return
			}
			sp.lockTimer = nil
			woke, next := sp.expireLocks(shareNow())
			if woke {
				wakeShareWaiters(sp)
			}
			s.armLocks(shard, sp, next)
		})
	})
}

// wakeShareWaiters wakes the long polls parked on sp.
func wakeShareWaiters(sp *sharePartition) {
	for _, w := range sp.waiters {
		w.Wake()
	}
	sp.waiters = sp.waiters[:0]
}

func parkShare(sp *sharePartition, w *Waiter) {
	live := sp.waiters[:0]
	for _, x := range sp.waiters {
		if !x.Done() {
			live = append(live, x)
		}
	}
	sp.waiters = append(live, w)
}

// onShards runs fn on every shard and waits; false if the broker closed.
func (s *Store) onShards(fn func(shard int, parts map[sharePartKey]*sharePartition)) bool {
	var wg sync.WaitGroup
	for shard, parts := range s.parts {
		wg.Add(1)
		s.host.Post(shard, func() {
			defer wg.Done()
			fn(shard, parts)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-s.host.Closing():
		return false
	}
}

// releaseMember releases the records member holds in group's
// share-partitions (it left the group or its session closed); only, when
// set, limits it to those partitions. It does not wait.
func (s *Store) releaseMember(group, member string, only map[tpKey]int32) {
	for shard, parts := range s.parts {
		s.host.PostUnlessClosing(shard, func() { releaseOn(parts, group, member, only) })
	}
}

// releaseMemberWait is releaseMember that waits for every shard.
func (s *Store) releaseMemberWait(group, member string, only map[tpKey]int32) {
	s.onShards(func(_ int, parts map[sharePartKey]*sharePartition) { releaseOn(parts, group, member, only) })
}

func releaseOn(parts map[sharePartKey]*sharePartition, group, member string, only map[tpKey]int32) {
	for k, sp := range parts {
		if k.group != group {
			continue
		}
		if only != nil {
			if _, ok := only[k.tp]; !ok {
				continue
			}
		}
		if sp.releaseMember(member) {
			wakeShareWaiters(sp)
		}
	}
}

// dropGroup forgets group's share-partitions on every shard (the group or
// its offsets were deleted); topics nil means all.
func (s *Store) dropGroup(group string, topics map[TopicID]bool) {
	s.onShards(func(_ int, parts map[sharePartKey]*sharePartition) {
		for k, sp := range parts {
			if k.group == group && (topics == nil || topics[k.tp.id]) {
				if sp.lockTimer != nil {
					sp.lockTimer.t.Stop()
				}
				wakeShareWaiters(sp)
				delete(parts, k)
			}
		}
	})
	s.mu.Lock()
	for k, sess := range s.sessions {
		if k.group == group && topics == nil {
			delete(s.sessions, k)
			close(sess.done)
		}
	}
	s.mu.Unlock()
}

// resetStarts sets live share-partitions' SPSOs after an
// AlterShareGroupOffsets.
func (s *Store) resetStarts(group string, starts map[shareTP]shareStart) {
	s.onShards(func(_ int, parts map[sharePartKey]*sharePartition) {
		for k, sp := range parts {
			if k.group != group {
				continue
			}
			if ss, ok := starts[shareTP{k.tp.id, k.tp.p}]; ok {
				sp.reset(ss.offset)
				sp.stateEpoch = ss.stateEpoch
				wakeShareWaiters(sp)
			}
		}
	})
}

// flushLoop hands changed SPSOs to the groups' coordinators until the
// broker closes, and forgets the share-partitions of deleted topics.
func (s *Store) flushLoop() {
	s.host.Every(shareFlushInterval, func() {
		for shard, parts := range s.parts {
			if !s.live[shard].Load() {
				continue
			}
			s.host.PostUnlessClosing(shard, func() {
				defer func() { s.live[shard].Store(len(parts) > 0) }()
				for k, sp := range parts {
					if s.host.Partition(shard, k.tp.id, k.tp.p) == nil { // the topic was deleted
						if sp.lockTimer != nil {
							sp.lockTimer.t.Stop()
						}
						wakeShareWaiters(sp)
						delete(parts, k)
						continue
					}
					if sp.persisted == sp.startOffset {
						continue
					}
					sp.persisted = sp.startOffset
					// Off the shard: posting to a shard's inbox may block, and
					// the coordinator may be this very shard.
					go s.persistStart(k, shareStart{offset: sp.startOffset, stateEpoch: sp.stateEpoch}, func(error) {})
				}
			})
		}
	})
}

// liveStart reads a share-partition on its shard for
// DescribeShareGroupOffsets: its live SPSO (ok false when it is not loaded)
// and the partition's high watermark (-1 when the partition is not here).
func (s *Store) liveStart(group string, id TopicID, p int32) (spso, lag, hw int64, ok bool) {
	shard := s.host.ShardOf(id, p)
	parts := s.parts[shard]
	type answer struct {
		spso, lag, hw int64
		ok            bool
	}
	ch := make(chan answer, 1)
	s.host.Post(shard, func() {
		a := answer{hw: -1}
		if part := s.host.Partition(shard, id, p); part != nil && !part.Offline() {
			a.hw = part.HighWatermark()
			if sp := parts[sharePartKey{group, tpKey{id, p}}]; sp != nil {
				a.spso, a.lag, a.ok = sp.startOffset, sp.lag(a.hw), true
			}
		}
		ch <- a
	})
	select {
	case a := <-ch:
		return a.spso, a.lag, a.hw, a.ok
	case <-s.host.Closing():
		return 0, 0, -1, false
	}
}

// FlushOnClose writes every changed SPSO into __consumer_offsets before the
// partitions close (the broker's Close, once the connections are gone and
// the broker is closing), so a clean stop redelivers nothing acknowledged.
func (s *Store) FlushOnClose() {
	type update struct {
		k  sharePartKey
		ss shareStart
	}
	var mu sync.Mutex
	var ups []update
	for shard, parts := range s.parts {
		s.host.Call(shard, func() {
			for k, sp := range parts {
				if sp.persisted != sp.startOffset {
					sp.persisted = sp.startOffset
					mu.Lock()
					ups = append(ups, update{k, shareStart{offset: sp.startOffset, stateEpoch: sp.stateEpoch}})
					mu.Unlock()
				}
			}
		})
	}
	for _, u := range ups {
		sm := s.managerOf(u.k.group)
		s.host.Call(sm.shard, func() { sm.setStart(u.k.group, shareTP{u.k.tp.id, u.k.tp.p}, u.ss, false, func(error) {}) })
	}
}

// persistStart asks k's group coordinator to persist a start offset; done
// runs on the coordinator's shard.
func (s *Store) persistStart(k sharePartKey, ss shareStart, done func(error)) {
	sm := s.managerOf(k.group)
	s.host.PostUnlessClosing(sm.shard, func() { sm.setStart(k.group, shareTP{k.tp.id, k.tp.p}, ss, false, done) })
}

// askShare runs fn with group's Manager on its coordinator shard
// (wire.Ask); the Reply is the zero one when the coordinator is not
// running (s is nil).
func askShare[T any](s *Store, group string, fn func(sm *Manager, reply func(T))) wire.Reply[T] {
	if s == nil {
		return wire.Reply[T]{}
	}
	sm := s.managerOf(group)
	post := func(f func()) { s.host.Post(sm.shard, f) }
	return wire.Ask(s.host.Closing(), post, func(reply func(T)) { fn(sm, reply) })
}

// Sessions.

// sessionErr is a share session error, answered at the top level.
type sessionErr struct{ code int16 }

// openSession handles a request's share session epoch: 0 opens (replacing
// the member's session, whose records are released), -1 closes after the
// request, others must match. add and forget change the partitions (fetch
// only). It returns the session's partitions for this request and the code
// to answer (0, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND).
func (s *Store) openSession(c wire.Conn, group, member string, epoch int32, add map[tpKey]int32, forget []tpKey) (parts map[tpKey]int32, next int, released map[tpKey]int32, code int16) {
	key := shareSessionKey{group, member}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[key]
	switch {
	case epoch == 0:
		if sess != nil {
			released = sess.parts
			close(sess.done)
		}
		sess = &shareSession{epoch: 1, parts: map[tpKey]int32{}, done: make(chan struct{})}
		s.sessions[key] = sess
		if c != nil {
			go s.endWithConn(c, key, sess)
		}
	case sess == nil:
		return nil, 0, nil, kerr.ShareSessionNotFound.Code
	case epoch == -1:
		delete(s.sessions, key)
		close(sess.done)
	case epoch != sess.epoch:
		return nil, 0, nil, kerr.InvalidShareSessionEpoch.Code
	default:
		sess.epoch++
		if sess.epoch <= 0 {
			sess.epoch = 1
		}
	}
	for tp, mb := range add {
		sess.parts[tp] = mb
	}
	for _, tp := range forget {
		delete(sess.parts, tp)
	}
	parts = make(map[tpKey]int32, len(sess.parts))
	for tp, mb := range sess.parts {
		parts[tp] = mb
	}
	sess.next++
	return parts, sess.next, released, 0
}

// endWithConn ends sess and releases its records when c closes first.
func (s *Store) endWithConn(c wire.Conn, key shareSessionKey, sess *shareSession) {
	select {
	case <-sess.done:
		return
	case <-s.host.Closing():
		return
	case <-c.Closed():
	}
	s.mu.Lock()
	if s.sessions[key] != sess {
		s.mu.Unlock()
		return
	}
	delete(s.sessions, key)
	close(sess.done)
	parts := sess.parts
	s.mu.Unlock()
	s.releaseMember(key.group, key.member, parts)
}
