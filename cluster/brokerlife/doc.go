// Package brokerlife is a broker's side of cluster membership (Kafka's
// BrokerLifecycleManager): it registers the broker with the active
// controller (BrokerRegistration, API 62), sends a heartbeat every
// broker.heartbeat.interval.ms (BrokerHeartbeat, API 63) carrying the
// offset of the last metadata record the broker applied, asks to be
// unfenced once it has caught up with the metadata high watermark, and
// at stop asks for a controlled shutdown and waits until the controller
// lets it go.
//
// It does not know how requests reach the controller: the caller gives it
// a Channel (the quorum wiring sends over the controller listener to the
// active controller, tests call a membership.Registry in process). A
// heartbeat the controller does not answer is retried at the next
// interval; a broker that misses heartbeats for broker.session.timeout.ms
// is fenced by the controller, learns so from the next answered heartbeat,
// and is unfenced again by the heartbeats after it.
//
// Goroutines and locks: Start runs one goroutine, the manager's loop,
// which owns every request; the exported accessors read the state under a
// mutex that the loop holds only to update it, never across a request.
// It imports franz-go's kmsg and kerr only, never appliance.
package brokerlife
