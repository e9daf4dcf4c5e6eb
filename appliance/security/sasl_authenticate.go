package security

// SaslAuthenticate (key 36), v0-v2 (KIP-152; v1 session lifetime, KIP-368).
//
// Carries the tokens of the mechanism SaslHandshake chose (VerifyPlain, ScramServer): one
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

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *handlers) saslAuthenticateAPI() wire.API {
	return wire.API{Key: 36, Min: 0, Max: 2, Handle: h.handleSaslAuthenticate}
}

func (h *handlers) handleSaslAuthenticate(r *wire.Request) any {
	req := r.Req.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(code int16, msg string, close bool) any {
		resp.ErrorCode = code
		resp.ErrorMessage = &msg
		if close {
			return wire.RespondAndClose{Resp: resp, Reason: msg}
		}
		return resp
	}
	c := saslConn(r)
	var lis SASLListener
	ok := false
	if c != nil {
		lis, ok = c.SASLListener()
	}
	switch {
	case !ok:
		return fail(kerr.IllegalSaslState.Code, "SaslAuthenticate on a listener without SASL", false)
	case !c.SASLPending():
		return fail(kerr.IllegalSaslState.Code, "SaslAuthenticate after successful authentication: re-authentication is not supported", false)
	}
	ex := c.SASLExchange()
	if ex.Mechanism == "" {
		return fail(kerr.IllegalSaslState.Code, "SaslAuthenticate before SaslHandshake", true)
	}
	authFailed := func(err error) any {
		msg := "Authentication failed"
		if err != nil {
			msg = err.Error()
		}
		return fail(kerr.SaslAuthenticationFailed.Code, msg, true)
	}
	if ex.Mechanism == MechPlain {
		user, err := VerifyPlain(lis.PlainUsers, req.SASLAuthBytes)
		if err != nil {
			return authFailed(err)
		}
		c.Authenticated(user)
		return resp
	}
	mech := ScramMechanismByName(ex.Mechanism)
	if mech == 0 {
		return authFailed(errors.New("mechanism not implemented"))
	}
	if ex.scram == nil {
		ex.scram = NewScramServer(mech, func(user string) (ScramCredential, bool) {
			return h.b.View().Scram.Lookup(user, mech)
		}, h.scramFakeKey)
	}
	out, done, err := ex.scram.Step(req.SASLAuthBytes)
	if err != nil {
		ex.scram = nil
		return authFailed(err)
	}
	resp.SASLAuthBytes = out
	if done {
		user := ex.scram.User()
		ex.scram = nil
		c.Authenticated(user)
	}
	return resp
}
