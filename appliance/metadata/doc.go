// Package metadata owns the cluster metadata as a node holds it
// (DESIGN.md "Metadata"):
//
//   - the Image (values only: topics, partitions with their leader and
//     partition epochs, configs, the producer id block, the registered
//     brokers with their epochs, endpoints, racks and fencing (brokers.go;
//     none on a single node, which is its own one broker), and other concepts' values as plain data: ACL bindings by id,
//     client quota values by entity, SCRAM credentials by user and
//     mechanism) and Image.Apply, which turns committed Records into the
//     next image;
//   - the Record structs and their conversion to and from cluster/records'
//     binary records (ToBinary, Converter), and ImageRecords, the records
//     that rebuild an image;
//   - the __cluster_metadata Log: commit (append, fdatasync, apply), replay
//     at open, repair after a failed write and the deferred undo (Log),
//     snapshots of the image beside it (writeSnapshot,
//     Log.loadLatestSnapshot) and the one-time upgrade of a log of JSON
//     records (Log.upgradeMetadataLog);
//   - the Delta between two images and the Publisher that hands it to the
//     node's Listeners (Publisher.Publish);
//   - the Controller, which turns an admin request into records, commits
//     them through its Host and has the Host publish the next image (the
//     listeners, not the Controller, open partitions), and the admin APIs
//     over it that Register adds to a wire.Table: CreateTopics,
//     DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
//     IncrementalAlterConfigs, ElectLeaders, AlterPartitionReassignments,
//     ListPartitionReassignments, DescribeCluster;
//   - placement of new partitions (PlacePartitions: on the node itself
//     without registered brokers, else cluster/membership's placer over
//     the unfenced ones) and Membership, the active controller's
//     BrokerRegistration, BrokerHeartbeat and UnregisterBroker handlers
//     and session fencing over a membership.Registry (membership.go),
//     which a quorum node registers on its wire.Table.
//
// It imports cluster/records, cluster/membership, appliance/wire, nvme, ioring and numa only,
// never appliance nor another concept package (docs/architecture.md, held
// by tests/arch). What it needs of the other concepts it declares: Checks
// (whether an ACL binding, a quota entity or a SCRAM mechanism is valid)
// and Listener/Preparer (the log manager, the coordinators). appliance
// implements them, passes Checks to OpenLog and NewImage, and registers
// the listeners on its Publisher; the concept that needs an index of its
// values (the authorizer's ACL set, the quota table) builds it from the
// image in appliance's glue.
//
// What the Controller and the handlers need of the node (the controller
// mutex, commit and publish, the settings, the topic config registry,
// partition directories, group configs) is the Host interface; appliance's
// ctlHost implements it. Authorization goes through wire.Request.Allowed.
//
// Serialisation: the controller mutex stays in appliance (the Broker's
// ctl.mu, which the Controller takes through Host.Lock). Log is not safe for concurrent use: every Commit, and every
// Publisher.Publish, runs under that mutex (or before the node serves), so
// listeners see deltas one at a time, in log order. Images, their values
// and Deltas are immutable and safe to share once built; Log.Offline may be
// called from any goroutine.
package metadata
