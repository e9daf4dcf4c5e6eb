// Package cluster will own the controller quorum (go.etcd.io/raft/v3 over
// the __cluster_metadata log), broker registration and fencing, replica
// fetchers, ISR tracking and leader-epoch truncation. It imports nvme,
// ioring and numa, never appliance or tiering: it declares the small
// interfaces it needs (a partition log, a metadata sink) and appliance
// satisfies them. Today a node is a one-voter quorum whose metadata log is
// appended locally by appliance; the quorum itself (a Raft driver, its
// disk storage and its transports) is in cluster/quorum, not yet wired.
// cluster/membership is the active controller's broker membership and
// placement; cluster/brokerlife is a broker's side of it (registration,
// heartbeats, controlled shutdown) over a Channel to the controller.
package cluster
