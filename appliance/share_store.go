package appliance

// The share-partitions of every share group on this broker, and the share
// sessions (KIP-932, "Share sessions", "Share-partitions"). A
// sharePartition lives on the owner shard of its topic partition, in that
// shard's map (shareStore.parts[shard id]), and is touched only there: a
// ShareFetch or ShareAcknowledge handler posts one closure per run of
// partitions on the same shard (sharePass) and waits off the shard, as a
// fetch does. Acquisition locks are time.AfterFunc timers that post back to
// the shard. A share-partition is created on its first use from the SPSO
// persisted on the group's coordinator (share_group.go) or, for a new one,
// from share.auto.offset.reset; a flusher hands changed SPSOs to the
// coordinator every shareFlushInterval to persist.
//
// Share sessions are keyed by (group id, member id): the epoch expected next
// and the partitions in the session with their partition_max_bytes. They are
// guarded by one mutex, held only to check and move an epoch. A session is
// tied to the connection that opened it, as in Kafka: when that connection
// closes, the session ends and the member's records in it are released.

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareFlushInterval is how often changed SPSOs are persisted: at most this
// much progress is redelivered after a crash.
const shareFlushInterval = 250 * time.Millisecond

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

// shareStore is the broker's share-partitions and share sessions.
type shareStore struct {
	b     *Broker
	parts []map[sharePartKey]*sharePartition // by shard id; each touched only on its shard
	// live[shard id] is false while the shard holds no share-partition
	// (set where one is made, recomputed by each flush on the shard): the
	// flush ticker skips such shards, so an idle broker without share
	// groups does not wake every shard loop 4 times a second.
	live []atomic.Bool

	mu       sync.Mutex
	sessions map[shareSessionKey]*shareSession
}

func newShareStore(b *Broker) *shareStore {
	s := &shareStore{b: b, sessions: map[shareSessionKey]*shareSession{}}
	for range b.shards {
		s.parts = append(s.parts, map[sharePartKey]*sharePartition{})
	}
	s.live = make([]atomic.Bool, len(b.shards))
	return s
}

// shareTimer is an acquisition lock timer of one share-partition.
type shareTimer struct {
	t  *time.Timer
	at int64 // unix ms
}

// armLocks makes sure sp's lock timer fires by at (unix ms).
func (s *shareStore) armLocks(st *shardState, sp *sharePartition, at int64) {
	if at <= 0 || sp.lockTimer != nil && sp.lockTimer.at <= at {
		return
	}
	if sp.lockTimer != nil {
		sp.lockTimer.t.Stop()
	}
	tm := &shareTimer{at: at}
	sp.lockTimer = tm
	tm.t = time.AfterFunc(time.Until(time.UnixMilli(at)), func() {
		s.b.postUnlessClosing(st, func() {
			if sp.lockTimer != tm {
				return
			}
			sp.lockTimer = nil
			woke, next := sp.expireLocks(shareNow())
			if woke {
				wakeShareWaiters(sp)
			}
			s.armLocks(st, sp, next)
		})
	})
}

// wakeShareWaiters wakes the long polls parked on sp.
func wakeShareWaiters(sp *sharePartition) {
	for _, w := range sp.waiters {
		select {
		case w.notify <- struct{}{}:
		default:
		}
	}
	sp.waiters = sp.waiters[:0]
}

func parkShare(sp *sharePartition, w *fetchWaiter) {
	live := sp.waiters[:0]
	for _, x := range sp.waiters {
		if !x.done.Load() {
			live = append(live, x)
		}
	}
	sp.waiters = append(live, w)
}

// onShards runs fn on every shard and waits; false if the broker closed.
func (s *shareStore) onShards(fn func(st *shardState, parts map[sharePartKey]*sharePartition)) bool {
	var wg sync.WaitGroup
	for _, st := range s.b.shards {
		wg.Add(1)
		parts := s.parts[st.id]
		st.loop.Post(func() {
			defer wg.Done()
			fn(st, parts)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-s.b.life.closing:
		return false
	}
}

// releaseMember releases the records member holds in group's
// share-partitions (it left the group or its session closed); only, when
// set, limits it to those partitions. It does not wait.
func (s *shareStore) releaseMember(group, member string, only map[tpKey]int32) {
	for _, st := range s.b.shards {
		parts := s.parts[st.id]
		s.b.postUnlessClosing(st, func() { releaseOn(parts, group, member, only) })
	}
}

// releaseMemberWait is releaseMember that waits for every shard.
func (s *shareStore) releaseMemberWait(group, member string, only map[tpKey]int32) {
	s.onShards(func(_ *shardState, parts map[sharePartKey]*sharePartition) { releaseOn(parts, group, member, only) })
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
func (s *shareStore) dropGroup(group string, topics map[TopicID]bool) {
	s.onShards(func(st *shardState, parts map[sharePartKey]*sharePartition) {
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
func (s *shareStore) resetStarts(group string, starts map[shareTP]shareStart) {
	s.onShards(func(st *shardState, parts map[sharePartKey]*sharePartition) {
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
func (s *shareStore) flushLoop() {
	s.b.every(shareFlushInterval, func() {
		for _, st := range s.b.shards {
			if !s.live[st.id].Load() {
				continue
			}
			parts := s.parts[st.id]
			s.b.postUnlessClosing(st, func() {
				defer func() { s.live[st.id].Store(len(parts) > 0) }()
				for k, sp := range parts {
					if st.parts[k.tp] == nil { // the topic was deleted
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
func (s *shareStore) liveStart(group string, t *TopicImage, p int32) (spso, lag, hw int64, ok bool) {
	st := s.b.shardFor(t, p)
	parts := s.parts[st.id]
	type answer struct {
		spso, lag, hw int64
		ok            bool
	}
	ch := make(chan answer, 1)
	st.loop.Post(func() {
		a := answer{hw: -1}
		if part := st.parts[tpKey{t.ID, p}]; part != nil && part.offline == nil {
			a.hw = part.highWatermark()
			if sp := parts[sharePartKey{group, tpKey{t.ID, p}}]; sp != nil {
				a.spso, a.lag, a.ok = sp.startOffset, sp.lag(a.hw), true
			}
		}
		ch <- a
	})
	select {
	case a := <-ch:
		return a.spso, a.lag, a.hw, a.ok
	case <-s.b.life.closing:
		return 0, 0, -1, false
	}
}

// flushOnClose writes every changed SPSO into __consumer_offsets before the
// partitions close (Broker.Close, once the connections are gone and the
// broker is closing), so a clean stop redelivers nothing acknowledged.
func (s *shareStore) flushOnClose() {
	type update struct {
		k  sharePartKey
		ss shareStart
	}
	var mu sync.Mutex
	var ups []update
	for _, st := range s.b.shards {
		parts := s.parts[st.id]
		st.loop.Call(func() {
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
		op := s.b.coord.groups.partitionOf(u.k.group)
		op.st.loop.Call(func() { op.share.setStart(u.k.group, shareTP{u.k.tp.id, u.k.tp.p}, u.ss, false, func(error) {}) })
	}
}

// persistStart asks k's group coordinator to persist a start offset; done
// runs on the coordinator's shard.
func (s *shareStore) persistStart(k sharePartKey, ss shareStart, done func(error)) {
	gc := s.b.coord.groups
	if gc == nil {
		done(kerr.CoordinatorNotAvailable)
		return
	}
	op := gc.partitionOf(k.group)
	gc.post(op.st, func() { op.share.setStart(k.group, shareTP{k.tp.id, k.tp.p}, ss, false, done) })
}

// askShare runs fn with group's shareManager on its coordinator shard
// (wire.Ask); the Reply is the zero one when the coordinator is not
// running.
func askShare[T any](b *Broker, group string, fn func(sm *shareManager, reply func(T))) wire.Reply[T] {
	gc := b.coord.groups
	if gc == nil {
		return wire.Reply[T]{}
	}
	op := gc.partitionOf(group)
	return wire.Ask(b.life.closing, op.st.loop.Post, func(reply func(T)) { fn(op.share, reply) })
}

// Sessions.

// sessionErr is a share session error, answered at the top level.
type sessionErr struct{ code int16 }

// openSession handles a request's share session epoch: 0 opens (replacing
// the member's session, whose records are released), -1 closes after the
// request, others must match. add and forget change the partitions (fetch
// only). It returns the session's partitions for this request and the code
// to answer (0, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND).
func (s *shareStore) openSession(c *conn, group, member string, epoch int32, add map[tpKey]int32, forget []tpKey) (parts map[tpKey]int32, next int, released map[tpKey]int32, code int16) {
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
func (s *shareStore) endWithConn(c *conn, key shareSessionKey, sess *shareSession) {
	select {
	case <-sess.done:
		return
	case <-s.b.life.closing:
		return
	case <-c.closed:
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

// shareItem is one partition of a ShareFetch or ShareAcknowledge: its acks
// and, for a fetch, what was acquired.
type shareItem struct {
	topic     *TopicImage
	tp        tpKey
	maxBytes  int32
	fetch     bool
	acks      []shareAck
	hadAcks   bool
	ackErr    error
	errCode   int16
	records   []byte
	acquired  []acquiredRange
	needsInit bool
}

type shareAck struct {
	first, last int64
	types       []int8
}

// sharePass is one round over items on their shards: acknowledgements
// first, then (when fetching) acquisition, within maxRecords and maxBytes.
// parked, when set, is registered on every fetched partition so a long
// poll wakes on an append or on records becoming Available. It returns the
// records acquired.
type sharePass struct {
	s             *shareStore
	group, member string
	settings      shareGroupSettings
	renew         bool
	maxRecords    int
	maxBytes      int32
	parked        *fetchWaiter
	acquiredAny   int
	first         bool
}

func (p *sharePass) run(items []*shareItem, acks bool) bool {
	b := p.s.b
	for i := 0; i < len(items); {
		st := b.shardFor(items[i].topic, items[i].tp.p)
		j := i + 1
		for j < len(items) && b.shardFor(items[j].topic, items[j].tp.p) == st {
			j++
		}
		run := items[i:j]
		done := make(chan struct{})
		st.loop.Post(func() {
			defer close(done)
			p.onShard(st, run, acks)
		})
		select {
		case <-done:
		case <-b.life.closing:
			return false
		}
		i = j
	}
	return true
}

// onShard runs on st.
func (p *sharePass) onShard(st *shardState, items []*shareItem, acks bool) {
	parts := p.s.parts[st.id]
	now := shareNow()
	for _, it := range items {
		sp := parts[sharePartKey{p.group, it.tp}]
		if sp != nil {
			sp.cfg = p.settings.part
		}
		if !acks || !it.hadAcks {
			continue
		}
		if it.ackErr != nil {
			continue // refused by validateShareAcks: nothing to apply
		}
		if sp == nil {
			it.ackErr = errInvalidRecordState("no records of the partition are acquired")
			continue
		}
		woke, err := sp.acknowledgeAll(p.member, it.acks, p.renew, now)
		if err != nil {
			it.ackErr = err
		}
		if woke {
			wakeShareWaiters(sp)
		}
	}
	for _, it := range items {
		if !it.fetch {
			continue
		}
		part := st.parts[it.tp]
		sp := parts[sharePartKey{p.group, it.tp}]
		switch {
		case part == nil:
			it.errCode = kerr.NotLeaderForPartition.Code
			continue
		case part.offline != nil:
			it.errCode = kerr.KafkaStorageError.Code
			continue
		case sp == nil:
			it.needsInit = true
			continue
		}
		if p.maxRecords-p.acquiredAny > 0 && p.maxBytes > 0 {
			p.acquireOne(st, part, sp, it, now)
		}
		if p.parked != nil && it.errCode == 0 {
			part.park(p.parked)
			parkShare(sp, p.parked)
		}
	}
}

// acquireOne acquires Available records of sp for the pass's member and
// reads their batches.
func (p *sharePass) acquireOne(st *shardState, part *partition, sp *sharePartition, it *shareItem, now int64) {
	sp.moveStart(part.log.LogStartOffset())
	end := part.highWatermark()
	if p.settings.readCommitted {
		end = min(end, part.log.LastStableOffset())
	}
	cands := sp.candidates(p.maxRecords-p.acquiredAny, end)
	if len(cands) == 0 {
		return
	}
	budget := min(p.maxBytes, it.maxBytes)
	if it.maxBytes <= 0 {
		budget = p.maxBytes
	}
	var buf []byte
	var take []offsetRange
	covered := int64(-1)
	for _, r := range cands {
		if covered > r.last {
			take = append(take, r)
			continue
		}
		from := max(r.first, covered)
		res, err := part.log.Read(from, budget-int32(len(buf)), r.last+1, p.first)
		if err != nil {
			if len(buf) == 0 {
				it.errCode = wire.ErrCode(err)
				if errors.Is(err, nvme.ErrLogClosed) {
					it.errCode = kerr.KafkaStorageError.Code
				}
			}
			break
		}
		start := len(buf)
		buf, err = appendChunks(buf, res.Chunks)
		nvme.ReleaseChunks(res.Chunks) // copied into buf
		if err != nil {
			it.errCode = kerr.KafkaStorageError.Code
			return
		}
		e := batchesEnd(buf[start:])
		if e < 0 {
			break // the byte budget is spent
		}
		p.first = false
		covered = e
		take = append(take, offsetRange{r.first, min(r.last, covered-1)})
		if covered <= r.last {
			break
		}
	}
	if len(take) == 0 {
		return
	}
	if p.settings.readCommitted {
		take = archiveAborted(sp, part, buf, take)
	}
	acq := sp.acquire(take, p.member, now)
	if len(acq) == 0 {
		return
	}
	for _, a := range acq {
		p.acquiredAny += int(a.last - a.first + 1)
	}
	p.maxBytes -= int32(len(buf))
	it.records, it.acquired = buf, acq
	p.s.armLocks(st, sp, now+sp.cfg.lockMs)
}

// archiveAborted removes from take the offsets of batches of aborted
// transactions (read_committed) and archives them in sp.
func archiveAborted(sp *sharePartition, part *partition, buf []byte, take []offsetRange) []offsetRange {
	if len(take) == 0 {
		return take
	}
	aborted := part.log.AbortedTxns(take[0].first, take[len(take)-1].last+1)
	if len(aborted) == 0 {
		return take
	}
	var drop []offsetRange
	_ = forEachBatchHeader(buf, func(base, last, producerID int64, attrs int16) {
		if attrs&0x10 == 0 || attrs&0x20 != 0 {
			return
		}
		for _, a := range aborted {
			if a.ProducerID == producerID && a.FirstOffset <= base && base < a.LastOffset {
				drop = append(drop, offsetRange{base, last})
				return
			}
		}
	})
	if len(drop) == 0 {
		return take
	}
	var out []offsetRange
	for _, r := range take {
		for o := r.first; o <= r.last; o++ {
			dropped := false
			for _, d := range drop {
				if o >= d.first && o <= d.last {
					dropped = true
					break
				}
			}
			if dropped {
				if rec := sp.rec(o); rec == nil || rec.state == recAvailable {
					sp.archiveRange(o, o)
				}
				continue
			}
			if n := len(out); n > 0 && out[n-1].last+1 == o {
				out[n-1].last = o
			} else {
				out = append(out, offsetRange{o, o})
			}
		}
	}
	sp.advance()
	return out
}

// forEachBatchHeader calls fn with each v2 batch header in raw.
func forEachBatchHeader(raw []byte, fn func(base, last, producerID int64, attrs int16)) error {
	for len(raw) >= 61 {
		n := int(int32(be32(raw[8:]))) + 12
		if n < 61 || n > len(raw) {
			return errors.New("cannot read record batch header: bad length")
		}
		base := int64(be64(raw))
		last := base + int64(int32(be32(raw[23:])))
		attrs := int16(be16(raw[21:]))
		pid := int64(be64(raw[43:]))
		fn(base, last, pid, attrs)
		raw = raw[n:]
	}
	return nil
}

func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }
func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
func be64(b []byte) uint64 { return uint64(be32(b))<<32 | uint64(be32(b[4:])) }

// initParts creates the share-partitions items need: from the SPSO
// persisted on the group's coordinator, else from share.auto.offset.reset.
func (s *shareStore) initParts(group string, items []*shareItem, settings shareGroupSettings) {
	for _, it := range items {
		if !it.needsInit {
			continue
		}
		it.needsInit = false
		tp := shareTP{it.tp.id, it.tp.p}
		ans, ok := askShare(s.b, group, func(sm *shareManager, reply func(shareStartAnswer)) {
			ss, found := sm.startFor(group, tp)
			reply(shareStartAnswer{ss, found})
		}).Wait()
		if !ok {
			it.errCode = kerr.CoordinatorNotAvailable.Code
			continue
		}
		st := s.b.shardFor(it.topic, it.tp.p)
		parts := s.parts[st.id]
		done := make(chan shareStart, 1)
		st.loop.Post(func() {
			key := sharePartKey{group, it.tp}
			if sp := parts[key]; sp != nil {
				done <- shareStart{offset: -1}
				return
			}
			part := st.parts[it.tp]
			if part == nil || part.offline != nil {
				done <- shareStart{offset: -1}
				return
			}
			start := ans.start
			if !ans.found {
				start = shareStart{offset: initialStart(part, settings.autoOffsetReset)}
			}
			sp := newSharePartition(group, it.tp.id, it.tp.p, start.offset, start.stateEpoch, settings.part)
			sp.moveStart(part.log.LogStartOffset())
			sp.persisted = sp.startOffset
			parts[key] = sp
			s.live[st.id].Store(true)
			if ans.found {
				done <- shareStart{offset: -1}
				return
			}
			done <- shareStart{offset: sp.startOffset, stateEpoch: sp.stateEpoch}
		})
		var created shareStart
		select {
		case created = <-done:
		case <-s.b.life.closing:
			return
		}
		if created.offset >= 0 {
			// Record the new share-partition on the coordinator now, so the
			// admin APIs see it (later moves go through the flusher).
			askShare(s.b, group, func(sm *shareManager, reply func(error)) {
				sm.setStart(group, tp, created, true, reply)
			}).Wait()
		}
	}
}

type shareStartAnswer struct {
	start shareStart
	found bool
}

// initialStart is a new share-partition's SPSO under share.auto.offset.reset.
func initialStart(part *partition, reset string) int64 {
	switch {
	case reset == "earliest":
		return part.log.LogStartOffset()
	case strings.HasPrefix(reset, "by_duration:"):
		d, err := parseISODuration(strings.TrimPrefix(reset, "by_duration:"))
		if err == nil {
			if off, _, ok := part.log.OffsetForTimestamp(time.Now().Add(-d).UnixMilli()); ok {
				return off
			}
		}
	}
	return part.highWatermark()
}

// shareItemsOrder sorts items by topic id and partition, rotated by next so
// no partition always comes first (MaxRecords is shared by the request).
func shareItemsOrder(items []*shareItem, next int) []*shareItem {
	sort.Slice(items, func(i, j int) bool {
		if c := strings.Compare(string(items[i].tp.id[:]), string(items[j].tp.id[:])); c != 0 {
			return c < 0
		}
		return items[i].tp.p < items[j].tp.p
	})
	if len(items) > 1 {
		k := next % len(items)
		items = append(append(make([]*shareItem, 0, len(items)), items[k:]...), items[:k]...)
	}
	return items
}

// shareLeader is the CurrentLeader of a share response partition.
func (b *Broker) shareLeader(t *TopicImage, p int32) (int32, int32) {
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return -1, -1
	}
	pi := t.Partitions[p]
	return pi.Leader, pi.LeaderEpoch
}

var _ = kmsg.NewShareFetchResponse
