package appliance

// Fetch sessions (KIP-227) in the fetch path: fetchsession.Cache keeps
// them; this is where a request's partitions meet a session's and where
// an answer is filtered and recorded.

import (
	"time"

	"github.com/ringbroker/ringbroker/appliance/fetchsession"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerFetchSessionMetrics exports the session cache's numbers as
// Kafka's FetchSessionCache metrics do (NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached, IncrementalFetchSessionEvictionsPerSec).
func (b *Broker) registerFetchSessionMetrics() {
	set, c := b.metrics.Set(), b.front.fetchSessions
	set.NewGauge("ringbroker_fetch_sessions", func() float64 { return float64(c.Stats().Sessions) })
	set.NewGauge("ringbroker_fetch_session_partitions", func() float64 { return float64(c.Stats().Partitions) })
	set.NewGauge("ringbroker_fetch_session_evictions_total", func() float64 { return float64(c.Stats().Evictions) })
}

// sessionKey is the session key of partition p of a topic the request
// names by id (v13+) or by name.
func (fs *fetchState) sessionKey(id TopicID, name string, p int32) fetchsession.Key {
	if fs.r.Version >= 13 {
		return fetchsession.Key{TopicID: id, Partition: p}
	}
	return fetchsession.Key{Topic: name, Partition: p}
}

// addSessionParts applies an incremental request to its session (the
// partitions it names, the ones it forgets) and adds every partition of
// the session to the reads, a topic's partitions under one response topic.
func (fs *fetchState) addSessionParts() {
	c := fs.b.front.fetchSessions
	ups, gone := fs.upserts[:0], fs.forgotten[:0]
	for _, t := range fs.req.Topics {
		topic := fs.topicOf(TopicID(t.TopicID), t.Topic)
		for _, p := range t.Partitions {
			if topic == nil || fs.refusal(topic, topic.Name, p.Partition) != 0 {
				continue // addRefused answers it
			}
			ups = append(ups, fetchsession.Part{Key: fs.sessionKey(TopicID(t.TopicID), t.Topic, p.Partition), FetchOffset: p.FetchOffset,
				MaxBytes: p.PartitionMaxBytes, LeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: p.LastFetchedEpoch})
		}
	}
	for _, t := range fs.req.ForgottenTopics {
		for _, p := range t.Partitions {
			gone = append(gone, fs.sessionKey(TopicID(t.TopicID), t.Topic, p))
		}
	}
	c.Update(fs.sess, ups, gone)
	fs.upserts, fs.forgotten = ups, gone
	var ot *fetchTopicOut
	var last fetchsession.Key
	c.Each(fs.sess, func(i int, sp *fetchsession.Part) {
		topic := fs.topicOf(TopicID(sp.TopicID), sp.Topic)
		if ot == nil || sp.TopicID != last.TopicID || sp.Topic != last.Topic {
			name, id := sp.Topic, TopicID(sp.TopicID)
			if topic != nil {
				name, id = topic.Name, topic.ID
			}
			ot, last = fs.addTopic(name, id), sp.Key
		}
		fs.addPart(ot, topic, sp.Partition, sp.FetchOffset, sp.MaxBytes, sp.LeaderEpoch, sp.LastFetchedEpoch, int32(i))
	})
}

// addRefused answers, in an incremental fetch, the partitions of t that
// are not read (unknown, not authorized...): they stay out of the session.
func (fs *fetchState) addRefused(t kmsg.FetchRequestTopic, topic *TopicImage, name string, id TopicID) {
	var ot *fetchTopicOut
	for _, p := range t.Partitions {
		if fs.refusal(topic, name, p.Partition) == 0 {
			continue
		}
		if ot == nil {
			ot = fs.addTopic(name, id)
		}
		fs.addPart(ot, topic, p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch, p.LastFetchedEpoch, -1)
	}
}

// sessionAnswer filters and records an answer by its session, and
// returns the session id the response carries: in an incremental fetch
// only the partitions the session must hear of are sent (the others are
// marked skip); a full fetch at epoch 0 creates a session of the
// partitions it read, when the cache lets it (0 otherwise).
func (fs *fetchState) sessionAnswer() int32 {
	c := fs.b.front.fetchSessions
	switch fs.sessKind {
	case fetchsession.Incremental:
		for ti := range fs.outs {
			for pi := range fs.outs[ti].parts {
				op := &fs.outs[ti].parts[pi]
				if op.sessIdx >= 0 {
					op.skip = !c.Answered(fs.sess, int(op.sessIdx), op.hasRecords && op.bytes > 0, op.errCode, op.hw, op.lso, op.logStart)
				}
			}
		}
		return fs.sess.ID
	case fetchsession.Full:
		parts := fs.newSess[:0]
		for ti, t := range fs.req.Topics {
			for pi, p := range t.Partitions {
				if op := &fs.outs[ti].parts[pi]; op.read {
					parts = append(parts, fetchsession.Part{Key: fs.sessionKey(TopicID(t.TopicID), t.Topic, p.Partition), FetchOffset: p.FetchOffset,
						MaxBytes: p.PartitionMaxBytes, LeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: p.LastFetchedEpoch,
						HW: op.hw, LSO: op.lso, LogStart: op.logStart})
				}
			}
		}
		fs.newSess = parts
		privileged := fs.req.ReplicaID >= 0 || (fs.r.Version >= 15 && fs.req.ReplicaState.ID >= 0)
		return c.Create(parts, privileged, time.Now())
	}
	return 0
}
