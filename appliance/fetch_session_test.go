package appliance

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch sends one Fetch on f's raw connection and decodes it.
func sessionFetch(t *testing.T, f *allocFixture, version int16, id TopicID, sessID, epoch int32, parts map[int32]int64, forget []int32) *kmsg.FetchResponse {
	t.Helper()
	fr := kmsg.NewPtrFetchRequest()
	fr.ReplicaID, fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = -1, 0, 0, 1<<20
	fr.SessionID, fr.SessionEpoch = sessID, epoch
	if len(parts) > 0 {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "a", id
		for p := range int32(3) {
			off, ok := parts[p]
			if !ok {
				continue
			}
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, off, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
		}
		fr.Topics = append(fr.Topics, ft)
	}
	if len(forget) > 0 {
		ff := kmsg.NewFetchRequestForgottenTopic()
		ff.Topic, ff.TopicID, ff.Partitions = "a", id, forget
		fr.ForgottenTopics = append(fr.ForgottenTopics, ff)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	if err := resp.ReadFrom(f.c.roundTrip(frameOf(fr, version, 7), version >= 12)); err != nil {
		t.Fatal(err)
	}
	return resp
}

// answered maps each partition in a response to (records present, hw).
func answered(r *kmsg.FetchResponse) map[int32][2]int64 {
	m := map[int32][2]int64{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			has := int64(0)
			if len(p.RecordBatches) > 0 {
				has = 1
			}
			m[p.Partition] = [2]int64{has, p.HighWatermark}
		}
	}
	return m
}

// An incremental fetch session (KIP-227) over raw requests, by name (v12)
// and by topic id (v13): a full fetch at epoch 0 creates the session and
// answers every partition; an incremental one answers only partitions with
// records or a moved high watermark; a wrong epoch is 71, an unknown
// session 70; forgotten partitions are no longer answered; epoch -1 closes.
func TestFetchSessionRaw(t *testing.T) {
	for _, version := range []int16{12, 13} {
		f := newAllocFixture(t)
		id := f.b.currentImage().Topics["a"].ID
		cl, err := kgo.NewClient(kgo.SeedBrokers(f.b.Addr().String()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		produce := func(p int32) {
			t.Helper()
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "a", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		// The fixture's partitions hold records already: learn their ends
		// without a session, then start the session at them.
		ends := map[int32]int64{}
		for p, a := range answered(sessionFetch(t, f, version, id, 0, -1, map[int32]int64{0: 0, 1: 0, 2: 0}, nil)) {
			ends[p] = a[1]
		}
		produce(0)
		full := sessionFetch(t, f, version, id, 0, 0, ends, nil)
		sess := full.SessionID
		if full.ErrorCode != 0 || sess <= 0 {
			t.Fatalf("v%d full fetch at epoch 0: error %d session %d", version, full.ErrorCode, sess)
		}
		if got := answered(full); len(got) != 3 || got[0] != [2]int64{1, ends[0] + 1} || got[1] != [2]int64{0, ends[1]} {
			t.Fatalf("v%d full answer %v (ends %v)", version, got, ends)
		}

		// Epoch 1: p0 moves past its new record; nothing changed anywhere.
		inc := sessionFetch(t, f, version, id, sess, 1, map[int32]int64{0: ends[0] + 1}, nil)
		if inc.ErrorCode != 0 || inc.SessionID != sess || len(answered(inc)) != 0 {
			t.Fatalf("v%d quiet incremental: error %d session %d answer %v", version, inc.ErrorCode, inc.SessionID, answered(inc))
		}
		// A record on p2: only p2 is answered, from its cached offset.
		produce(2)
		inc = sessionFetch(t, f, version, id, sess, 2, nil, nil)
		if got := answered(inc); len(got) != 1 || got[2] != [2]int64{1, ends[2] + 1} {
			t.Fatalf("v%d incremental after a produce to p2: %v", version, got)
		}
		// The same epoch again, and an unknown session.
		if r := sessionFetch(t, f, version, id, sess, 2, nil, nil); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
			t.Fatalf("v%d repeated epoch: error %d, want 71", version, r.ErrorCode)
		}
		if r := sessionFetch(t, f, version, id, sess+1, 1, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("v%d unknown session: error %d, want 70", version, r.ErrorCode)
		}
		// Forget p2; then records on p1 and p2: only p1 is answered.
		if r := sessionFetch(t, f, version, id, sess, 3, nil, []int32{2}); r.ErrorCode != 0 {
			t.Fatalf("v%d forget: error %d", version, r.ErrorCode)
		}
		produce(1)
		produce(2)
		inc = sessionFetch(t, f, version, id, sess, 4, nil, nil)
		if got := answered(inc); len(got) != 1 || got[1] != [2]int64{1, ends[1] + 1} {
			t.Fatalf("v%d after forgetting p2: %v", version, got)
		}
		// Epoch -1 closes the session: a full answer without one.
		if r := sessionFetch(t, f, version, id, sess, -1, map[int32]int64{0: 0}, nil); r.ErrorCode != 0 || r.SessionID != 0 || len(answered(r)) != 1 {
			t.Fatalf("v%d final fetch: error %d session %d", version, r.ErrorCode, r.SessionID)
		}
		if r := sessionFetch(t, f, version, id, sess, 5, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("v%d closed session: error %d, want 70", version, r.ErrorCode)
		}
	}
}

// With max.incremental.fetch.session.cache.slots=1 a second young
// session is not created (session id 0, answered in full); 0 slots: none.
func TestFetchSessionSlots(t *testing.T) {
	f := newAllocFixtureWith(t, map[string]string{"max.incremental.fetch.session.cache.slots": "1"})
	id := f.b.currentImage().Topics["a"].ID
	if r := sessionFetch(t, f, 13, id, 0, 0, map[int32]int64{0: 0, 1: 0}, nil); r.SessionID <= 0 {
		t.Fatalf("first session: id %d", r.SessionID)
	}
	if r := sessionFetch(t, f, 13, id, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}, nil); r.SessionID != 0 || len(answered(r)) != 3 {
		t.Fatalf("second session in one slot: id %d, answer %v", r.SessionID, answered(r))
	}
	if st := f.b.front.fetchSessions.Stats(); st.Sessions != 1 || st.Partitions != 2 {
		t.Fatalf("cache %+v", st)
	}
	g := newAllocFixtureWith(t, map[string]string{"max.incremental.fetch.session.cache.slots": "0"})
	if r := sessionFetch(t, g, 13, g.b.currentImage().Topics["a"].ID, 0, 0, map[int32]int64{0: 0}, nil); r.SessionID != 0 {
		t.Fatalf("0 slots: session %d", r.SessionID)
	}
}
