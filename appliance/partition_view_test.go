package appliance

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartViewConsistent: a reader never sees the offsets of two different
// publishes mixed (run with -race: every field is an atomic).
func TestPartViewConsistent(t *testing.T) {
	var v partView
	v.publish(viewState{hw: 0, lso: 0, logStart: 0, open: true})
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s := v.load()
				// Every publish below keeps lso = hw-1 (from 1 on), logStart = hw/2, epoch = hw%7.
				if s.hw > 0 && (s.lso != s.hw-1 || s.logStart != s.hw/2 || s.epoch != int32(s.hw%7) || !s.open) {
					t.Errorf("torn read %+v", s)
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := int64(1); i <= 200000; i++ {
		v.publish(viewState{hw: i, lso: i - 1, logStart: i / 2, epoch: int32(i % 7), open: true})
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no reads ran")
	}
}

// TestPartViewPolls: polls that park while the owner wakes the ones it took
// wait for the next change; ended polls are dropped when others park.
func TestPartViewPolls(t *testing.T) {
	var v partView
	a, b := &fetchLongPoll{}, &fetchLongPoll{}
	v.park(a, 0)
	v.park(a, 0) // a duplicate
	v.park(b, 0)
	if n := v.parked(); n != 2 {
		t.Fatalf("%d parked, want 2", n)
	}
	took := v.takePolls()
	if len(took) != 2 {
		t.Fatalf("took %d, want 2", len(took))
	}
	v.park(a, 0) // re-parks while took is being woken
	if n := v.parked(); n != 1 || len(took) != 2 || took[0].lp != a || took[1].lp != b {
		t.Fatalf("re-park disturbed the taken round: parked %d, took %+v", v.parked(), took)
	}
	v.givePolls(took)
	b.gen.Add(1) // b's fetch ended
	v.park(b, 1)
	a.gen.Add(1)
	v.park(b, 1)
	if n := v.parked(); n != 1 {
		t.Fatalf("%d parked, want b's current poll alone", n)
	}
}

// TestPartViewDropsEndedPolls: once polls have ended, no entry of the
// view's arrays (past their lengths included) refers to them after the next
// park, nor after a wake-up round: they would keep the ended fetches'
// storage, and the cache blocks their answers point to, alive.
func TestPartViewDropsEndedPolls(t *testing.T) {
	var v partView
	ended := map[*fetchLongPoll]bool{}
	for range 50 {
		lp := &fetchLongPoll{}
		v.park(lp, 0)
		ended[lp] = true
	}
	for lp := range ended {
		lp.gen.Add(1) // its fetch ended (connection gone)
	}
	refs := func(where string, polls []parkedPoll) {
		t.Helper()
		for i, x := range polls[:cap(polls)] {
			if ended[x.lp] {
				t.Fatalf("%s: entry %d of %d (len %d) still refers to an ended poll", where, i, cap(polls), len(polls))
			}
		}
	}
	live := &fetchLongPoll{}
	v.park(live, 0)
	refs("after a park", v.polls)
	if n := v.parked(); n != 1 {
		t.Fatalf("%d parked, want 1", n)
	}
	took := v.takePolls()
	live.gen.Add(1)
	ended[live] = true
	v.givePolls(took)
	refs("the spare array after a wake-up round", v.spare)
	refs("the given-back array", took)
}

// viewFetch is a fetch v12 of "a" at the given offsets (partition to
// offset), with current leader epoch epoch (-1: none).
func viewFetch(maxWaitMs int32, epoch int32, offsets map[int32]int64) []byte {
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = maxWaitMs, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	for p := int32(0); p < 3; p++ {
		off, ok := offsets[p]
		if !ok {
			continue
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, off, 1<<20, epoch
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	return frameOf(fr, 12, 13)
}

// TestFetchAnswersFromViews: partitions with nothing past the fetch offset
// are answered from their views, without reading on their shards, with the
// offsets a read gives; records, errors and changed offsets still come
// through, and a long poll parked only through views is woken by an append.
func TestFetchAnswersFromViews(t *testing.T) {
	f := newAllocFixture(t) // partition 0 holds 200+ batches, 1 and 2 none
	f.produceOne(produceTo(1))
	addr := f.b.Addr().String()
	reads := f.shardFetchReads
	fetch := func(frame []byte) (map[int32]kmsg.FetchResponseTopicPartition, uint64) {
		t.Helper()
		before := reads()
		resp := <-sendFetch(t, addr, frame)
		if resp == nil || len(resp.Topics) != 1 {
			t.Fatalf("fetch failed: %+v", resp)
		}
		out := map[int32]kmsg.FetchResponseTopicPartition{}
		for _, p := range resp.Topics[0].Partitions {
			out[p.Partition] = p
		}
		return out, reads() - before
	}

	// The offsets, read on the shards.
	got, n := fetch(viewFetch(0, -1, map[int32]int64{0: 0, 1: 0, 2: 0}))
	if n == 0 {
		t.Fatal("a fetch with records to give read on no shard")
	}
	hw := map[int32]int64{}
	for p, r := range got {
		if r.ErrorCode != 0 || r.LogStartOffset != 0 || r.LastStableOffset != r.HighWatermark {
			t.Fatalf("partition %d: %+v", p, r)
		}
		hw[p] = r.HighWatermark
	}
	if hw[0] < 200 || hw[1] != 1 || hw[2] != 0 {
		t.Fatalf("high watermarks %v, want 200+/1/0", hw)
	}

	// Nothing new anywhere: no shard reads; the same offsets.
	got, n = fetch(viewFetch(0, -1, hw))
	if n != 0 {
		t.Fatalf("a fetch at the high watermarks read on %d shards, want 0", n)
	}
	for p, r := range got {
		if r.ErrorCode != 0 || r.HighWatermark != hw[p] || r.LastStableOffset != hw[p] || r.LogStartOffset != 0 || len(r.RecordBatches) != 0 {
			t.Fatalf("partition %d from its view: %+v, want high watermark %d", p, r, hw[p])
		}
	}

	// Records on partition 1 only: its shard alone reads (with tail reads
	// not even it: the records come from the log's published tail).
	got, n = fetch(viewFetch(0, -1, map[int32]int64{0: hw[0], 1: 0, 2: hw[2]}))
	wantReads := uint64(1)
	if f.b.cfg.LogIOTailReads {
		wantReads = 0
	}
	if n != wantReads || len(got[1].RecordBatches) == 0 || len(got[0].RecordBatches) != 0 {
		t.Fatalf("%d shard reads, partition 1 %d record bytes; want %d reads and records", n, len(got[1].RecordBatches), wantReads)
	}

	// Errors come from a read: a leader epoch from the future, an offset past the end.
	got, _ = fetch(viewFetch(0, 99, hw))
	if got[2].ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("current leader epoch 99: error %d, want UNKNOWN_LEADER_EPOCH", got[2].ErrorCode)
	}
	got, _ = fetch(viewFetch(0, -1, map[int32]int64{2: 5}))
	if got[2].ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("offset 5 of an empty partition: error %d, want OFFSET_OUT_OF_RANGE", got[2].ErrorCode)
	}

	// DeleteRecords moves the log start offset the views give.
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 10000
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "a", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 1, Offset: 1}}}}
	drResp := kmsg.NewPtrDeleteRecordsResponse()
	drResp.SetVersion(2)
	if err := drResp.ReadFrom(f.c.roundTrip(frameOf(dr, 2, 14), true)); err != nil || drResp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete records: %v %+v", err, drResp.Topics)
	}
	got, n = fetch(viewFetch(0, -1, hw))
	if n != 0 || got[1].LogStartOffset != 1 || got[1].HighWatermark != 1 {
		t.Fatalf("after DeleteRecords: %d reads, partition 1 %+v; want 0 reads and log start offset 1", n, got[1])
	}

	// A long poll parked through the views alone wakes on an append.
	base := f.b.metrics.FetchPurgatory()
	before := reads()
	answer := sendFetch(t, addr, viewFetch(10000, -1, hw))
	wait.Until(5*time.Second, func() bool { return f.b.metrics.FetchPurgatory() != base })
	f.shardBarrier() // whatever the poll posted to a shard has run
	if n := reads() - before; n != 0 {
		t.Fatalf("the parked long poll read on %d shards, want 0", n)
	}
	start := time.Now()
	f.produceOne(produceTo(2))
	select {
	case resp := <-answer:
		if resp == nil {
			t.Fatal("the long poll's connection failed")
		}
		if b := recordBytes(resp); b[2] == 0 || b[0] != 0 || b[1] != 0 {
			t.Fatalf("record bytes per partition %v, want partition 2's append alone", b)
		}
		t.Logf("answered %v after the append", time.Since(start).Round(time.Microsecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not answer within 5 s of an append (max wait 10 s)")
	}
}

// A partition that no fetch parks on again and that does not change must
// still let go of ended polls: housekeeping prunes them.
func TestPartViewPruneDropsEndedPolls(t *testing.T) {
	var v partView
	var live, ended []*fetchLongPoll
	for i := range 10 {
		lp := &fetchLongPoll{}
		v.park(lp, 0)
		if i%3 == 0 {
			live = append(live, lp)
		} else {
			ended = append(ended, lp)
		}
	}
	for _, lp := range ended {
		lp.gen.Add(1)
	}
	v.prune()
	if n := v.parked(); n != len(live) {
		t.Fatalf("%d parked after prune, want the %d live polls", n, len(live))
	}
	for i, x := range v.polls[:cap(v.polls)] {
		for _, e := range ended {
			if x.lp == e {
				t.Fatalf("entry %d of %d (len %d) still refers to an ended poll", i, cap(v.polls), len(v.polls))
			}
		}
	}
	for i, x := range v.polls {
		if x.lp != live[i] {
			t.Fatalf("entry %d is not live poll %d: prune must keep the live ones in order", i, i)
		}
	}
}

// tailFetch is a fetch v12 of "a" at the given offsets with isolation
// level iso (0 read_uncommitted, 1 read_committed).
func tailFetch(iso int8, offsets map[int32]int64) []byte {
	return fetchAtOffsets(1, 1<<20, 0, iso, offsets, 17)
}

// TestFetchReadsPublishedTail: in direct and buffered mode a
// read_uncommitted fetch of the last batches of partitions on either shard
// is answered from the logs' published tails (nvme.TailView: block buffers,
// or the segment file) without reading on any shard, with
// the same record bytes a read on the shards gives (read_committed, which
// always reads there; with no transactions its answer is the same); a
// fetch further back than the tail reads on the shard, and
// log.io.tail.reads=false turns the tail off.
func TestFetchReadsPublishedTail(t *testing.T) {
	for _, tc := range []struct {
		mode string
		on   bool
	}{{"direct", true}, {"direct", false}, {"buffered", true}, {"buffered", false}} {
		f := newAllocFixtureWith(t, map[string]string{"log.io.mode": tc.mode, "log.io.tail.reads": strconv.FormatBool(tc.on)})
		on := tc.on
		tc.mode = f.b.cfg.LogIOMode // RB_IO_MODE may have made every case direct
		// Partition 0 holds 200+ batches; 1 and 2 get 3 each.
		for i := 0; i < 3; i++ {
			f.produceOne(produceTo(1))
			f.produceOne(produceTo(2))
		}
		addr := f.b.Addr().String()
		reads := f.shardFetchReads
		fetch := func(frame []byte) (map[int32][]byte, map[int32]int64, uint64) {
			t.Helper()
			before := reads()
			resp := <-sendFetch(t, addr, frame)
			if resp == nil || len(resp.Topics) != 1 {
				t.Fatalf("fetch failed: %+v", resp)
			}
			recs, hw := map[int32][]byte{}, map[int32]int64{}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
				}
				recs[p.Partition], hw[p.Partition] = p.RecordBatches, p.HighWatermark
			}
			return recs, hw, reads() - before
		}
		_, hw, _ := fetch(tailFetch(1, map[int32]int64{0: 0, 1: 0, 2: 0}))
		tail := map[int32]int64{0: hw[0] - 1, 1: 0, 2: 1}
		hits, misses := tailHits(f.b), tailMisses(f.b)
		got, _, n := fetch(tailFetch(0, tail))
		want, _, wantN := fetch(tailFetch(1, tail))
		if wantN == 0 {
			t.Fatal("a read_committed fetch did not read on the shards")
		}
		for p := int32(0); p < 3; p++ {
			if len(want[p]) == 0 || !bytes.Equal(got[p], want[p]) {
				t.Fatalf("%s, tail reads %v: partition %d gave %d record bytes, the shard read %d", tc.mode, tc.on, p, len(got[p]), len(want[p]))
			}
		}
		dHits, dMisses := tailHits(f.b)-hits, tailMisses(f.b)-misses
		if on && (n != 0 || dHits != 3 || dMisses != 0) {
			t.Fatalf("tail reads on: %d shard reads, %d tail reads, %d misses; want 0, 3, 0", n, dHits, dMisses)
		}
		if !on && (n == 0 || dHits != 0 || dMisses != 0) {
			t.Fatalf("%s, tail reads %v: %d shard reads, %d tail reads, %d misses; want reads on the shards only", tc.mode, tc.on, n, dHits, dMisses)
		}
		// Partition 0 from its first batch: 200 batches back, past the tail.
		misses = tailMisses(f.b)
		got, _, n = fetch(tailFetch(0, map[int32]int64{0: 0}))
		want, _, _ = fetch(tailFetch(1, map[int32]int64{0: 0}))
		if n == 0 || len(got[0]) == 0 || !bytes.Equal(got[0], want[0]) {
			t.Fatalf("%s, tail reads %v, offset 0: %d shard reads, %d record bytes (shard read %d)", tc.mode, tc.on, n, len(got[0]), len(want[0]))
		}
		if on && tailMisses(f.b) == misses {
			t.Fatal("a fetch behind the tail did not count a miss")
		}
	}
}

// TestTailFetchAllocs: a fetch answered from a partition's published tail
// (direct and buffered mode) allocates nothing per request in steady state, as the
// fetch read on the shard does (TestRequestPathAllocs).
func TestTailFetchAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("starts a broker; the race detector allocates")
	}
	for _, mode := range []string{"direct", "buffered"} {
		f := newAllocFixtureWith(t, map[string]string{"log.io.mode": mode})
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		if err := resp.ReadFrom(f.c.roundTrip(tailFetch(1, map[int32]int64{0: 0}), true)); err != nil {
			t.Fatal(err)
		}
		hw := resp.Topics[0].Partitions[0].HighWatermark
		frame := tailFetch(0, map[int32]int64{0: hw - 1})
		for i := 0; i < 100; i++ {
			f.c.roundTrip(frame, true)
		}
		before := tailHits(f.b)
		if n := testing.AllocsPerRun(300, func() { f.c.roundTrip(frame, true) }); n != 0 {
			t.Errorf("%s: a fetch from the tail allocates %.0f times per request, want 0", f.b.cfg.LogIOMode, n)
		}
		if n := tailHits(f.b) - before; n < 300 {
			t.Fatalf("%s: %d tail reads in 300+ fetches: the fetches did not read the tail", f.b.cfg.LogIOMode, n)
		}
	}
}
