// Package fetchsession keeps incremental fetch sessions (KIP-227): the
// partitions a fetcher reads, with the fetch position it last sent and
// the partition state it was last told, so that an incremental Fetch names
// only the partitions whose position changed and its answer carries only
// the partitions with records, an error or a changed high watermark, last
// stable offset or log start offset.
//
// The session metadata of a request (session id, session epoch) decides
// what the request is, as KIP-227's table says:
//
//	id   epoch  meaning
//	0    -1     full fetch, no session (what Fetch below v7 always is)
//	0    0      full fetch; create a session if the cache lets it
//	ID   0      close session ID; full fetch; create a new session if possible
//	ID   -1     close session ID; full fetch, no session
//	ID   N>0    incremental fetch on session ID at epoch N
//
// An incremental fetch names an unknown session: FETCH_SESSION_ID_NOT_FOUND
// (70); a known one at another epoch: INVALID_FETCH_SESSION_EPOCH (71).
// A session created at epoch 0 expects epoch 1 next; each incremental
// fetch accepted moves it on by one.
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions (Kafka's default 1000). A new session takes a free slot, or
// evicts an existing session, as KIP-227 rules: one unused for at least
// the eviction time (Kafka's min.incremental.fetch.session.eviction.ms,
// 120 s, a constant there and here); else, for a privileged new session
// (a follower's), a consumer's session; else a session older than the
// eviction time with fewer partitions than the new one. Otherwise no
// session is created and the fetch is answered in full with session id 0.
//
// It has no I/O and no goroutines; Cache is safe for concurrent use (one
// mutex around the cache and its sessions; no other lock is taken under
// it). Time comes from the caller.
package fetchsession

import (
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// EvictionTime is Kafka's min.incremental.fetch.session.eviction.ms.
const EvictionTime = 120 * time.Second

// DefaultSlots is Kafka's default max.incremental.fetch.session.cache.slots.
const DefaultSlots = 1000

// Key names one partition of a session: by topic id (Fetch v13+) or by
// name (below v13), and partition.
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Part is one partition of a session: what the fetcher last asked for
// and what it was last told.
type Part struct {
	Key
	FetchOffset      int64
	MaxBytes         int32
	LeaderEpoch      int32 // current_leader_epoch as last sent
	LastFetchedEpoch int32
	// What the last answer that carried the partition said (-1 before).
	HW, LSO, LogStart int64
}

// Session is one fetcher's session. Its fields are read and changed only
// through the Cache, under its lock.
type Session struct {
	ID         int32
	epoch      int32 // the epoch the next incremental fetch must carry
	privileged bool
	parts      []Part
	index      map[Key]int
	created    time.Time
	lastUsed   time.Time
}

// Len is the number of partitions in s.
func (s *Session) Len() int { return len(s.parts) }

// Cache is a broker's fetch sessions.
type Cache struct {
	mu        sync.Mutex
	slots     int
	sessions  map[int32]*Session
	rng       *rand.Rand
	evictions int64
}

// NewCache returns a cache of at most slots sessions (0 or less: none, as
// Kafka with max.incremental.fetch.session.cache.slots=0).
func NewCache(slots int, seed uint64) *Cache {
	return &Cache{slots: slots, sessions: map[int32]*Session{}, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Stats are the cache's numbers for metrics (Kafka's
// NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached,
// IncrementalFetchSessionEvictionsPerSec as a total).
type Stats struct {
	Sessions, Partitions int
	Evictions            int64
}

// Stats returns the cache's current numbers.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Sessions: len(c.sessions), Evictions: c.evictions}
	for _, s := range c.sessions {
		st.Partitions += len(s.parts)
	}
	return st
}

// Kind is what a request's session metadata makes of it.
type Kind int8

const (
	// Sessionless: a full fetch answered with session id 0.
	Sessionless Kind = iota
	// Full: a full fetch whose answer may create a session (Create).
	Full
	// Incremental: a fetch on an existing session.
	Incremental
)

// Begin classifies a request by its session id and epoch, closing the
// session a full request names. For an incremental request it returns the
// session and moves its epoch on; errCode is 70 or 71 when the session is
// unknown or the epoch is not the expected one (the whole request fails).
func (c *Cache) Begin(id, epoch int32, now time.Time) (k Kind, s *Session, errCode int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case epoch == -1:
		if id != 0 {
			delete(c.sessions, id)
		}
		return Sessionless, nil, 0
	case epoch == 0:
		if id != 0 {
			delete(c.sessions, id)
		}
		return Full, nil, 0
	}
	s = c.sessions[id]
	if s == nil || id == 0 {
		return Incremental, nil, kerr.FetchSessionIDNotFound.Code
	}
	if epoch != s.epoch {
		return Incremental, nil, kerr.InvalidFetchSessionEpoch.Code
	}
	s.epoch++
	if s.epoch < 0 { // wraps to 1, as Kafka's nextEpoch
		s.epoch = 1
	}
	s.lastUsed = now
	return Incremental, s, 0
}

// Update applies an incremental request's partitions to s: each named
// partition is added (at the end of its topic's run, so a topic's
// partitions stay together) or has its fetch position replaced, and each
// forgotten one is removed.
func (c *Cache) Update(s *Session, upserts []Part, forgotten []Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(forgotten) > 0 {
		drop := map[Key]bool{}
		for _, k := range forgotten {
			if _, ok := s.index[k]; ok {
				drop[k] = true
			}
		}
		if len(drop) > 0 {
			kept := s.parts[:0]
			for _, p := range s.parts {
				if !drop[p.Key] {
					kept = append(kept, p)
				}
			}
			clear(s.parts[len(kept):])
			s.parts = kept
			s.reindex()
		}
	}
	for _, u := range upserts {
		if i, ok := s.index[u.Key]; ok {
			p := &s.parts[i]
			p.FetchOffset, p.MaxBytes, p.LeaderEpoch, p.LastFetchedEpoch = u.FetchOffset, u.MaxBytes, u.LeaderEpoch, u.LastFetchedEpoch
			continue
		}
		u.HW, u.LSO, u.LogStart = -1, -1, -1
		at := len(s.parts)
		for i := len(s.parts) - 1; i >= 0; i-- {
			if s.parts[i].TopicID == u.TopicID && s.parts[i].Topic == u.Topic {
				at = i + 1
				break
			}
		}
		s.parts = append(s.parts, Part{})
		copy(s.parts[at+1:], s.parts[at:])
		s.parts[at] = u
		if at == len(s.parts)-1 {
			s.index[u.Key] = at
		} else {
			s.reindex()
		}
	}
}

func (s *Session) reindex() {
	clear(s.index)
	for i, p := range s.parts {
		s.index[p.Key] = i
	}
}

// Each calls f with each partition of s in session order (a topic's
// partitions together), under the cache's lock: f must not call c.
func (c *Cache) Each(s *Session, f func(i int, p *Part)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range s.parts {
		f(i, &s.parts[i])
	}
}

// Answered records what an incremental answer said of partition i of s
// (its index as Each gave it, in the same fetch) and reports whether the
// answer must carry it: it has records or an error, or its high
// watermark, last stable offset or log start offset changed since the
// last answer that carried it.
func (c *Cache) Answered(s *Session, i int, hasRecords bool, errCode int16, hw, lso, logStart int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(s.parts) {
		return true
	}
	p := &s.parts[i]
	must := hasRecords || errCode != 0 || p.HW != hw || p.LSO != lso || p.LogStart != logStart
	p.HW, p.LSO, p.LogStart = hw, lso, logStart
	return must
}

// Create makes a session of parts (whose HW, LSO and LogStart are what
// the full answer said) if the cache has a slot or may evict a session
// for it, and returns its id, or 0 when no session was created.
func (c *Cache) Create(parts []Part, privileged bool, now time.Time) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots <= 0 {
		return 0
	}
	if len(c.sessions) >= c.slots && !c.evictFor(len(parts), privileged, now) {
		return 0
	}
	var id int32
	for id == 0 || c.sessions[id] != nil {
		id = c.rng.Int32() // never negative; 0 means none
	}
	s := &Session{ID: id, epoch: 1, privileged: privileged, parts: append([]Part(nil), parts...),
		index: make(map[Key]int, len(parts)), created: now, lastUsed: now}
	s.reindex()
	c.sessions[id] = s
	return id
}

// evictFor evicts one session to make room for a new one of n partitions,
// by KIP-227's rules, and reports whether it did.
func (c *Cache) evictFor(n int, privileged bool, now time.Time) bool {
	all := make([]*Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		all = append(all, s)
	}
	// Least recently used first, then the smaller, then by id: the choice
	// does not depend on map order.
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if !a.lastUsed.Equal(b.lastUsed) {
			return a.lastUsed.Before(b.lastUsed)
		}
		if len(a.parts) != len(b.parts) {
			return len(a.parts) < len(b.parts)
		}
		return a.ID < b.ID
	})
	var victim *Session
	if now.Sub(all[0].lastUsed) >= EvictionTime {
		victim = all[0]
	}
	if victim == nil && privileged {
		for _, s := range all {
			if !s.privileged && (victim == nil || len(s.parts) < len(victim.parts)) {
				victim = s
			}
		}
	}
	if victim == nil {
		for _, s := range all {
			if s.privileged == privileged && now.Sub(s.created) >= EvictionTime && len(s.parts) < n &&
				(victim == nil || len(s.parts) < len(victim.parts)) {
				victim = s
			}
		}
	}
	if victim == nil {
		return false
	}
	delete(c.sessions, victim.ID)
	c.evictions++
	return true
}

// Get returns session id (nil when unknown), for tests and tools.
func (c *Cache) Get(id int32) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}
