package share

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
)

// shareItem is one partition of a ShareFetch or ShareAcknowledge: its acks
// and, for a fetch, what was acquired.
type shareItem struct {
	topic     *Topic
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
	s             *Store
	group, member string
	settings      shareGroupSettings
	renew         bool
	maxRecords    int
	maxBytes      int32
	parked        *Waiter
	acquiredAny   int
	first         bool
}

func (p *sharePass) run(items []*shareItem, acks bool) bool {
	h := p.s.host
	for i := 0; i < len(items); {
		shard := h.ShardOf(items[i].tp.id, items[i].tp.p)
		j := i + 1
		for j < len(items) && h.ShardOf(items[j].tp.id, items[j].tp.p) == shard {
			j++
		}
		run := items[i:j]
		done := make(chan struct{})
		h.Post(shard, func() {
			defer close(done)
			p.onShard(shard, run, acks)
		})
		select {
		case <-done:
		case <-h.Closing():
			return false
		}
		i = j
	}
	return true
}

// onShard runs on shard.
func (p *sharePass) onShard(shard int, items []*shareItem, acks bool) {
	parts := p.s.parts[shard]
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
		part := p.s.host.Partition(shard, it.tp.id, it.tp.p)
		sp := parts[sharePartKey{p.group, it.tp}]
		switch {
		case part == nil:
			it.errCode = kerr.NotLeaderForPartition.Code
			continue
		case part.Offline():
			it.errCode = kerr.KafkaStorageError.Code
			continue
		case sp == nil:
			it.needsInit = true
			continue
		}
		if p.maxRecords-p.acquiredAny > 0 && p.maxBytes > 0 {
			p.acquireOne(shard, part, sp, it, now)
		}
		if p.parked != nil && it.errCode == 0 {
			part.Park(p.parked)
			parkShare(sp, p.parked)
		}
	}
}

// acquireOne acquires Available records of sp for the pass's member and
// reads their batches.
func (p *sharePass) acquireOne(shard int, part Partition, sp *sharePartition, it *shareItem, now int64) {
	sp.moveStart(part.LogStartOffset())
	end := part.HighWatermark()
	if p.settings.readCommitted {
		end = min(end, part.LastStableOffset())
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
		start := len(buf)
		next, err := part.ReadBatches(buf, from, budget-int32(len(buf)), r.last+1, p.first)
		if errors.Is(err, ErrUnreadable) {
			it.errCode = kerr.KafkaStorageError.Code
			return
		}
		if err != nil {
			if len(buf) == 0 {
				it.errCode = wire.ErrCode(err)
				if errors.Is(err, nvme.ErrLogClosed) {
					it.errCode = kerr.KafkaStorageError.Code
				}
			}
			break
		}
		buf = next
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
	p.s.armLocks(shard, sp, now+sp.cfg.lockMs)
}

// archiveAborted removes from take the offsets of batches of aborted
// transactions (read_committed) and archives them in sp.
func archiveAborted(sp *sharePartition, part Partition, buf []byte, take []offsetRange) []offsetRange {
	if len(take) == 0 {
		return take
	}
	aborted := part.AbortedTxns(take[0].first, take[len(take)-1].last+1)
	if len(aborted) == 0 {
		return take
	}
	var drop []offsetRange
	forEachBatchHeader(buf, func(h nvme.BatchHeader) {
		if !h.IsTransactional() || h.IsControl() {
			return
		}
		for _, a := range aborted {
			if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset < a.LastOffset {
				drop = append(drop, offsetRange{h.BaseOffset, h.LastOffset()})
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

// forEachBatchHeader calls fn with the header of each whole record batch
// in raw (nvme.ParseBatchHeader); it stops at the first header that does
// not parse or batch that raw does not hold whole.
func forEachBatchHeader(raw []byte, fn func(h nvme.BatchHeader)) {
	for len(raw) >= nvme.BatchHeaderSize {
		h, err := nvme.ParseBatchHeader(raw)
		if err != nil || h.Size() > int64(len(raw)) {
			return
		}
		fn(h)
		raw = raw[h.Size():]
	}
}

// initParts creates the share-partitions items need: from the SPSO
// persisted on the group's coordinator, else from share.auto.offset.reset.
func (s *Store) initParts(group string, items []*shareItem, settings shareGroupSettings) {
	for _, it := range items {
		if !it.needsInit {
			continue
		}
		it.needsInit = false
		tp := shareTP{it.tp.id, it.tp.p}
		ans, ok := askShare(s, group, func(sm *Manager, reply func(shareStartAnswer)) {
			ss, found := sm.startFor(group, tp)
			reply(shareStartAnswer{ss, found})
		}).Wait()
		if !ok {
			it.errCode = kerr.CoordinatorNotAvailable.Code
			continue
		}
		shard := s.host.ShardOf(it.tp.id, it.tp.p)
		parts := s.parts[shard]
		done := make(chan shareStart, 1)
		s.host.Post(shard, func() {
			key := sharePartKey{group, it.tp}
			if sp := parts[key]; sp != nil {
				done <- shareStart{offset: -1}
				return
			}
			part := s.host.Partition(shard, it.tp.id, it.tp.p)
			if part == nil || part.Offline() {
				done <- shareStart{offset: -1}
				return
			}
			start := ans.start
			if !ans.found {
				start = shareStart{offset: initialStart(part, settings.autoOffsetReset)}
			}
			sp := newSharePartition(group, it.tp.id, it.tp.p, start.offset, start.stateEpoch, settings.part)
			sp.moveStart(part.LogStartOffset())
			sp.persisted = sp.startOffset
			parts[key] = sp
			s.live[shard].Store(true)
			if ans.found {
				done <- shareStart{offset: -1}
				return
			}
			done <- shareStart{offset: sp.startOffset, stateEpoch: sp.stateEpoch}
		})
		var created shareStart
		select {
		case created = <-done:
		case <-s.host.Closing():
			return
		}
		if created.offset >= 0 {
			// Record the new share-partition on the coordinator now, so the
			// admin APIs see it (later moves go through the flusher).
			askShare(s, group, func(sm *Manager, reply func(error)) {
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
func initialStart(part Partition, reset string) int64 {
	switch {
	case reset == "earliest":
		return part.LogStartOffset()
	case strings.HasPrefix(reset, "by_duration:"):
		d, err := parseISODuration(strings.TrimPrefix(reset, "by_duration:"))
		if err == nil {
			if off, ok := part.OffsetForTimestamp(time.Now().Add(-d).UnixMilli()); ok {
				return off
			}
		}
	}
	return part.HighWatermark()
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
func shareLeader(im Image, t *Topic, p int32) (int32, int32) {
	if !t.has(p) {
		return -1, -1
	}
	return im.Leader(t.ID, p)
}

// batchesEnd is the offset after the last whole record batch in raw, -1
// when raw holds none.
func batchesEnd(raw []byte) int64 {
	end := int64(-1)
	forEachBatchHeader(raw, func(h nvme.BatchHeader) { end = h.LastOffset() + 1 })
	return end
}
