package appliance

import (
	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/wire"
)

// Listener is one entry of listeners with what its connections need
// (config.Listener, parsed by config.ParseListeners).
type Listener = config.Listener

// Security protocols (Kafka's SecurityProtocol names).
const (
	protoPlaintext     = config.ProtoPlaintext
	protoSaslPlaintext = config.ProtoSaslPlaintext
)

// SASL mechanism names (SaslHandshake, sasl.enabled.mechanisms).
const (
	mechPlain       = security.MechPlain
	mechScramSHA256 = security.MechScramSHA256
	mechScramSHA512 = security.MechScramSHA512
)

// advertisedFor is the advertised host and port of the listener r came in
// on (Kafka answers with the endpoints of the request's listener name);
// the first listener's for a request without a connection.
func (b *Broker) advertisedFor(r *wire.Request) (string, int32) {
	if r != nil && connOf(r) != nil && connOf(r).lis != nil {
		return connOf(r).lis.AdvertisedHost, connOf(r).lis.AdvertisedPort
	}
	return b.cfg.AdvertisedHost, b.cfg.AdvertisedPort
}
