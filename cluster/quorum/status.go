package quorum

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// Status is what DescribeQuorum (KIP-595) needs of the quorum, as this
// node sees it. Replicas are filled on the leader only (only the leader
// tracks its followers).
type Status struct {
	// ID is this node; Leader the leader it knows of (0: none).
	ID, Leader uint64
	// Term is the current term (Kafka's leader epoch).
	Term uint64
	// Role is "leader", "follower", "candidate" or "pre-candidate".
	Role string
	// HighWatermark is the commit index.
	HighWatermark uint64
	// Applied is the last index applied to the Application.
	Applied uint64
	// LastIndex is the last index in this node's log (its log end
	// offset, less one).
	LastIndex uint64
	// Voters and Observers are the configuration's members, by id.
	Voters, Observers []ReplicaStatus
}

// ReplicaStatus is one member as the leader tracks it.
type ReplicaStatus struct {
	ID uint64
	// MatchIndex is the last index known replicated on it (Kafka's log
	// end offset, less one).
	MatchIndex uint64
	// LastContact is when the leader last heard from it (Kafka's
	// LastFetchTimestamp); zero: never since this node led.
	LastContact time.Time
	// LastCaughtUp is when it last had all of the leader's log (Kafka's
	// LastCaughtUpTimestamp); zero: never seen.
	LastCaughtUp time.Time
}

// Status returns the quorum as this node sees it; ErrStopped once
// stopped.
func (n *Node) Status() (Status, error) {
	var s Status
	err := n.do(func() { s = n.status() })
	return s, err
}

func (n *Node) status() Status {
	st := n.rn.BasicStatus()
	s := Status{
		ID: n.cfg.ID, Leader: st.Lead, Term: st.HardState.GetTerm(), Role: roleName(st.RaftState),
		HighWatermark: st.HardState.GetCommit(), Applied: n.appliedIndex, LastIndex: n.lastIndex,
	}
	if st.RaftState != raft.StateLeader {
		return s
	}
	now := time.Now()
	n.rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		r := ReplicaStatus{ID: id, MatchIndex: pr.Match, LastContact: n.lastContact[id], LastCaughtUp: n.caughtUp[id]}
		if id == n.cfg.ID {
			r.MatchIndex, r.LastContact, r.LastCaughtUp = n.lastIndex, now, now
		} else if pr.Match >= n.lastIndex {
			n.caughtUp[id] = now
			r.LastCaughtUp = now
		}
		if typ == raft.ProgressTypeLearner {
			s.Observers = append(s.Observers, r)
		} else {
			s.Voters = append(s.Voters, r)
		}
	})
	byID := func(a, b ReplicaStatus) int { return cmp.Compare(a.ID, b.ID) }
	slices.SortFunc(s.Voters, byID)
	slices.SortFunc(s.Observers, byID)
	return s
}

func roleName(s raft.StateType) string {
	switch s {
	case raft.StateLeader:
		return "leader"
	case raft.StateCandidate:
		return "candidate"
	case raft.StatePreCandidate:
		return "pre-candidate"
	default:
		return "follower"
	}
}

// raftLogger is raft.Logger on slog: Raft's chatty Info goes to Debug
// (the Node logs state changes itself at Info).
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)              { r.l.Debug(fmt.Sprint(v...), "src", "raft") }
func (r raftLogger) Debugf(f string, v ...any)   { r.l.Debug(fmt.Sprintf(f, v...), "src", "raft") }
func (r raftLogger) Info(v ...any)               { r.l.Debug(fmt.Sprint(v...), "src", "raft") }
func (r raftLogger) Infof(f string, v ...any)    { r.l.Debug(fmt.Sprintf(f, v...), "src", "raft") }
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...), "src", "raft") }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...), "src", "raft") }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...), "src", "raft") }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...), "src", "raft") }
func (r raftLogger) Fatal(v ...any)              { panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
func (r raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
