// Package controller runs the metadata quorum of a node configured with
// controller.quorum.voters: a cluster/quorum Node whose entries are
// metadata record batches (metadata.EncodeBatch) and whose snapshots
// are metadata image snapshots (metadata.EncodeSnapshot), over quorum's
// DiskStorage in <log.dirs>/__cluster_metadata-0 and its TCPTransport on
// the controller listener.
//
//   - Quorum (Open): every committed batch is applied to the image and
//     handed to Host.Publish, on every node, in log order: brokers and
//     standby controllers replay the records the active controller
//     committed through the publisher a single node uses. Commit, on the
//     active controller (the Raft leader), proposes a batch and returns
//     once it is committed and applied here; elsewhere it fails with
//     NOT_CONTROLLER.
//   - Forwarding (WrapAdmin, Forward): the admin APIs that change
//     metadata, received by a node that is not the active controller,
//     are sent to it inside an Envelope (key 58, KIP-590) on its
//     controller listener, with the client's principal and address, and
//     its answer is relayed. When no controller is known within the
//     request's timeout, the request runs here and its changes fail with
//     NOT_CONTROLLER.
//   - Membership (SetMembership, Channel): BrokerRegistration (62) and
//     BrokerHeartbeat (63) come as plain requests, not in an Envelope, on
//     the active controller's controller listener and are answered by
//     its metadata.Membership (NOT_CONTROLLER elsewhere); the
//     membership is activated and its fencing loop runs while this node
//     leads the quorum and has applied what it knows committed, and
//     stops when it loses the leadership. Channel (a
//     cluster/brokerlife.Channel) sends this broker's registration and
//     heartbeats to the active controller, in process when it is this
//     node, retrying while no leader is known or it answers
//     NOT_CONTROLLER.
//
// Node ids map onto Raft ids as id+1 (Raft ids are positive, node ids
// start at 0).
//
// Goroutines and locks: the quorum Node's loop calls the application
// (app), which publishes; app.mu guards only its image pointer and its
// rejected proposals. Commit runs on the controller's goroutine (the
// broker holds its controller mutex) and waits on the Node. Each
// forwarded request runs on the goroutine of the connection that
// carries it (TCPTransport's reader goroutine). One goroutine per
// SetMembership follows the leadership (polling every 20 ms) and runs
// the membership's fencing loop while this node leads.
//
// It imports cluster/quorum, cluster/membership, cluster/brokerlife,
// appliance/metadata, appliance/wire and appliance/config; appliance
// wires it.
package controller
