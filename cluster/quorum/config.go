package quorum

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Voter is one entry of controller.quorum.voters: a Raft id and the
// host:port of its controller listener. The broker parses the property
// (appliance/config.ParseVoters, Kafka's rules: node ids from 0) and hands
// the voters over; Raft ids must be positive, so the wiring maps node ids
// onto them.
type Voter struct {
	ID   uint64
	Addr string
}

// VoterIDs returns the ids of voters, in order (Config.Voters from the
// voters the broker parsed).
func VoterIDs(voters []Voter) []uint64 {
	ids := make([]uint64, len(voters))
	for i, v := range voters {
		ids[i] = v.ID
	}
	return ids
}

// Config configures a Node. Durations are wall-clock; the Raft state
// machine counts them in ticks of TickInterval.
type Config struct {
	// ID is this node's id (node.id), positive.
	ID uint64
	// Voters are the initial voters (controller.quorum.voters). A node
	// whose storage is empty and whose id is among them bootstraps the
	// quorum with exactly these voters; a node with empty storage that is
	// not among them (or with no Voters) starts empty and waits for a
	// leader to send it a snapshot (a voter or observer added later).
	// Ignored when the storage holds state.
	Voters []uint64
	// TickInterval is the length of one Raft tick (default 50 ms).
	TickInterval time.Duration
	// ElectionTimeout is controller.quorum.election.timeout.ms (default
	// 1000 ms, Kafka's): a follower that hears nothing from a leader for
	// a randomized [ElectionTimeout, 2*ElectionTimeout) starts a
	// (pre-)vote, and a leader that has not heard from a majority for
	// ElectionTimeout steps down (check-quorum). Raft has one timeout
	// where Kafka has two: controller.quorum.fetch.timeout.ms is folded
	// into this one. Rounded down to whole ticks, at least 2 ticks more
	// than HeartbeatInterval.
	ElectionTimeout time.Duration
	// HeartbeatInterval is how often a leader heartbeats its followers
	// (default ElectionTimeout/10, at least one tick).
	HeartbeatInterval time.Duration
	// ManualTick leaves ticking to the caller (Node.Tick) instead of a
	// ticker: for tests that drive time themselves.
	ManualTick bool
	// SnapshotBytes is metadata.log.max.record.bytes.between.snapshots:
	// after this many applied payload bytes the Node asks the
	// application for a snapshot and compacts the log before it
	// (default 20 MiB, Kafka's). Negative: only after configuration
	// changes, which always take one (a joining node needs a snapshot
	// that names it).
	SnapshotBytes int64
	// MaxSizePerMsg caps the entry bytes in one append message
	// (default 1 MiB).
	MaxSizePerMsg uint64
	// MaxInflightMsgs caps the append messages in flight to one
	// follower (default 256).
	MaxInflightMsgs int
	// RecvQueue is the number of received messages that may wait for
	// the Node's loop; more are dropped, as Raft tolerates loss
	// (default 1024).
	RecvQueue int
}

// Defaults of Config.
const (
	DefaultTickInterval    = 50 * time.Millisecond
	DefaultElectionTimeout = time.Second
	DefaultSnapshotBytes   = 20 << 20
	DefaultMaxSizePerMsg   = 1 << 20
	DefaultMaxInflightMsgs = 256
	DefaultRecvQueue       = 1024
)

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTimeout <= 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = max(c.ElectionTimeout/10, c.TickInterval)
	}
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = DefaultSnapshotBytes
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = DefaultMaxSizePerMsg
	}
	if c.MaxInflightMsgs <= 0 {
		c.MaxInflightMsgs = DefaultMaxInflightMsgs
	}
	if c.RecvQueue <= 0 {
		c.RecvQueue = DefaultRecvQueue
	}
	return c
}

// Validate reports whether c (after defaults) can run a Node.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.ID == 0 {
		return errors.New("cannot use node.id 0 in the quorum: ids are positive")
	}
	seen := map[uint64]bool{}
	for _, v := range c.Voters {
		if v == 0 || seen[v] {
			return fmt.Errorf("cannot use controller.quorum.voters %v: ids must be positive and unique", c.Voters)
		}
		seen[v] = true
	}
	e, h := c.electionTicks(), c.heartbeatTicks()
	if e < h+2 {
		return fmt.Errorf("cannot use controller.quorum.election.timeout.ms %v with heartbeat %v and tick %v: want at least 2 ticks more than the heartbeat (%d ticks, heartbeat %d)",
			c.ElectionTimeout, c.HeartbeatInterval, c.TickInterval, e, h)
	}
	return nil
}

func (c Config) electionTicks() int  { return int(c.ElectionTimeout / c.TickInterval) }
func (c Config) heartbeatTicks() int { return max(1, int(c.HeartbeatInterval/c.TickInterval)) }

// bootstraps reports whether a node with empty storage bootstraps the
// quorum from Voters.
func (c Config) bootstraps() bool { return slices.Contains(c.Voters, c.ID) }
