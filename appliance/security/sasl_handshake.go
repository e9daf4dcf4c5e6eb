package security

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

func (h *handlers) saslHandshakeAPI() wire.API {
	return wire.API{Key: 17, Min: 1, Max: 1, AdvertiseFrom: 0, Handle: h.handleSaslHandshake, Unsupported: handleSaslHandshakeUnsupported}
}

func (h *handlers) handleSaslHandshake(r *wire.Request) any {
	req := r.Req.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := saslConn(r)
	var lis SASLListener
	ok := false
	if c != nil {
		lis, ok = c.SASLListener()
	}
	if !ok || !c.SASLPending() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	resp.SupportedMechanisms = lis.Mechanisms
	ex := c.SASLExchange()
	if ex.Mechanism != "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.RespondAndClose{Resp: resp, Reason: "a second SaslHandshake during SASL authentication"}
	}
	if !lis.mechanismEnabled(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return wire.RespondAndClose{Resp: resp, Reason: fmt.Sprintf("SASL mechanism %q is not enabled on listener %s", req.Mechanism, lis.Name)}
	}
	ex.Mechanism = req.Mechanism
	return resp
}

func handleSaslHandshakeUnsupported(r *wire.Request) any {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	if c := saslConn(r); c != nil {
		if lis, ok := c.SASLListener(); ok {
			resp.SupportedMechanisms = lis.Mechanisms
		}
	}
	return &wire.FixedVersion{Resp: resp, Version: 0}
}
