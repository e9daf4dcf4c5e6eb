package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/cluster/quorum"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Host is the broker as the quorum sees it.
type Host interface {
	// Publish makes next, the image after committed records (or a
	// snapshot), the image in force and hands the delta from prev to the
	// listeners. Called from the quorum's loop, one at a time, in log
	// order; its error is logged (the records are committed).
	Publish(prev, next *metadata.Image) error
	// Serve answers f, a request forwarded to this node as the active
	// controller.
	Serve(f *Forwarded) kmsg.Response
}

// Options configures Open.
type Options struct {
	// NodeID is node.id; Voters controller.quorum.voters.
	NodeID int32
	Voters []config.Voter
	// Listen is the controller listener's host:port.
	Listen string
	// Dir is the directory of the quorum's storage
	// (<log.dirs>/__cluster_metadata-0).
	Dir string
	// ElectionTimeout is controller.quorum.election.timeout.ms.
	ElectionTimeout time.Duration
	// SnapshotBytes is metadata.log.max.record.bytes.between.snapshots.
	SnapshotBytes int64
	// CommitTimeout bounds Commit's wait for its batch to commit
	// (default 30 s).
	CommitTimeout time.Duration
	// Checks are the image's checks (metadata.NewImage).
	Checks metadata.Checks
	Logger *slog.Logger
}

// RaftID is the Raft id of node id n.
func RaftID(n int32) uint64 { return uint64(n) + 1 }

// Quorum is this node's member of the metadata quorum.
type Quorum struct {
	opts  Options
	host  Host
	log   *slog.Logger
	st    *quorum.DiskStorage
	tr    *quorum.TCPTransport
	node  *quorum.Node
	app   *app
	addrs map[int32]string // voters' controller listeners by node id
	// ready is closed once node is set: forwarded requests that arrive
	// while Open runs wait for it.
	ready chan struct{}
	// members answers BrokerRegistration and BrokerHeartbeat
	// (SetMembership).
	members atomic.Pointer[metadata.Membership]
	// pids answers AllocateProducerIds while this node leads (SetProducerIDAllocator).
	pids atomic.Pointer[ProducerIDAllocator]
}

// Open opens the quorum's storage in o.Dir, listens on o.Listen and
// starts the Node; the image in the storage's snapshot is published
// before it returns, the committed entries after it soon after.
func Open(o Options, host Host) (*Quorum, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CommitTimeout <= 0 {
		o.CommitTimeout = 30 * time.Second
	}
	if o.Listen == "" || !slices.ContainsFunc(o.Voters, func(v config.Voter) bool { return v.ID == o.NodeID }) {
		return nil, fmt.Errorf("cannot join the metadata quorum as node %d: only voters are implemented (a node with the controller role, a controller listener and its id in controller.quorum.voters); brokers that only observe the quorum and controller.quorum.bootstrap.servers alone are later work", o.NodeID)
	}
	q := &Quorum{opts: o, host: host, log: o.Logger, addrs: map[int32]string{}, ready: make(chan struct{})}
	q.app = &app{host: host, log: o.Logger, cur: metadata.NewImage(o.Checks), checks: o.Checks, rejected: map[uint64]error{}}
	var peers []quorum.Voter
	var ids []uint64
	for _, v := range o.Voters {
		q.addrs[v.ID] = v.Addr()
		peers = append(peers, quorum.Voter{ID: RaftID(v.ID), Addr: v.Addr()})
		ids = append(ids, RaftID(v.ID))
	}
	st, err := quorum.OpenDiskStorage(o.Dir, o.Logger)
	if err != nil {
		return nil, err
	}
	tr, err := quorum.NewTCPTransport(quorum.TCPConfig{ID: RaftID(o.NodeID), Listen: o.Listen, Peers: peers, Requests: q.serveConn}, o.Logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	cfg := quorum.Config{ID: RaftID(o.NodeID), Voters: ids, ElectionTimeout: o.ElectionTimeout, SnapshotBytes: o.SnapshotBytes}
	node, err := quorum.New(cfg, st, tr, q.app, o.Logger)
	if err != nil {
		close(q.ready) // serveConn finds no node
		tr.Close()
		st.Close()
		return nil, err
	}
	q.st, q.tr, q.node = st, tr, node
	close(q.ready)
	return q, nil
}

// Close stops the Node and closes the transport and the storage.
func (q *Quorum) Close() error {
	q.node.Stop()
	return errors.Join(q.node.Err(), q.tr.Close(), q.st.Close())
}

// Leader returns the node id of the active controller this node knows
// of; ok false when none is known.
func (q *Quorum) Leader() (id int32, ok bool) {
	l, _ := q.node.Leader()
	if l == 0 {
		return -1, false
	}
	return int32(l - 1), true
}

// IsLeader reports whether this node is the active controller.
func (q *Quorum) IsLeader() bool {
	l, ok := q.Leader()
	return ok && l == q.opts.NodeID
}

// Image is the image after the last applied entry.
func (q *Quorum) Image() *metadata.Image { return q.app.current() }

// Status is the quorum as this node sees it (quorum.Node.Status).
func (q *Quorum) Status() (quorum.Status, error) { return q.node.Status() }

// WaitCaughtUp waits, until ctx ends, for a leader to be known and this
// node to have applied every entry it knows committed; it reports
// whether that happened.
func (q *Quorum) WaitCaughtUp(ctx context.Context) bool {
	for {
		if st, err := q.node.Status(); err == nil && st.Leader != 0 && st.Applied >= st.HighWatermark {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-q.node.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ErrNotController is a commit on a node that is not the active
// controller, or that has not applied the log yet (NOT_CONTROLLER).
var ErrNotController = kerr.NotController

// Commit proposes recs, computed against im (the image in force), as
// one batch and returns the image once it is committed and applied
// here (and so published). Only the active controller commits, and
// only against the image of everything it applied: otherwise the error
// wraps NOT_CONTROLLER. A timeout wraps REQUEST_TIMED_OUT.
func (q *Quorum) Commit(im *metadata.Image, recs []metadata.Record) (*metadata.Image, error) {
	if len(recs) == 0 {
		return im, nil
	}
	if _, err := im.Apply(im.Offset+1, recs); err != nil {
		return nil, err
	}
	if !q.IsLeader() {
		l, _ := q.Leader()
		return nil, fmt.Errorf("%w: node %d is not the active controller (the leader is %d)", ErrNotController, q.opts.NodeID, l)
	}
	if q.app.current() != im {
		return nil, fmt.Errorf("%w: node %d has not applied the quorum's log yet", ErrNotController, q.opts.NodeID)
	}
	payload, err := metadata.EncodeBatch(recs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.opts.CommitTimeout)
	defer cancel()
	idx, err := q.node.Propose(ctx, payload)
	switch {
	case err == nil:
	case errors.Is(err, quorum.ErrNotLeader), errors.Is(err, quorum.ErrProposalDropped), errors.Is(err, quorum.ErrStopped):
		return nil, fmt.Errorf("%w: %v", ErrNotController, err)
	default:
		return nil, fmt.Errorf("%w: metadata batch not seen to commit: %v", kerr.RequestTimedOut, err)
	}
	if err := q.app.takeRejected(idx); err != nil {
		return nil, err
	}
	return q.app.current(), nil
}

// app is the quorum's Application: the metadata image.
type app struct {
	host   Host
	log    *slog.Logger
	checks metadata.Checks

	mu       sync.Mutex
	cur      *metadata.Image
	rejected map[uint64]error // indexes whose batch did not apply
}

func (a *app) current() *metadata.Image {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

func (a *app) takeRejected(idx uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.rejected[idx]
	delete(a.rejected, idx)
	return err
}

// publish makes next current and publishes it.
func (a *app) publish(next *metadata.Image) {
	a.mu.Lock()
	prev := a.cur
	a.cur = next
	a.mu.Unlock()
	if err := a.host.Publish(prev, next); err != nil {
		a.log.Error("a metadata listener failed", "offset", next.Offset, "err", err)
	}
}

// Apply implements quorum.Application: the batch's records apply to the
// image at the entry's index. A batch that does not apply (proposed
// against an image that a concurrent change made stale) is skipped on
// every node alike, the image unchanged, and its proposer told.
func (a *app) Apply(c quorum.Committed) error {
	cur := a.current()
	recs, err := metadata.DecodeBatch(cur, c.Payload)
	var next *metadata.Image
	if err == nil {
		next, err = cur.Apply(int64(c.Index), recs)
	}
	if err != nil {
		a.log.Warn("committed metadata batch does not apply to the image: skipped", "index", c.Index, "term", c.Term, "err", err)
		a.mu.Lock()
		if len(a.rejected) > 1024 {
			clear(a.rejected)
		}
		a.rejected[c.Index] = err
		a.mu.Unlock()
		return nil
	}
	a.publish(next)
	return nil
}

// Snapshot implements quorum.Application.
func (a *app) Snapshot() ([]byte, error) { return metadata.EncodeSnapshot(a.current()) }

// Restore implements quorum.Application.
func (a *app) Restore(snapshot []byte, index, term uint64) error {
	next := metadata.NewImage(a.checks)
	if len(snapshot) > 0 {
		var err error
		if next, err = metadata.DecodeSnapshot(snapshot, int64(index), a.checks); err != nil {
			return fmt.Errorf("cannot decode the metadata snapshot at %d (term %d): %w", index, term, err)
		}
	}
	a.publish(next)
	return nil
}
