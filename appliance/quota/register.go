package quota

import "github.com/ringbroker/ringbroker/appliance/wire"

// Broker is what the quota handlers need of the broker that registers
// them.
type Broker interface {
	// ClientQuotas returns the client quota values of the current
	// metadata image.
	ClientQuotas() Values
	// CommitClientQuotas appends recs to the metadata log as one batch,
	// through the controller, and publishes the image they make. Its
	// errors wrap a Kafka error (kerr.KafkaStorageError,
	// kerr.UnknownServerError) for the answer.
	CommitClientQuotas(recs []*ClientQuotaRecord) error
}

// handlers answers the quota APIs with its broker.
type handlers struct{ b Broker }

// Register adds AlterClientQuotas and DescribeClientQuotas to t, answered
// with b.
func Register(t *wire.Table, b Broker) {
	h := &handlers{b: b}
	t.Register(h.alterClientQuotasAPI())
	t.Register(h.describeClientQuotasAPI())
}
