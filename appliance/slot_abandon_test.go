package appliance

import (
	"sync"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/ringbroker/ringbroker/nvme"
)

// fetchStateWithChunks is a pooled fetch state whose answer points to mem,
// with the writer's and the read pass's references held.
func fetchStateWithChunks(mem []byte) *reqState {
	rs := getReqState(16)
	rs.pooled = true
	rs.refs.Add(1) // the read pass's
	fs := &rs.fetch
	ot := fs.addTopic("a", TopicID{})
	p := addFetchPart(ot, fetchPartOut{partition: 0, hasRecords: true})
	p.chunks = append(p.chunks, nvme.Chunk{Mem: mem, Len: int32(len(mem))})
	fs.enc.raw.parts = append(fs.enc.raw.parts, respPart{chunk: p.chunks[0]})
	return rs
}

func chunkRefs(fs *fetchState) int {
	n := 0
	for _, ot := range fs.outs[:cap(fs.outs)] {
		for _, p := range ot.parts[:cap(ot.parts)] {
			for _, c := range p.chunks[:cap(p.chunks)] {
				if c.Mem != nil {
					n++
				}
			}
		}
	}
	for _, p := range fs.enc.raw.parts[:cap(fs.enc.raw.parts)] {
		if p.chunk.Mem != nil {
			n++
		}
	}
	return n
}

// A released fetch state keeps no reference to its answer's record bytes
// (in direct mode, block-cache blocks), beyond the length of its slices
// too: a pooled state must not pin fetch.max.bytes of memory.
func TestReleasedFetchStateDropsChunks(t *testing.T) {
	rs := fetchStateWithChunks(make([]byte, 1<<20))
	fs := &rs.fetch
	// The next pass truncates the slices; the old chunk is still behind them.
	fs.outs[0].parts[0].chunks = fs.outs[0].parts[0].chunks[:0]
	fs.enc.raw.parts = fs.enc.raw.parts[:0]
	if n := chunkRefs(fs); n != 2 {
		t.Fatalf("set-up: %d chunk references, want 2", n)
	}
	rs.unref()
	rs.unref()
	if got := rs.refs.Load(); got != 0 {
		t.Fatalf("refs %d after both releases, want 0", got)
	}
	if n := chunkRefs(fs); n != 0 {
		t.Fatalf("a released state still references %d chunks", n)
	}
}

// A slot its writer abandons (the connection closed) is released exactly
// once: by the writer when it is done already, else by its completion,
// whichever order the two run in. The last reference then returns the
// state without its chunks. Run under -race for the concurrent order.
func TestAbandonedSlotReleasedOnce(t *testing.T) {
	c := &conn{closed: make(chan struct{}), wake: make(chan struct{}, 1)}
	answer := func(rs *reqState) { // as fetchState.answer does
		c.complete(&rs.slot)
		rs.unref()
	}
	t.Run("abandon first", func(t *testing.T) {
		rs := fetchStateWithChunks(make([]byte, 64))
		rs.slot.abandon()
		if got := rs.refs.Load(); got != 2 {
			t.Fatalf("abandoning a slot in progress released it: refs %d, want 2", got)
		}
		answer(rs)
		if got := rs.refs.Load(); got != 0 || chunkRefs(&rs.fetch) != 0 {
			t.Fatalf("after the completion: refs %d, chunks %d; want 0, 0", got, chunkRefs(&rs.fetch))
		}
	})
	t.Run("complete first", func(t *testing.T) {
		rs := fetchStateWithChunks(make([]byte, 64))
		answer(rs)
		if got := rs.refs.Load(); got != 1 {
			t.Fatalf("refs %d after the completion, want the writer's 1", got)
		}
		rs.slot.abandon()
		if got := rs.refs.Load(); got != 0 || chunkRefs(&rs.fetch) != 0 {
			t.Fatalf("after abandon: refs %d, chunks %d; want 0, 0", got, chunkRefs(&rs.fetch))
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		for i := 0; i < 2000; i++ {
			rs := fetchStateWithChunks(make([]byte, 64))
			rs.pooled = false // keep it out of the pool: the test reads it after
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); rs.slot.abandon() }()
			go func() { defer wg.Done(); answer(rs) }()
			wg.Wait()
			if got := rs.refs.Load(); got != 0 {
				t.Fatalf("round %d: refs %d, want 0 (released %s)", i, got, map[bool]string{true: "twice", false: "never"}[got < 0])
			}
		}
	})
}

// A fetch whose connection closes after it was dispatched ends without
// reading (answering nothing): pipelined 50 MB fetches of clients that
// left read their records into direct-mode blocks for nobody, and a storm
// of them drove a direct-mode broker past 5 GB of RSS.
func TestFetchOfClosedConnectionDoesNotRead(t *testing.T) {
	if raceEnabled {
		t.Skip("starts a broker; slow under the race detector")
	}
	f := newAllocFixture(t) // partition 0 of "a" holds batches
	reads := f.shardFetchReads
	f.fetchOne() // a fetch on a live connection reads
	before := reads()
	if before == 0 {
		t.Fatal("set-up: a fetch with records read no partition")
	}

	c := &conn{b: f.b, closed: make(chan struct{}), wake: make(chan struct{}, 1)}
	frame := f.fetch[4:] // without the size prefix
	rs := getReqState(len(frame))
	copy(rs.frame, frame)
	pr, err := parseFrameInto(f.b.front.apis, rs.frame, rs)
	if err != nil {
		t.Fatal(err)
	}
	rs.pooled = pr.reused
	internStrings(f.b, pr.req)
	r := &rs.req
	*r = wire.Request{Conn: c, Key: pr.key, Version: pr.version, CorrID: pr.corrID, Req: pr.req, Owner: rs}
	close(c.closed) // the client has gone
	if _, ok := handleFetch(f.b, r).(wire.AnswerLater); !ok {
		t.Fatal("the fetch did not go to the read pass")
	}
	if !wait.Until(time.Second, rs.slot.ready.Load) {
		t.Fatal("the fetch of a closed connection never ended")
	}
	f.shardBarrier() // a step posted to a shard has run by now
	if got := reads(); got != before {
		t.Fatalf("the fetch of a closed connection read partitions (%d shard reads)", got-before)
	}
	if rs.slot.resp != nil {
		t.Fatalf("the fetch of a closed connection built an answer: %T", rs.slot.resp)
	}
}
