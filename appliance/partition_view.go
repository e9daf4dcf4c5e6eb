package appliance

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ringbroker/ringbroker/nvme"
)

// partView is the part of a partition's state that any goroutine may read
// without a hop to the owner shard, and the Fetch long polls parked on it.
//
// A fetch pass reads each partition on its owner shard (fetchState.step),
// one cross-shard message per shard it visits. Most partitions of a
// consumer's fetch have nothing new: the fetch offset is the high watermark
// (read_committed: the last stable offset), and the answer is the three
// offsets alone. The pass answers those from the view on whatever goroutine
// it runs, and visits only the shards that have records (or errors) to give.
// At 10 MB/s over 16 partitions on two shards (~740 fetches/s, bench
// latency-10mbps) a fetch visited 4 shards before (a first pass and the
// pass after the wake-up, each on both shards), 1.03 after
// (ringbroker_shard_fetch_reads_total); each visit to a sleeping ring is
// a thread wake-up.
//
// The owner publishes after every change of the offsets (partition.
// publishView, from wakeWaiters and the retention and DeleteRecords paths)
// under a sequence counter; readers retry while it is odd. A reader parks
// before it looks (park, then load) and the owner publishes before it takes
// the parked polls (publish, then takePolls), so a poll that saw the old
// offsets is always woken by the append that changed them.
//
// The view of a partition lives in the log manager's placement table
// (logManager.placed), made when the partition is placed, before the image
// that names it is published, and kept until its topic is removed; the
// image holds values only. A view no open partition publishes to (not
// open yet, offline, closed) reads as not open and the pass reads on the
// owner shard, which gives the error.
//
// In direct mode the log also publishes its last batches there (tail,
// nvme.TailView; log.io.tail.reads): a partition with records past the
// fetch offset is read from it without the hop when the records are in
// the published batches (read_uncommitted fetches only).
type partView struct {
	seq      atomic.Uint64 // odd while the owner writes
	hw       atomic.Int64
	lso      atomic.Int64 // min(high watermark, last stable offset)
	logStart atomic.Int64
	epoch    atomic.Int32
	open     atomic.Bool
	// offline is set for good when an I/O error takes the partition
	// offline (partition.goOffline): Metadata then shows its leader
	// replica offline until a restart.
	offline atomic.Bool

	tail nvme.TailView // the log's last batches (direct mode)

	mu    sync.Mutex
	polls []parkedPoll // Fetch long polls to wake on the next change
	spare []parkedPoll // the other buffer of polls (takePolls)
}

// viewState is one consistent reading of a view.
type viewState struct {
	hw, lso, logStart int64
	epoch             int32
	open              bool
}

// publish stores s (owner shard only).
func (v *partView) publish(s viewState) {
	n := v.seq.Load()
	v.seq.Store(n + 1)
	v.hw.Store(s.hw)
	v.lso.Store(s.lso)
	v.logStart.Store(s.logStart)
	v.epoch.Store(s.epoch)
	v.open.Store(s.open)
	v.seq.Store(n + 2)
}

// load reads a consistent state (any goroutine).
func (v *partView) load() viewState {
	for {
		n := v.seq.Load()
		if n&1 != 0 {
			runtime.Gosched() // the owner is between two stores
			continue
		}
		s := viewState{hw: v.hw.Load(), lso: v.lso.Load(), logStart: v.logStart.Load(), epoch: v.epoch.Load(), open: v.open.Load()}
		if v.seq.Load() == n {
			return s
		}
	}
}

// park registers poll gen of lp to be woken by the partition's next change,
// dropping entries of ended polls and duplicates (any goroutine).
func (v *partView) park(lp *fetchLongPoll, gen uint64) {
	v.mu.Lock()
	v.dropEnded(lp)
	v.polls = append(v.polls, parkedPoll{lp, gen})
	v.mu.Unlock()
}

// dropEnded removes the entries of ended polls, and those of lp (nil: none),
// keeping the order of the others (v.mu held).
func (v *partView) dropEnded(lp *fetchLongPoll) {
	old := v.polls
	live := old[:0]
	for _, x := range old {
		if x.lp == lp || x.gen != x.lp.gen.Load() {
			continue
		}
		live = append(live, x)
	}
	// The entries left behind past the live ones would otherwise keep the
	// ended polls' fetch states, and the cache blocks their answers point
	// to, alive for as long as the array lives: abandoned long polls in
	// direct mode held gigabytes after their connections were gone.
	clear(old[len(live):])
	v.polls = live
}

// prune drops the entries of ended polls (any goroutine; the shard's
// housekeeping calls it). park drops them too, but a partition that no
// fetch parks on again and that does not change would keep them, and with
// them the ended fetches' storage: the fetch state, its connection, that
// connection's unsent answers and the cache blocks they point to. A test
// of clients that sent long polls and dropped their connections held
// 0.9-1.5 GB after a collection with no connection left.
func (v *partView) prune() {
	v.mu.Lock()
	v.dropEnded(nil)
	v.mu.Unlock()
}

// takePolls removes and returns the parked polls (owner shard). Polls that
// park again while the caller wakes these go to the other buffer; the
// caller hands the returned slice back with givePolls.
func (v *partView) takePolls() []parkedPoll {
	v.mu.Lock()
	polls := v.polls
	v.polls, v.spare = v.spare[:0], nil
	v.mu.Unlock()
	return polls
}

func (v *partView) givePolls(polls []parkedPoll) {
	clear(polls[:cap(polls)]) // no references to ended polls' storage
	v.mu.Lock()
	if v.spare == nil {
		v.spare = polls[:0]
	}
	v.mu.Unlock()
}

// parked is the number of polls parked on v (tests).
func (v *partView) parked() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.polls)
}
