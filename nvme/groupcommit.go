package nvme

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// GroupCommitter batches fdatasync requests: a single goroutine takes every
// request queued since its last flush, fdatasyncs each distinct file once and
// then calls each request's done with its file's result, so concurrent
// producers (acks=all with flush-on-ack) share one fdatasync per flush window.
//
// Locking: mu guards pending and closed only; syncs and callbacks run
// without it. done callbacks run on the committer goroutine and must not
// block; a shard posts the result to its own inbox.
type GroupCommitter struct {
	logger  *slog.Logger
	sync    func(*os.File) error
	mu      sync.Mutex
	pending []syncRequest
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
	stats   GroupCommitStats // guarded by mu; read through Stats

}

// GroupCommitStats counts the committer's work.
type GroupCommitStats struct {
	Flushes   uint64 // flush windows
	Syncs     uint64 // fdatasync calls
	Requests  uint64 // Sync calls served
	SyncFails uint64 // fdatasync calls that failed
}

type syncRequest struct {
	f    *os.File
	done func(error)
}

// NewGroupCommitter starts the committer goroutine. logger nil means
// slog.Default().
func NewGroupCommitter(logger *slog.Logger) *GroupCommitter {
	return newGroupCommitter(logger, fdatasync)
}

func newGroupCommitter(logger *slog.Logger, sync func(*os.File) error) *GroupCommitter {
	if logger == nil {
		logger = slog.Default()
	}
	g := &GroupCommitter{
		logger:  logger,
		sync:    sync,
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	go g.run()
	return g
}

// Sync queues an fdatasync of f; done is called once with its result, on the
// committer goroutine. Safe from any goroutine. After Close, or for a nil f
// (a closed log's SyncTarget), done is called at once with ErrLogClosed,
// and with ErrLogClosed (wrapping os.ErrClosed) when f was closed before
// its turn.
func (g *GroupCommitter) Sync(f *os.File, done func(error)) {
	if f == nil { // a closed log's SyncTarget
		done(ErrLogClosed)
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		done(ErrLogClosed)
		return
	}
	g.pending = append(g.pending, syncRequest{f: f, done: done})
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// Stats returns a snapshot of the counters, for metrics.
func (g *GroupCommitter) Stats() GroupCommitStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// Close serves the requests already queued, then stops the goroutine.
func (g *GroupCommitter) Close() {
	g.mu.Lock()
	already := g.closed
	g.closed = true
	g.mu.Unlock()
	if !already {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
	<-g.stopped
}

func (g *GroupCommitter) run() {
	defer close(g.stopped)
	var batch []syncRequest
	results := make(map[*os.File]error)
	for range g.wake {
		g.mu.Lock()
		batch, g.pending = g.pending, batch[:0]
		closed := g.closed
		g.mu.Unlock()
		if len(batch) > 0 {
			var syncs, fails uint64
			for _, r := range batch {
				if _, ok := results[r.f]; ok {
					continue
				}
				err := g.sync(r.f)
				if errors.Is(err, os.ErrClosed) {
					// The log closed (and fdatasynced its segment)
					// before this request's turn: no I/O error.
					results[r.f] = fmt.Errorf("%w: %w", ErrLogClosed, err)
					continue
				}
				results[r.f] = err
				syncs++
				if err != nil {
					fails++
					g.logger.Error("fdatasync failed", "file", r.f.Name(), "err", err)
				}
			}
			// Count before answering, so whoever an answer wakes sees
			// the sync in Stats.
			g.mu.Lock()
			g.stats.Flushes++
			g.stats.Syncs += syncs
			g.stats.SyncFails += fails
			g.stats.Requests += uint64(len(batch))
			g.mu.Unlock()
			for _, r := range batch {
				r.done(results[r.f])
			}
			clear(results)
			clear(batch)
		}
		if closed {
			return
		}
	}
}
