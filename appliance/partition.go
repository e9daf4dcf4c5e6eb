package appliance

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/share"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicConfig is a topic's effective configuration, parsed (config.Topic).
type topicConfig = config.Topic

// effectiveTopicConfigs merges the broker defaults with t's overrides.
func (b *Broker) effectiveTopicConfigs(t *TopicImage) map[string]string {
	out := make(map[string]string, len(b.ctl.defaults.Get(b.cfg.TopicDefaults)))
	for k, v := range b.ctl.defaults.Get(b.cfg.TopicDefaults) {
		out[k] = v
	}
	if t != nil {
		for k, v := range t.Configs {
			out[k] = v
		}
	}
	return out
}

// topicConfig parses t's configs over the broker defaults
// (config.ParseTopic); a nil t gets the defaults.
func (b *Broker) topicConfig(t *TopicImage) topicConfig {
	var overrides map[string]string
	if t != nil {
		overrides = t.Configs
	}
	return config.ParseTopic(overrides, b.ctl.defaults.Get(b.cfg.TopicDefaults))
}

// partition is one partition led by this broker. It is owned by its shard:
// every field is touched only on that shard's loop.
type partition struct {
	b     *Broker
	st    *shardState
	topic string
	id    TopicID
	index int32
	epoch int32
	log   *nvme.Log
	cfg   topicConfig

	offline error // set after an I/O error: the partition refuses reads and writes

	waiters []*share.Waiter // ShareFetch long polls
	view    *partView       // offsets for other shards, parked Fetch long polls (partView.park)

	unflushed int64
	lastFlush time.Time

	// Appends whose bytes the shard's ring is still writing (direct I/O on
	// the uring engine, nvme.BlockCache.SetWriteRing), oldest first from
	// writesHead: each is answered, published and fdatasynced by
	// onWritten once the log's written end offset passes it.
	writes     []appendWait
	writesHead int
}

// appendWait is an append waiting for its bytes to be written.
type appendWait struct {
	end  int64 // its last offset + 1
	info nvme.AppendInfo
	acks int16
	done func(produceResult)
	w    *produceWait
}

// parkedPoll is a Fetch parked on a partition, with the generation it
// parked in: a later fetch on the same request storage is not woken.
type parkedPoll struct {
	lp  *fetchLongPoll
	gen uint64
}

func newPartition(b *Broker, st *shardState, topic string, id TopicID, index, epoch int32, l *nvme.Log, cfg topicConfig) *partition {
	// The view is private until useView gives it the PartitionImage's;
	// nothing reads it before then, so nothing is published to it yet.
	p := &partition{b: b, st: st, topic: topic, id: id, index: index, epoch: epoch, log: l, cfg: cfg, lastFlush: time.Now(), view: &partView{}}
	l.SetWrittenHook(p.onWritten)
	return p
}

// useView makes v, the view of the partition's PartitionImage, the one
// the partition publishes to (openPartition).
func (p *partition) useView(v *partView) {
	if v == nil || v == p.view {
		return
	}
	p.view = v
	if p.b.store.tailReads && p.log != nil {
		p.log.SetTailView(&v.tail)
	}
	p.publishView()
}

// publishView stores the offsets fetches may answer from without a hop
// (partView.publish); an offline or closed partition shows as not open.
func (p *partition) publishView() { p.view.publish(p.viewState()) }

func (p *partition) viewState() viewState {
	if p.log == nil || p.offline != nil {
		return viewState{hw: -1, lso: -1, logStart: -1, epoch: p.epoch}
	}
	hw := p.highWatermark()
	return viewState{hw: hw, lso: min(hw, p.log.LastStableOffset()), logStart: p.log.LogStartOffset(), epoch: p.epoch, open: true}
}

// highWatermark is the log's written end offset: with one replica the ISR
// is the leader alone, so every appended record is committed once it is
// written (the log end offset, but while the shard's ring is still writing
// the last appends, nvme.Log.WrittenEndOffset). Nothing above it is served, so a
// consumer never reads what a kill -9 could still take away.
func (p *partition) highWatermark() int64 { return p.log.WrittenEndOffset() }

// produceResult is one partition's answer to a produce.
type produceResult struct {
	err            error
	baseOffset     int64
	logAppendTime  int64
	logStartOffset int64
}

// append stores records and calls done once the acks policy is met: at
// once for acks 0/1, after fdatasync for acks=-1. done may run on the
// group-commit goroutine.
func (p *partition) append(records []byte, acks int16, done func(produceResult)) {
	p.appendFor(records, acks, done, nil)
}

// appendFor is append for a produce's partition wait w (produceWait),
// whose done is w.doneFn: with acks=-1 the fdatasync answers through w's
// reused callback, so the append allocates nothing.
func (p *partition) appendFor(records []byte, acks int16, done func(produceResult), w *produceWait) {
	info, err := p.appendLog(records)
	p.whenWritten(info, err, acks, done, w)
}

// whenWritten runs afterAppend for an append (appendLog's info and err)
// once its bytes are written: at once, unless the shard's ring is still
// writing them, in which case onWritten runs it. A duplicate waits for the
// original's bytes.
func (p *partition) whenWritten(info nvme.AppendInfo, err error, acks int16, done func(produceResult), w *produceWait) {
	if err == nil && p.log.WrittenEndOffset() <= info.LastOffset {
		if err = p.log.Failure(); err == nil {
			if p.writesHead > 0 && p.writesHead >= len(p.writes)/2 {
				// Under steady load the queue never empties: move what
				// is left down rather than grow the array forever.
				n := copy(p.writes, p.writes[p.writesHead:])
				clear(p.writes[n:])
				p.writes, p.writesHead = p.writes[:n], 0
			}
			p.writes = append(p.writes, appendWait{end: info.LastOffset + 1, info: info, acks: acks, done: done, w: w})
			return
		}
	}
	p.afterAppend(info, err, acks, done, w)
}

// onWritten is the log's written hook (nvme.Log.SetWrittenHook): it runs
// afterAppend for the appends now written, in order, and, when a ring write
// failed, answers the rest with the log's error (KAFKA_STORAGE_ERROR) and
// takes the partition offline.
func (p *partition) onWritten() {
	if p.log == nil {
		return
	}
	end := p.log.WrittenEndOffset()
	failed := p.log.Failure()
	for p.writesHead < len(p.writes) {
		x := p.writes[p.writesHead]
		var err error
		if x.end > end {
			if failed == nil {
				break
			}
			err = failed
		}
		p.writes[p.writesHead] = appendWait{}
		p.writesHead++
		p.afterAppend(x.info, err, x.acks, x.done, x.w)
	}
	if p.writesHead == len(p.writes) {
		p.writes, p.writesHead = p.writes[:0], 0
	}
	if failed != nil {
		p.goOffline(failed)
	}
}

// answerWritesAtClose answers the appends still waiting for their writes
// when the log has closed: Close waited for them and fdatasynced the
// segment, so those now written are answered as stored (the log's sync
// covered acks=-1), the rest, and all of them when Close failed, with
// KAFKA_STORAGE_ERROR. They are not published: the partition is gone.
func (p *partition) answerWritesAtClose(closeErr error) {
	end := p.log.WrittenEndOffset()
	for _, x := range p.writes[p.writesHead:] {
		res := produceResult{baseOffset: x.info.FirstOffset, logAppendTime: x.info.LogAppendTime, logStartOffset: p.log.LogStartOffset()}
		if x.end > end || closeErr != nil {
			err := closeErr
			if err == nil {
				err = nvme.ErrLogClosed
			}
			res = produceResult{err: fmt.Errorf("%w: %v", kerr.KafkaStorageError, err), baseOffset: -1, logAppendTime: -1, logStartOffset: -1}
		}
		x.done(res)
	}
	clear(p.writes)
	p.writes, p.writesHead = p.writes[:0], 0
}

// appendLog appends records to the log; an offline partition refuses with
// KAFKA_STORAGE_ERROR.
func (p *partition) appendLog(records []byte) (nvme.AppendInfo, error) {
	if p.offline != nil {
		return nvme.AppendInfo{}, fmt.Errorf("%w: %v", kerr.KafkaStorageError, p.offline)
	}
	return p.log.Append(records, p.cfg.AppendOptions(p.epoch))
}

// afterAppend answers, flushes and publishes an append (appendLog's info
// and err) once its bytes are written (whenWritten).
func (p *partition) afterAppend(info nvme.AppendInfo, err error, acks int16, done func(produceResult), w *produceWait) {
	if err != nil {
		if errors.Is(err, nvme.ErrLogClosed) {
			p.goOffline(err) // an I/O error: validation errors leave the log as it was
		}
		done(produceResult{err: err, baseOffset: -1, logAppendTime: -1, logStartOffset: -1})
		return
	}
	res := produceResult{baseOffset: info.FirstOffset, logAppendTime: info.LogAppendTime, logStartOffset: p.log.LogStartOffset()}
	if !info.Duplicate {
		p.wakeWaiters()
		p.b.metrics.Produced(p.topic, info.Bytes, info.NumRecords)
	}
	p.unflushed += int64(info.NumRecords)
	needFlush := p.unflushed >= p.cfg.FlushMessages ||
		(p.cfg.FlushMs < int64(time.Duration(math.MaxInt64)/time.Millisecond) && time.Since(p.lastFlush) >= time.Duration(p.cfg.FlushMs)*time.Millisecond)
	if acks != -1 && !needFlush {
		done(res)
		return
	}
	p.unflushed = 0
	p.lastFlush = time.Now()
	flushStart := p.lastFlush
	f, _ := p.log.SyncTarget()
	if w != nil && acks == -1 {
		w.part, w.flushStart, w.synced = p, flushStart, res
		p.st.committer.Sync(f, w.syncFn)
		return
	}
	p.st.committer.Sync(f, func(err error) {
		p.b.metrics.Flushed(flushStart)
		if err != nil {
			p.syncFailed(err)
			if acks == -1 {
				done(syncFailedResult(err))
			}
			return
		}
		if acks == -1 {
			done(res)
		}
	})
	if acks != -1 {
		done(res)
	}
}

// syncFailed takes the partition offline after a failed fdatasync (any
// goroutine), unless the log had closed before its turn came (the
// partition was deleted or moved, or the broker is stopping): that is no
// I/O error.
func (p *partition) syncFailed(err error) {
	if errors.Is(err, nvme.ErrLogClosed) {
		return
	}
	p.st.loop.Post(func() { p.goOffline(err) })
}

// syncFailedResult is the answer to an acks=-1 append whose fdatasync
// failed: KAFKA_STORAGE_ERROR, or NOT_LEADER_OR_FOLLOWER when the log had
// closed (the client refreshes its metadata and retries where the
// partition is now).
func syncFailedResult(err error) produceResult {
	if errors.Is(err, nvme.ErrLogClosed) {
		return notLeaderResult
	}
	return produceResult{err: fmt.Errorf("%w: fdatasync: %v", kerr.KafkaStorageError, err), baseOffset: -1, logAppendTime: -1, logStartOffset: -1}
}

// goOffline takes the partition offline after an I/O error, as Kafka takes
// a failed log directory offline: nothing that may not be on disk is served.
func (p *partition) goOffline(err error) {
	if p.offline != nil {
		return
	}
	p.offline = err
	if p.view != nil {
		p.view.offline.Store(true)
	}
	p.b.log.Error("partition offline after I/O error", "topic", p.topic, "partition", p.index, "err", err)
	p.wakeWaiters()
}

// wakeWaiters publishes the partition's offsets and wakes the long polls
// parked on it. A woken Fetch may run its next pass at once, on this loop,
// and park here again (takePolls keeps that apart from this round).
func (p *partition) wakeWaiters() {
	p.publishView()
	polls := p.view.takePolls()
	for _, x := range polls {
		x.lp.wake(x.gen)
	}
	p.view.givePolls(polls)
	for _, w := range p.waiters {
		w.Wake()
	}
	p.waiters = p.waiters[:0]
}

// park registers w to be woken by the next append, dropping finished waiters.
func (p *partition) park(w *share.Waiter) {
	live := p.waiters[:0]
	for _, x := range p.waiters {
		if !x.Done() {
			live = append(live, x)
		}
	}
	p.waiters = append(live, w)
}

// housekeep rolls by time and, when asked, applies retention.
func (p *partition) housekeep(retention bool) {
	p.view.prune()
	if p.offline != nil {
		return
	}
	if err := p.log.MaybeRoll(); err != nil {
		if !errors.Is(err, nvme.ErrNoDescriptors) { // put off: the log warned and stays online
			p.goOffline(err)
		}
		return
	}
	if retention {
		p.log.ExpireProducers(time.Now().UnixMilli(), p.b.cfg.ProducerIDExpirationMs)
		if n, err := p.log.ApplyRetention(); err != nil {
			p.b.log.Warn("retention failed", "topic", p.topic, "partition", p.index, "err", err)
		} else if n > 0 {
			p.b.log.Info("retention deleted segments", "topic", p.topic, "partition", p.index, "segments", n, "log_start_offset", p.log.LogStartOffset())
		}
		// Retention moves the log start offset; an expired producer's open
		// transaction no longer holds the last stable offset back.
		if p.viewState() != p.view.load() {
			p.wakeWaiters()
		}
	}
}

func (p *partition) close() error {
	var err error
	if p.log != nil {
		err = p.log.Close() // waits for its ring writes
		p.answerWritesAtClose(err)
		p.log = nil
	}
	p.wakeWaiters() // publishes the view as not open first
	return err
}
