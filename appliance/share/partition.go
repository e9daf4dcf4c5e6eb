package share

// A share-partition's in-flight records (KIP-932, "Share-partition" and
// "In-flight records"). One sharePartition is one share group's view of one
// topic partition: the share-partition start offset (SPSO), the
// share-partition end offset (SPEO = SPSO + len(recs)), and between them
// each record's state (Available, Acquired, Acknowledged, Archived), its
// delivery count and, while Acquired, its owner member and acquisition lock
// deadline. Records at or after the SPEO are Available and not yet tracked.
//
// It is a pure state machine driven with an explicit clock (unix ms): the
// owner shard of the topic partition calls it, and only that shard
// (sharePass), so it holds no locks. Tests drive it directly.
//
// Transitions: Available -> Acquired on a fetch (delivery count + 1);
// Acquired -> Acknowledged on ACCEPT (1); Acquired -> Archived on REJECT
// (3) or GAP (0); Acquired -> Available on RELEASE (2) or acquisition lock
// expiry, or -> Archived instead when the delivery count has reached
// share.delivery.count.limit; RENEW (4, KIP-1222) extends the acquisition
// lock. The SPSO moves past every leading Acknowledged or Archived record,
// and to the log start offset when retention removes records below it.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// recordState is an in-flight record's state, as KIP-932 names them.
type recordState uint8

const (
	recAvailable recordState = iota
	recAcquired
	recAcknowledged
	recArchived
)

var recordStateNames = [...]string{"Available", "Acquired", "Acknowledged", "Archived"}

func (s recordState) String() string { return recordStateNames[s] }

// Acknowledge types of ShareFetch and ShareAcknowledge (KIP-932, KIP-1222).
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

// inflightRecord is one record between the SPSO and the SPEO.
type inflightRecord struct {
	state      recordState
	deliveries int16  // delivery count: times acquired
	member     string // owner while Acquired
	lockUntil  int64  // unix ms the acquisition lock expires, while Acquired
}

// sharePartConfig is the group configuration a share-partition applies,
// read from the group's GROUP config resource and the broker defaults
// (Config.Settings).
type sharePartConfig struct {
	lockMs        int64 // share.record.lock.duration.ms
	deliveryLimit int16 // share.delivery.count.limit
	maxInFlight   int   // share.partition.max.record.locks: bound on SPEO - SPSO
}

// acquiredRange is a run of offsets acquired in one fetch with the same
// delivery count (ShareFetch's AcquiredRecords).
type acquiredRange struct {
	first, last int64
	deliveries  int16
}

// offsetRange is an inclusive range of offsets.
type offsetRange struct{ first, last int64 }

// sharePartition is one (group, topic partition) share-partition. Only its
// topic partition's owner shard touches it.
type sharePartition struct {
	group     string
	topic     TopicID
	partition int32

	startOffset int64 // SPSO
	stateEpoch  int32 // bumped when the SPSO is set from outside (AlterShareGroupOffsets)
	recs        []inflightRecord
	cfg         sharePartConfig

	// persisted is the SPSO last handed to the coordinator to persist;
	// the share flusher writes the SPSO when it differs (Store.flushLoop).
	persisted int64

	waiters   []*Waiter   // ShareFetch long polls to wake when records become Available
	lockTimer *shareTimer // fires at the earliest acquisition lock deadline
}

func newSharePartition(group string, topic TopicID, partition int32, spso int64, stateEpoch int32, cfg sharePartConfig) *sharePartition {
	return &sharePartition{group: group, topic: topic, partition: partition, startOffset: spso, stateEpoch: stateEpoch, cfg: cfg, persisted: spso}
}

// endOffset is the SPEO: the first offset not yet tracked.
func (sp *sharePartition) endOffset() int64 { return sp.startOffset + int64(len(sp.recs)) }

// rec returns the in-flight record at offset, nil outside [SPSO, SPEO).
func (sp *sharePartition) rec(offset int64) *inflightRecord {
	if offset < sp.startOffset || offset >= sp.endOffset() {
		return nil
	}
	return &sp.recs[offset-sp.startOffset]
}

// moveStart moves the SPSO up to logStart when retention or DeleteRecords
// removed the records below it; the dropped in-flight records are gone.
func (sp *sharePartition) moveStart(logStart int64) {
	if logStart <= sp.startOffset {
		return
	}
	n := logStart - sp.startOffset
	if n >= int64(len(sp.recs)) {
		sp.recs = sp.recs[:0]
	} else {
		sp.recs = sp.recs[n:]
	}
	sp.startOffset = logStart
}

// reset sets the SPSO from outside (AlterShareGroupOffsets): every
// in-flight record is forgotten and the state epoch moves on.
func (sp *sharePartition) reset(spso int64) {
	sp.startOffset = spso
	sp.recs = nil
	sp.stateEpoch++
	sp.persisted = spso
}

// advance moves the SPSO past the leading Acknowledged and Archived records.
func (sp *sharePartition) advance() {
	n := 0
	for n < len(sp.recs) && (sp.recs[n].state == recAcknowledged || sp.recs[n].state == recArchived) {
		n++
	}
	if n == 0 {
		return
	}
	sp.startOffset += int64(n)
	if n == len(sp.recs) {
		sp.recs = sp.recs[:0]
		return
	}
	// Copy down once the dead prefix is large, so the slice does not grow forever.
	if n > 1024 || n > len(sp.recs)/2 {
		sp.recs = append(sp.recs[:0:0], sp.recs[n:]...)
		return
	}
	sp.recs = sp.recs[n:]
}

// candidates lists the offsets a fetch may acquire, in offset order, at
// most maxRecords of them: Available in-flight records first (their
// redelivery), then new records from the SPEO up to end (the high
// watermark, or the last stable offset under read_committed), while the
// in-flight window stays within cfg.maxInFlight.
func (sp *sharePartition) candidates(maxRecords int, end int64) []offsetRange {
	var out []offsetRange
	left := int64(maxRecords)
	add := func(o int64) {
		if n := len(out); n > 0 && out[n-1].last+1 == o {
			out[n-1].last = o
		} else {
			out = append(out, offsetRange{o, o})
		}
		left--
	}
	for i := range sp.recs {
		if left <= 0 {
			return out
		}
		if sp.recs[i].state == recAvailable {
			add(sp.startOffset + int64(i))
		}
	}
	limit := end
	if sp.cfg.maxInFlight > 0 {
		limit = min(limit, sp.startOffset+int64(sp.cfg.maxInFlight))
	}
	if from := sp.endOffset(); from < limit && left > 0 {
		last := min(limit, from+left) - 1
		if n := len(out); n > 0 && out[n-1].last+1 == from {
			out[n-1].last = last
		} else {
			out = append(out, offsetRange{from, last})
		}
	}
	return out
}

// acquire acquires the offsets of rs for member until now+cfg.lockMs. Each
// offset must be Available (in flight or at/after the SPEO; new offsets
// must follow the SPEO without a hole). It returns the acquired ranges split
// by delivery count.
func (sp *sharePartition) acquire(rs []offsetRange, member string, nowMs int64) []acquiredRange {
	var out []acquiredRange
	until := nowMs + sp.cfg.lockMs
	for _, r := range rs {
		for o := r.first; o <= r.last; o++ {
			if o == sp.endOffset() {
				sp.recs = append(sp.recs, inflightRecord{})
			}
			rec := sp.rec(o)
			if rec == nil || rec.state != recAvailable {
				continue
			}
			rec.state, rec.member, rec.lockUntil = recAcquired, member, until
			rec.deliveries++
			if n := len(out); n > 0 && out[n-1].last+1 == o && out[n-1].deliveries == rec.deliveries {
				out[n-1].last = o
			} else {
				out = append(out, acquiredRange{o, o, rec.deliveries})
			}
		}
	}
	return out
}

// errInvalidRecordState is INVALID_RECORD_STATE (122) with a reason.
func errInvalidRecordState(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kerr.InvalidRecordState}, args...)...)
}

// validateShareAcks checks a partition's acknowledgement batches as Kafka's
// request validation does, before anything changes: each batch has
// FirstOffset <= LastOffset and one acknowledge type or one per offset,
// every type is 0-3 (4, RENEW, only when renew is allowed), and the batches
// come in increasing offset order without overlapping. A failure is
// INVALID_REQUEST for the partition.
func validateShareAcks(acks []shareAck, renew bool) error {
	prevLast := int64(-1)
	for i, a := range acks {
		switch {
		case a.first > a.last:
			return fmt.Errorf("%w: acknowledgement batch [%d, %d]", kerr.InvalidRequest, a.first, a.last)
		case i > 0 && a.first <= prevLast:
			return fmt.Errorf("%w: acknowledgement batch [%d, %d] overlaps or precedes the batch ending at %d", kerr.InvalidRequest, a.first, a.last, prevLast)
		case len(a.types) == 0 || (len(a.types) != 1 && int64(len(a.types)) != a.last-a.first+1):
			return fmt.Errorf("%w: acknowledgement batch [%d, %d] with %d types", kerr.InvalidRequest, a.first, a.last, len(a.types))
		}
		for _, t := range a.types {
			if t < ackGap || t > ackRenew || (t == ackRenew && !renew) {
				return fmt.Errorf("%w: acknowledge type %d", kerr.InvalidRequest, t)
			}
		}
		prevLast = a.last
	}
	return nil
}

// acknowledge applies one acknowledgement batch of member: offsets
// [first, last] with one type for all (len(types) == 1) or one per offset.
// See acknowledgeAll.
func (sp *sharePartition) acknowledge(member string, first, last int64, types []int8, renew bool, nowMs int64) (bool, error) {
	return sp.acknowledgeAll(member, []shareAck{{first, last, types}}, renew, nowMs)
}

// acknowledgeAll applies a partition's acknowledgement batches of member,
// all or nothing: a malformed list (validateShareAcks) is INVALID_REQUEST;
// then every offset of every batch must be in flight and Acquired by
// member, else the answer is INVALID_RECORD_STATE; only when all pass are
// they applied. Nothing changes on an error. It reports whether records
// became Available (long polls to wake).
func (sp *sharePartition) acknowledgeAll(member string, acks []shareAck, renew bool, nowMs int64) (bool, error) {
	if err := validateShareAcks(acks, renew); err != nil {
		return false, err
	}
	for _, a := range acks {
		if a.first < sp.startOffset || a.last >= sp.endOffset() {
			return false, errInvalidRecordState("batch [%d, %d] is outside the in-flight records [%d, %d)", a.first, a.last, sp.startOffset, sp.endOffset())
		}
		for o := a.first; o <= a.last; o++ {
			rec := sp.rec(o)
			switch {
			case rec.state != recAcquired:
				return false, errInvalidRecordState("offset %d is %s, not Acquired", o, rec.state)
			case rec.member != member:
				return false, errInvalidRecordState("offset %d is acquired by another member", o)
			}
		}
	}
	woke := false
	for _, a := range acks {
		for o := a.first; o <= a.last; o++ {
			rec := sp.rec(o)
			t := a.types[0]
			if len(a.types) > 1 {
				t = a.types[o-a.first]
			}
			switch t {
			case ackAccept:
				sp.settle(rec, recAcknowledged)
			case ackGap, ackReject:
				sp.settle(rec, recArchived)
			case ackRelease:
				if sp.release(rec) {
					woke = true
				}
			case ackRenew:
				rec.lockUntil = nowMs + sp.cfg.lockMs
			}
		}
	}
	sp.advance()
	return woke, nil
}

func (sp *sharePartition) settle(rec *inflightRecord, s recordState) {
	rec.state, rec.member, rec.lockUntil = s, "", 0
}

// release makes an Acquired record Available again, or Archived once its
// delivery count reached the limit; it reports whether it became Available.
func (sp *sharePartition) release(rec *inflightRecord) bool {
	if sp.cfg.deliveryLimit > 0 && rec.deliveries >= sp.cfg.deliveryLimit {
		sp.settle(rec, recArchived)
		return false
	}
	sp.settle(rec, recAvailable)
	return true
}

// releaseMember releases every record member holds (its share session
// closed or it left the group). It reports whether records became Available.
func (sp *sharePartition) releaseMember(member string) bool {
	woke := false
	for i := range sp.recs {
		if rec := &sp.recs[i]; rec.state == recAcquired && rec.member == member {
			if sp.release(rec) {
				woke = true
			}
		}
	}
	sp.advance()
	return woke
}

// expireLocks releases the records whose acquisition lock passed nowMs. It
// reports whether records became Available, and the earliest remaining
// lock deadline (0 when nothing is Acquired).
func (sp *sharePartition) expireLocks(nowMs int64) (bool, int64) {
	woke := false
	var next int64
	for i := range sp.recs {
		rec := &sp.recs[i]
		if rec.state != recAcquired {
			continue
		}
		if rec.lockUntil <= nowMs {
			if sp.release(rec) {
				woke = true
			}
			continue
		}
		if next == 0 || rec.lockUntil < next {
			next = rec.lockUntil
		}
	}
	sp.advance()
	return woke, next
}

// archiveRange archives the Available or new offsets of [first, last]
// (aborted transactional records under read_committed), extending the SPEO.
func (sp *sharePartition) archiveRange(first, last int64) {
	for o := max(first, sp.startOffset); o <= last; o++ {
		if o == sp.endOffset() {
			sp.recs = append(sp.recs, inflightRecord{})
		}
		if rec := sp.rec(o); rec != nil && rec.state == recAvailable {
			sp.settle(rec, recArchived)
		}
	}
}

// lag is the records between the SPSO and end not yet delivered for good
// (DescribeShareGroupOffsets v1's Lag, KIP-1226): end - SPSO less the
// Acknowledged and Archived records in flight.
func (sp *sharePartition) lag(end int64) int64 {
	n := max(end-sp.startOffset, 0)
	for i := range sp.recs {
		if s := sp.recs[i].state; s == recAcknowledged || s == recArchived {
			n--
		}
	}
	return max(n, 0)
}
