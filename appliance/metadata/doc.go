// Package metadata owns the cluster metadata's values as a node sees them
// (DESIGN.md "Metadata"): topic ids, the topics and partitions of an image,
// the delta from one image to the next, and the publisher that hands each
// delta to the node's listeners (the log manager, the coordinators) in log
// order.
//
// It imports cluster/records, appliance/wire, nvme, ioring and numa only,
// never appliance nor another concept package (docs/architecture.md, held
// by tests/arch). What it needs of the node it declares as small
// interfaces (Listener, Preparer); appliance implements them and registers
// them on its Publisher.
//
// Serialisation: changes are serialised by the controller mutex, which
// stays in appliance (the Broker's ctrlMu): Publisher.Publish runs under it,
// or before the node serves, so listeners see deltas one at a time, in log
// order. Images and deltas are immutable values and safe to share between
// goroutines once published.
package metadata
