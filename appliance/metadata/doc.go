// Package metadata owns the cluster metadata as a node holds it
// (DESIGN.md "Metadata"):
//
//   - the Image (values only: topics, partitions, configs, the producer id
//     block, and other concepts' values as plain data: ACL bindings by id,
//     client quota values by entity, SCRAM credentials by user and
//     mechanism) and Image.Apply, which turns committed Records into the
//     next image;
//   - the Record structs and their conversion to and from cluster/records'
//     binary records (records.go), and ImageRecords, the records that
//     rebuild an image;
//   - the __cluster_metadata Log: commit (append, fdatasync, apply), replay
//     at open, repair after a failed write and the deferred undo (log.go),
//     snapshots of the image beside it (snapshot.go) and the one-time
//     upgrade of a log of JSON records (upgrade.go);
//   - the Delta between two images and the Publisher that hands it to the
//     node's Listeners (publish.go).
//
// It imports cluster/records, appliance/wire, nvme, ioring and numa only,
// never appliance nor another concept package (docs/architecture.md, held
// by tests/arch). What it needs of the other concepts it declares: Checks
// (whether an ACL binding, a quota entity or a SCRAM mechanism is valid)
// and Listener/Preparer (the log manager, the coordinators). appliance
// implements them, passes Checks to OpenLog and NewImage, and registers
// the listeners on its Publisher; the concept that needs an index of its
// values (the authorizer's ACL set, the quota table) builds it from the
// image in appliance's glue.
//
// Serialisation: the controller mutex stays in appliance (the Broker's
// ctrlMu). Log is not safe for concurrent use: every Commit, and every
// Publisher.Publish, runs under that mutex (or before the node serves), so
// listeners see deltas one at a time, in log order. Images, their values
// and Deltas are immutable and safe to share once built; Log.Offline may be
// called from any goroutine.
package metadata
