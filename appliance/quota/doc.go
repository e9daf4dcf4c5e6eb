// Package quota owns client quotas (KIP-13 byte-rate quotas, KIP-55 user
// quotas, KIP-546 admin APIs): the ClientQuotaRecord metadata record and
// the quota Values a metadata image holds (entities, precedence,
// DescribeClientQuotas filters), the Manager that holds the quota table of
// the metadata image in force (SetValues, called by the broker's metadata
// listener when a published delta changes the quotas), samples byte rates
// and computes throttle times (RecordProduce, RecordFetch), and the
// AlterClientQuotas and DescribeClientQuotas handlers.
//
// It imports appliance/wire and nothing of appliance or of the other
// concept packages. What the handlers need of the broker (the current
// image's Values, committing records through the controller) is the Broker
// interface, which appliance implements and passes to Register. The
// produce and fetch paths in appliance call Manager.RecordProduce and
// RecordFetch, and hold throttled responses with Hold.
//
// Goroutines: Values are immutable and safe to share. The Manager is safe
// for concurrent use (one mutex, held only to update a rate). Handlers run
// on the dispatching connection's goroutine or loop; AlterClientQuotas
// waits for the commit in its Deferred part, on its own goroutine.
package quota
