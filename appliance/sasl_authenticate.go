package appliance

// SaslAuthenticate (key 36), v0-v2 (KIP-152; v1 session lifetime, KIP-368).
//
// Carries the tokens of the mechanism SaslHandshake chose (sasl.go): one
// PLAIN message (RFC 4616), or SCRAM's client-first then client-final
// (RFC 5802), answered with server-first then server-final. Success makes
// the connection's principal User:<name>. A failure answers
// SASL_AUTHENTICATION_FAILED (58) with a message and closes the
// connection; a SaslAuthenticate before SaslHandshake answers
// ILLEGAL_SASL_STATE (34) and closes. On a PLAINTEXT listener, or after
// authentication (re-authentication, KIP-368, is not offered), it answers
// ILLEGAL_SASL_STATE and the connection stays open. session_lifetime_ms is
// 0: sessions do not expire.

import (
	"errors"

	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var saslAuthenticateAPI = apiDef{key: 36, min: 0, max: 2, handle: handleSaslAuthenticate}

func handleSaslAuthenticate(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := connOf(r)
	fail := func(code int16, msg string, close bool) any {
		resp.ErrorCode = code
		resp.ErrorMessage = &msg
		if close {
			return wire.RespondAndClose{Resp: resp, Reason: msg}
		}
		return resp
	}
	switch {
	case c == nil || c.lis == nil || !c.lis.sasl():
		return fail(kerr.IllegalSaslState.Code, "SaslAuthenticate on a listener without SASL", false)
	case !c.authPending:
		return fail(kerr.IllegalSaslState.Code, "SaslAuthenticate after successful authentication: re-authentication is not supported", false)
	case c.saslMech == "":
		return fail(kerr.IllegalSaslState.Code, "SaslAuthenticate before SaslHandshake", true)
	}
	authFailed := func(err error) any {
		msg := "Authentication failed"
		if err != nil {
			msg = err.Error()
		}
		return fail(kerr.SaslAuthenticationFailed.Code, msg, true)
	}
	if c.saslMech == security.MechPlain {
		user, err := security.VerifyPlain(c.lis.PlainUsers, req.SASLAuthBytes)
		if err != nil {
			return authFailed(err)
		}
		c.authenticated(user)
		return resp
	}
	mech := security.ScramMechanismByName(c.saslMech)
	if mech == 0 {
		return authFailed(errors.New("mechanism not implemented"))
	}
	if c.scram == nil {
		c.scram = security.NewScramServer(mech, func(user string) (ScramCredential, bool) {
			return scramCredential(b.currentImage(), user, mech)
		}, b.scramFakeKey)
	}
	out, done, err := c.scram.Step(req.SASLAuthBytes)
	if err != nil {
		c.scram = nil
		return authFailed(err)
	}
	resp.SASLAuthBytes = out
	if done {
		c.authenticated(c.scram.User())
		c.scram = nil
	}
	return resp
}
