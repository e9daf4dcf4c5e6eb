// Package quorum is the controller quorum: go.etcd.io/raft/v3's RawNode
// driven by our own loop, over a Storage and a Transport that it
// declares, replicating opaque payloads (for ringbroker, batches of
// cluster/records metadata records) into an Application (the metadata
// image). It knows nothing of Kafka beyond the names of its settings.
//
// Pieces:
//
//   - Node (New): the driver. One goroutine ticks the RawNode, steps
//     received messages into it and handles each Ready: snapshot,
//     entries and hard state to Storage (fsynced when Raft requires) before
//     any message is sent, then committed entries to the Application,
//     then Advance. Propose returns once the entry is committed and
//     applied here; ErrNotLeader names the leader. Every
//     Config.SnapshotBytes applied bytes, and after each configuration
//     change, it takes the Application's snapshot and compacts the log.
//     Pre-vote and check-quorum are on. Voters and observers (Raft
//     learners) change one at a time (AddVoter, AddObserver,
//     RemoveNode). Status gives what DescribeQuorum needs.
//   - Storage: DiskStorage (a checksummed, fsynced log file plus an
//     atomically replaced snapshot file; a torn tail is cut on open) and
//     MemStorage (in memory, for tests).
//   - Transport: TCPTransport (length-prefixed raftpb messages, one
//     connection per peer, reconnect with backoff, bounded queues that
//     drop; connections that open with a Kafka request are handed to
//     TCPConfig.Requests, for Envelope forwarding), Hub (in-process, for tests) and Faults (drop, duplicate,
//     reorder, delay, partition; per link, seeded).
//
// A new quorum bootstraps from Config.Voters: every voter whose storage
// is empty writes the same bootstrap snapshot (index 1, term 1, the
// voters as configuration), so all start from one state. A node that
// is not among them starts empty and is brought in by AddObserver or
// AddVoter, receiving the leader's latest snapshot.
//
// Goroutines and locks: a Node's loop owns the RawNode, the Storage's
// writes and the Application; other goroutines reach them through
// channels (Propose, Status, Campaign...). Node.mu guards only its
// failure; DiskStorage, Faults, Hub and TCPTransport each have one mutex
// around their own state. No lock is held while another is taken or
// while a Handler is called, so there is no lock order to keep.
// TCPTransport runs a writer goroutine per peer and a reader per
// accepted connection; Faults runs a timer per delayed message.
//
// It imports no other ringbroker package; appliance wires it.
package quorum
