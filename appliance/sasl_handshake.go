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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiDef{key: 17, min: 1, max: 1, advertiseMin: 0, advertise: true, handle: handleSaslHandshake, unsupported: saslHandshakeUnsupported})
}

func handleSaslHandshake(b *Broker, r *request) any {
	req := r.req.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := r.c
	if c == nil || c.lis == nil || !c.lis.sasl() || !c.authPending {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	resp.SupportedMechanisms = c.lis.Mechanisms
	if c.saslMech != "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return respondAndClose{resp: resp, reason: "a second SaslHandshake during SASL authentication"}
	}
	if !c.lis.mechanismEnabled(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return respondAndClose{resp: resp, reason: fmt.Sprintf("SASL mechanism %q is not enabled on listener %s", req.Mechanism, c.lis.Name)}
	}
	c.saslMech = req.Mechanism
	return resp
}

func saslHandshakeUnsupported(r *request) any {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	if r.c != nil && r.c.lis != nil {
		resp.SupportedMechanisms = r.c.lis.Mechanisms
	}
	return &fixedVersion{resp: resp, version: 0}
}
