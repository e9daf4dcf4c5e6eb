package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Committed is one committed entry handed to Application.Apply.
type Committed struct {
	// Index and Term are the entry's position in the Raft log (Kafka's
	// offset and epoch of the metadata batch).
	Index, Term uint64
	// Payload is what Propose was given, unchanged. The application
	// must not modify it.
	Payload []byte
}

// Application is the replicated state machine a Node drives. The Node
// calls its methods from its loop goroutine only, one at a time. An
// Application passed to New is empty; New calls Restore with the
// storage's latest snapshot and then Apply with each committed entry
// after it.
type Application interface {
	// Apply applies one committed entry, in log order. An error stops
	// the Node (Err reports it): the state machine cannot skip an entry.
	Apply(c Committed) error
	// Snapshot returns the application's state after the last Apply,
	// as bytes Restore accepts (the metadata image). Called every
	// Config.SnapshotBytes applied payload bytes.
	Snapshot() ([]byte, error)
	// Restore replaces the application's state with snapshot, the
	// state after the entry at index (of term). snapshot is empty for
	// the bootstrap snapshot (the state before any entry). An error
	// stops the Node.
	Restore(snapshot []byte, index, term uint64) error
}

// Errors of Node's methods.
var (
	// ErrNotLeader: this node is not the leader; the error is a
	// *NotLeaderError that names the known leader.
	ErrNotLeader = errors.New("not the quorum leader")
	// ErrProposalDropped: the proposal did not commit (a leader change
	// replaced it at its index, or Raft refused it, as during a
	// leadership transfer). It is safe to retry.
	ErrProposalDropped = errors.New("proposal dropped")
	// ErrProposalUnknown: a snapshot from a new leader covered the
	// proposal's index before it was seen to commit, so whether it
	// committed is unknown: the application's state tells.
	ErrProposalUnknown = errors.New("proposal outcome unknown")
	// ErrStopped: the Node is stopped (Stop, or a storage or
	// application failure: Err).
	ErrStopped = errors.New("quorum node stopped")
	// ErrEmptyPayload: Propose was given no bytes.
	ErrEmptyPayload = errors.New("empty proposal payload")
)

// NotLeaderError is ErrNotLeader with the leader this node knows of
// (Leader 0: none known) in Term.
type NotLeaderError struct {
	Leader, Term uint64
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("%v: leader %d in term %d", ErrNotLeader, e.Leader, e.Term)
}

// Unwrap makes errors.Is(err, ErrNotLeader) hold.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// Node is one member of the Raft quorum: a raft.RawNode driven by the
// Node's own loop goroutine, which ticks it, steps received messages
// into it, and handles each Ready in order: the snapshot, entries and
// hard state go to Storage (fsynced when Raft requires it) before any
// message is sent, then the committed entries are applied, then the
// RawNode advances. Pre-vote and check-quorum are on; followers do not
// forward proposals (Propose answers ErrNotLeader instead).
//
// Goroutines and locks: the loop owns rn, the storage's writes, the
// application and every field marked loop-owned; other goroutines reach
// them by sending requests on channels. mu guards only err; leader,
// term and applied are atomics the loop publishes.
type Node struct {
	cfg       Config
	storage   Storage
	transport Transport
	app       Application
	logger    *slog.Logger

	recvc chan *raftpb.Message
	unrc  chan uint64
	propc chan *proposal
	ctrlc chan func()
	tickc chan struct{}
	stopc chan struct{}
	done  chan struct{}
	once  sync.Once

	leader, term, applied atomic.Uint64

	mu  sync.Mutex
	err error

	// loop-owned
	rn            *raft.RawNode
	lead          uint64
	state         raft.StateType
	curTerm       uint64
	assign        []*proposal
	waiting       map[uint64]*proposal
	appliedIndex  uint64
	lastIndex     uint64
	confState     *raftpb.ConfState
	sinceSnapshot int64
	// confChanged: a configuration change was applied since the last
	// snapshot, which must be taken now: a node that joins gets the
	// latest snapshot, and Raft ignores one whose configuration lacks
	// the node.
	confChanged bool
	lastContact map[uint64]time.Time
	caughtUp    map[uint64]time.Time
}

type proposal struct {
	data  []byte
	cc    *raftpb.ConfChangeV2
	term  uint64
	index uint64
	done  chan proposalResult
}

type proposalResult struct {
	index uint64
	err   error
}

func (p *proposal) finish(index uint64, err error) {
	select {
	case p.done <- proposalResult{index, err}:
	default:
	}
}

// New opens a Node on storage (bootstrapping it from cfg.Voters when it
// is empty and cfg.ID is among them), restores app from the storage's
// snapshot, starts transport and the loop. Committed entries after the
// snapshot are applied by the loop soon after New returns. logger nil:
// slog.Default().
func New(cfg Config, storage Storage, transport Transport, app Application, logger *slog.Logger) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("node", cfg.ID)
	n := &Node{
		cfg: cfg, storage: storage, transport: transport, app: app, logger: logger,
		recvc:       make(chan *raftpb.Message, cfg.RecvQueue),
		unrc:        make(chan uint64, 64),
		propc:       make(chan *proposal, 256),
		ctrlc:       make(chan func()),
		tickc:       make(chan struct{}),
		stopc:       make(chan struct{}),
		done:        make(chan struct{}),
		waiting:     map[uint64]*proposal{},
		lastContact: map[uint64]time.Time{},
		caughtUp:    map[uint64]time.Time{},
	}
	if err := n.bootstrap(); err != nil {
		return nil, err
	}
	snap, err := storage.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("cannot read the quorum snapshot: %w", err)
	}
	_, cs, err := storage.InitialState()
	if err != nil {
		return nil, fmt.Errorf("cannot read the quorum state: %w", err)
	}
	n.confState = proto.Clone(raftpb.EnsureConfState(cs)).(*raftpb.ConfState)
	if !raft.IsEmptySnap(snap) {
		md := snap.GetMetadata()
		if err := app.Restore(snap.GetData(), md.GetIndex(), md.GetTerm()); err != nil {
			return nil, fmt.Errorf("cannot restore the snapshot at %d (term %d): %w", md.GetIndex(), md.GetTerm(), err)
		}
		n.appliedIndex = md.GetIndex()
		n.applied.Store(n.appliedIndex)
	}
	if n.lastIndex, err = storage.LastIndex(); err != nil {
		return nil, fmt.Errorf("cannot read the quorum's last index: %w", err)
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.electionTicks(),
		HeartbeatTick:             cfg.heartbeatTicks(),
		Storage:                   storage,
		Applied:                   n.appliedIndex,
		MaxSizePerMsg:             cfg.MaxSizePerMsg,
		MaxInflightMsgs:           cfg.MaxInflightMsgs,
		MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		StepDownOnRemoval:         true,
		Logger:                    raftLogger{logger},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot start the Raft node %d: %w", cfg.ID, err)
	}
	n.rn = rn
	st := rn.BasicStatus()
	n.curTerm = st.HardState.GetTerm()
	n.term.Store(n.curTerm)
	if err := transport.Start(handler{n}); err != nil {
		return nil, fmt.Errorf("cannot start the quorum transport of node %d: %w", cfg.ID, err)
	}
	go n.loop()
	return n, nil
}

// bootstrap writes the bootstrap snapshot (index 1, term 1, cfg.Voters
// as the configuration) into an empty storage when cfg says so.
func (n *Node) bootstrap() error {
	hs, _, err := n.storage.InitialState()
	if err != nil {
		return fmt.Errorf("cannot read the quorum state: %w", err)
	}
	last, err := n.storage.LastIndex()
	if err != nil {
		return fmt.Errorf("cannot read the quorum's last index: %w", err)
	}
	snap, err := n.storage.Snapshot()
	if err != nil {
		return fmt.Errorf("cannot read the quorum snapshot: %w", err)
	}
	if !raft.IsEmptyHardState(hs) || last != 0 || !raft.IsEmptySnap(snap) || !n.cfg.bootstraps() {
		return nil
	}
	voters := slices.Sorted(slices.Values(n.cfg.Voters))
	boot := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
		Index: new(uint64(1)), Term: new(uint64(1)),
		ConfState: &raftpb.ConfState{Voters: voters},
	}}
	if err := n.storage.ApplySnapshot(boot); err != nil {
		return fmt.Errorf("cannot bootstrap the quorum with voters %v: %w", voters, err)
	}
	if err := n.storage.Append(&raftpb.HardState{Term: new(uint64(1)), Commit: new(uint64(1))}, nil, true); err != nil {
		return fmt.Errorf("cannot bootstrap the quorum with voters %v: %w", voters, err)
	}
	n.logger.Info("quorum bootstrapped", "voters", voters)
	return nil
}

// handler is the Node's Handler for its transport.
type handler struct{ n *Node }

func (h handler) Step(m *raftpb.Message) {
	select {
	case h.n.recvc <- m:
	default: // full: dropped, as the network may
	}
}

func (h handler) ReportUnreachable(id uint64) {
	select {
	case h.n.unrc <- id:
	default:
	}
}

// Step hands m, a message received from a peer, to the Node (for
// transports that do not call the Handler given to Start). It never
// blocks; a full receive queue drops m.
func (n *Node) Step(m *raftpb.Message) { handler{n}.Step(m) }

// ID returns the node's id.
func (n *Node) ID() uint64 { return n.cfg.ID }

// Leader returns the leader this node knows of (0: none, and once
// stopped) and the current term (Kafka's leader epoch).
func (n *Node) Leader() (id, term uint64) { return n.leader.Load(), n.term.Load() }

// Applied returns the index of the last entry applied to the
// Application (or restored from a snapshot).
func (n *Node) Applied() uint64 { return n.applied.Load() }

// Err returns why the Node stopped on its own (a storage or application
// failure), or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Done is closed when the Node's loop has ended (Stop or a failure).
func (n *Node) Done() <-chan struct{} { return n.done }

// Propose replicates payload (opaque bytes: a batch of encoded metadata
// records) and returns its index once it is committed and applied on
// this node. Errors: *NotLeaderError (this node is not the leader),
// ErrProposalDropped (a leader change dropped it: retry),
// ErrProposalUnknown, ErrStopped, ErrEmptyPayload, or ctx's error (the
// entry may still commit later).
func (n *Node) Propose(ctx context.Context, payload []byte) (uint64, error) {
	if len(payload) == 0 {
		return 0, ErrEmptyPayload
	}
	return n.propose(ctx, &proposal{data: payload})
}

// AddVoter adds node id to the voters (Kafka's AddRaftVoter, KIP-853)
// and returns once the change is committed and applied here. Errors as
// Propose.
func (n *Node) AddVoter(ctx context.Context, id uint64) (uint64, error) {
	return n.changeConf(ctx, raftpb.ConfChangeAddNode, id)
}

// AddObserver adds node id as an observer (a Raft learner: it
// replicates the log but does not vote). Errors as Propose.
func (n *Node) AddObserver(ctx context.Context, id uint64) (uint64, error) {
	return n.changeConf(ctx, raftpb.ConfChangeAddLearnerNode, id)
}

// RemoveNode removes voter or observer id (Kafka's RemoveRaftVoter).
// A leader that removes itself steps down. Errors as Propose.
func (n *Node) RemoveNode(ctx context.Context, id uint64) (uint64, error) {
	return n.changeConf(ctx, raftpb.ConfChangeRemoveNode, id)
}

func (n *Node) changeConf(ctx context.Context, t raftpb.ConfChangeType, id uint64) (uint64, error) {
	cc := &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{{Type: t.Enum(), NodeId: new(id)}}}
	return n.propose(ctx, &proposal{cc: cc})
}

func (n *Node) propose(ctx context.Context, p *proposal) (uint64, error) {
	p.done = make(chan proposalResult, 1)
	select {
	case n.propc <- p:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		return 0, ErrStopped
	}
	select {
	case r := <-p.done:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		select {
		case r := <-p.done:
			return r.index, r.err
		default:
			return 0, ErrStopped
		}
	}
}

// do runs f on the loop and waits for it.
func (n *Node) do(f func()) error {
	ran := make(chan struct{})
	select {
	case n.ctrlc <- func() { f(); close(ran) }:
	case <-n.done:
		return ErrStopped
	}
	select {
	case <-ran:
		return nil
	case <-n.done:
		return ErrStopped
	}
}

// Campaign makes this node start an election now (it still needs a
// majority's votes).
func (n *Node) Campaign() error {
	var err error
	if derr := n.do(func() { err = n.rn.Campaign() }); derr != nil {
		return derr
	}
	if err != nil {
		return fmt.Errorf("cannot campaign on node %d: %w", n.cfg.ID, err)
	}
	return nil
}

// TransferLeadership asks the leader (this node must be it) to hand
// leadership to voter to once to has caught up; it returns at once,
// and Leader shows the outcome. Proposals are refused (ErrProposalDropped)
// while the transfer is under way.
func (n *Node) TransferLeadership(to uint64) error {
	return n.do(func() { n.rn.TransferLeader(to) })
}

// Tick advances the node's clock by one tick (Config.TickInterval).
// With Config.ManualTick it is the only clock; otherwise it adds to the
// ticker.
func (n *Node) Tick() error {
	select {
	case n.tickc <- struct{}{}:
		return nil
	case <-n.done:
		return ErrStopped
	}
}

// Stop ends the loop, fails waiting proposals with ErrStopped, closes
// the transport and waits for the loop to end. The storage stays open
// (its owner closes it). Safe to call more than once.
func (n *Node) Stop() {
	n.once.Do(func() { close(n.stopc) })
	<-n.done
}

func (n *Node) fail(err error) {
	n.mu.Lock()
	if n.err == nil {
		n.err = err
	}
	n.mu.Unlock()
	n.logger.Error("quorum node stops", "err", err)
	n.once.Do(func() { close(n.stopc) })
}

func (n *Node) loop() {
	defer close(n.done)
	defer func() {
		n.leader.Store(0)
		reason := n.Err()
		if reason == nil {
			reason = ErrStopped
		} else {
			reason = fmt.Errorf("%w: %w", ErrStopped, reason)
		}
		for _, p := range n.assign {
			p.finish(0, reason)
		}
		for _, p := range n.waiting {
			p.finish(0, reason)
		}
		for {
			select {
			case p := <-n.propc:
				p.finish(0, reason)
			default:
				if err := n.transport.Close(); err != nil {
					n.logger.Warn("cannot close the quorum transport", "err", err)
				}
				return
			}
		}
	}()
	var tickc <-chan time.Time
	if !n.cfg.ManualTick {
		t := time.NewTicker(n.cfg.TickInterval)
		defer t.Stop()
		tickc = t.C
	}
	for {
		select {
		case <-n.stopc:
			return
		case <-tickc:
			n.rn.Tick()
		case <-n.tickc:
			n.rn.Tick()
		case m := <-n.recvc:
			n.step(m)
		recv:
			for range 255 { // a batch per Ready
				select {
				case m := <-n.recvc:
					n.step(m)
				default:
					break recv
				}
			}
		case id := <-n.unrc:
			n.rn.ReportUnreachable(id)
		case p := <-n.propc:
			n.startProposal(p)
		props:
			for range 255 {
				select {
				case p := <-n.propc:
					n.startProposal(p)
				default:
					break props
				}
			}
		case f := <-n.ctrlc:
			f()
		}
		if n.rn.HasReady() {
			if err := n.handleReady(); err != nil {
				n.fail(err)
				return
			}
		}
	}
}

func (n *Node) step(m *raftpb.Message) {
	if m.GetTo() != n.cfg.ID {
		return
	}
	now := time.Now()
	switch m.GetType() {
	case raftpb.MsgAppResp, raftpb.MsgHeartbeatResp:
		n.lastContact[m.GetFrom()] = now
	}
	if err := n.rn.Step(m); err != nil {
		return // a local message type or an unknown peer: ignored
	}
	if m.GetType() == raftpb.MsgAppResp && !m.GetReject() && m.GetIndex() >= n.lastIndex {
		n.caughtUp[m.GetFrom()] = now
	}
}

func (n *Node) startProposal(p *proposal) {
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		p.finish(0, &NotLeaderError{Leader: st.Lead, Term: st.HardState.GetTerm()})
		return
	}
	var err error
	if p.cc != nil {
		err = n.rn.ProposeConfChange(p.cc)
	} else {
		err = n.rn.Propose(p.data)
	}
	if err != nil {
		p.finish(0, fmt.Errorf("%w: %w", ErrProposalDropped, err))
		return
	}
	p.term = st.HardState.GetTerm()
	n.assign = append(n.assign, p)
}

func (n *Node) handleReady() error {
	rd := n.rn.Ready()
	if rd.SoftState != nil {
		if rd.SoftState.Lead != n.lead || rd.SoftState.RaftState != n.state {
			n.logger.Info("quorum state changed", "state", rd.SoftState.RaftState.String(), "leader", rd.SoftState.Lead, "term", n.rn.BasicStatus().HardState.GetTerm())
		}
		n.lead, n.state = rd.SoftState.Lead, rd.SoftState.RaftState
		n.leader.Store(n.lead)
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		n.curTerm = rd.HardState.GetTerm()
		n.term.Store(n.curTerm)
	}
	n.assignIndexes(rd.Entries)
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.storage.ApplySnapshot(rd.Snapshot); err != nil {
			return fmt.Errorf("cannot persist the snapshot at %d: %w", rd.Snapshot.GetMetadata().GetIndex(), err)
		}
	}
	if err := n.storage.Append(rd.HardState, rd.Entries, rd.MustSync); err != nil {
		return fmt.Errorf("cannot persist %d entries and the hard state: %w", len(rd.Entries), err)
	}
	if len(rd.Entries) > 0 || !raft.IsEmptySnap(rd.Snapshot) {
		last, err := n.storage.LastIndex()
		if err != nil {
			return fmt.Errorf("cannot read the quorum's last index: %w", err)
		}
		n.lastIndex = last
	}
	// Only now that what they promise is durable do messages go out.
	if len(rd.Messages) > 0 {
		n.transport.Send(rd.Messages)
		for _, m := range rd.Messages {
			if m.GetType() == raftpb.MsgSnap {
				// Sent as far as we know; a lost one shows as a
				// rejected append later and Raft sends a new one.
				n.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
			}
		}
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.restore(rd.Snapshot); err != nil {
			return err
		}
	}
	for _, e := range rd.CommittedEntries {
		if err := n.applyEntry(e); err != nil {
			return err
		}
	}
	n.rn.Advance(rd)
	return n.maybeSnapshot()
}

// assignIndexes gives the proposals started since the last Ready their
// indexes: as leader, Raft appended each accepted proposal to its log
// in order, and they are the entries of its own term that carry data.
func (n *Node) assignIndexes(ents []*raftpb.Entry) {
	for _, e := range ents {
		if len(n.assign) == 0 {
			break
		}
		if e.GetTerm() != n.assign[0].term || len(e.GetData()) == 0 {
			continue
		}
		if t := e.GetType(); t != raftpb.EntryNormal && t != raftpb.EntryConfChangeV2 {
			continue
		}
		p := n.assign[0]
		n.assign = n.assign[1:]
		p.index = e.GetIndex()
		n.waiting[p.index] = p
	}
	for _, p := range n.assign {
		p.finish(0, fmt.Errorf("%w: not appended", ErrProposalDropped))
	}
	n.assign = n.assign[:0]
}

func (n *Node) restore(snap *raftpb.Snapshot) error {
	md := snap.GetMetadata()
	if err := n.app.Restore(snap.GetData(), md.GetIndex(), md.GetTerm()); err != nil {
		return fmt.Errorf("cannot restore the snapshot at %d (term %d): %w", md.GetIndex(), md.GetTerm(), err)
	}
	n.confState = proto.Clone(raftpb.EnsureConfState(md.GetConfState())).(*raftpb.ConfState)
	n.appliedIndex = md.GetIndex()
	n.applied.Store(n.appliedIndex)
	n.sinceSnapshot = 0
	for idx, p := range n.waiting {
		if idx <= n.appliedIndex {
			p.finish(0, ErrProposalUnknown)
			delete(n.waiting, idx)
		}
	}
	n.logger.Info("quorum snapshot restored", "index", md.GetIndex(), "term", md.GetTerm(), "bytes", len(snap.GetData()))
	return nil
}

func (n *Node) applyEntry(e *raftpb.Entry) error {
	if e.GetIndex() <= n.appliedIndex {
		return nil
	}
	switch e.GetType() {
	case raftpb.EntryNormal:
		if len(e.GetData()) > 0 {
			if err := n.app.Apply(Committed{Index: e.GetIndex(), Term: e.GetTerm(), Payload: e.GetData()}); err != nil {
				return fmt.Errorf("cannot apply the entry at %d (term %d): %w", e.GetIndex(), e.GetTerm(), err)
			}
			n.sinceSnapshot += int64(len(e.GetData()))
		}
	case raftpb.EntryConfChange:
		var cc raftpb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("cannot decode the configuration change at %d: %w", e.GetIndex(), err)
		}
		n.confState = n.rn.ApplyConfChange(&cc)
		n.confChanged = true
	case raftpb.EntryConfChangeV2:
		var cc raftpb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("cannot decode the configuration change at %d: %w", e.GetIndex(), err)
		}
		n.confState = n.rn.ApplyConfChange(&cc)
		n.confChanged = true
		n.logger.Info("quorum configuration changed", "index", e.GetIndex(), "voters", n.confState.GetVoters(), "observers", n.confState.GetLearners())
	}
	n.appliedIndex = e.GetIndex()
	n.applied.Store(n.appliedIndex)
	if p, ok := n.waiting[e.GetIndex()]; ok {
		delete(n.waiting, e.GetIndex())
		if p.term == e.GetTerm() {
			p.finish(e.GetIndex(), nil)
		} else {
			p.finish(0, fmt.Errorf("%w: index %d holds term %d, proposed in term %d", ErrProposalDropped, e.GetIndex(), e.GetTerm(), p.term))
		}
	}
	return nil
}

func (n *Node) maybeSnapshot() error {
	due := n.cfg.SnapshotBytes >= 0 && n.sinceSnapshot >= n.cfg.SnapshotBytes
	if !due && !n.confChanged {
		return nil
	}
	n.confChanged = false
	data, err := n.app.Snapshot()
	if err != nil {
		return fmt.Errorf("cannot take the application snapshot at %d: %w", n.appliedIndex, err)
	}
	if err := n.storage.CreateSnapshot(n.appliedIndex, n.confState, data); err != nil {
		if errors.Is(err, raft.ErrSnapOutOfDate) {
			n.sinceSnapshot = 0
			return nil
		}
		return fmt.Errorf("cannot store the snapshot at %d: %w", n.appliedIndex, err)
	}
	n.logger.Info("quorum snapshot taken", "index", n.appliedIndex, "bytes", len(data), "since", n.sinceSnapshot)
	n.sinceSnapshot = 0
	return nil
}
