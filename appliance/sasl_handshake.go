package appliance

// SaslHandshake (key 17), v1 (KIP-43, KIP-152).
//
// On a SASL_PLAINTEXT connection before authentication: answers the
// listener's enabled mechanisms (sasl.enabled.mechanisms); an enabled
// mechanism is chosen for the SaslAuthenticate requests that follow, any
// other is answered UNSUPPORTED_SASL_MECHANISM (33) and the connection
// closes, as does a second handshake (ILLEGAL_SASL_STATE, 34). On a
// PLAINTEXT listener, or after authentication, it answers
// ILLEGAL_SASL_STATE and the connection stays open, as Kafka's request
// handler answers. v0, where raw SASL tokens without Kafka framing follow
// the handshake, is not implemented: a v0 request is answered
// UNSUPPORTED_VERSION (35) with the mechanisms (the v0 and v1 bodies are the
// same). ApiVersions still lists 0-1, as Kafka does: librdkafka (kcat,
// confluent-kafka) refuses to authenticate when v0 is not listed, then sends
// v1 and SaslAuthenticate, as franz-go, kafka-go and the Java client do.

import (
	"fmt"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var saslHandshakeAPI = apiDef{key: 17, min: 1, max: 1, advertiseFrom: 0, handle: handleSaslHandshake, unsupported: saslHandshakeUnsupported}

func handleSaslHandshake(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := connOf(r)
	if c == nil || c.lis == nil || !c.lis.sasl() || !c.authPending {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	resp.SupportedMechanisms = c.lis.Mechanisms
	if c.saslMech != "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.RespondAndClose{Resp: resp, Reason: "a second SaslHandshake during SASL authentication"}
	}
	if !c.lis.mechanismEnabled(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return wire.RespondAndClose{Resp: resp, Reason: fmt.Sprintf("SASL mechanism %q is not enabled on listener %s", req.Mechanism, c.lis.Name)}
	}
	c.saslMech = req.Mechanism
	return resp
}

func saslHandshakeUnsupported(_ *Broker, r *wire.Request) any {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	if connOf(r) != nil && connOf(r).lis != nil {
		resp.SupportedMechanisms = connOf(r).lis.Mechanisms
	}
	return &fixedVersion{resp: resp, version: 0}
}
