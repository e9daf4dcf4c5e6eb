package appliance

import (
	"testing"

	"github.com/ringbroker/ringbroker/appliance/config"
	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSaslHandlersState walks SaslHandshake and SaslAuthenticate (as the
// broker's table dispatches them) through their states on one connection
// of each kind of listener.
func TestSaslHandlersState(t *testing.T) {
	saslL := &Listener{Name: "SASL_PLAINTEXT", Protocol: protoSaslPlaintext, Mechanisms: []string{mechPlain, mechScramSHA256},
		PlainUsers: map[string]string{"alice": "pw"}}
	plainL := &Listener{Name: "PLAINTEXT", Protocol: protoPlaintext}
	apis := newAPITable(&Broker{})
	run := func(key int16, r *wire.Request) any {
		a, ok := apis.Lookup(key)
		if !ok {
			t.Fatalf("API key %d not registered", key)
		}
		return a.Handle(r)
	}
	handshake := func(c *conn, mech string) (int16, []string, bool) {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = 1, mech
		out := run(17, &wire.Request{Conn: c, Key: 17, Version: 1, Req: req})
		rc, closing := out.(wire.RespondAndClose)
		resp, _ := out.(*kmsg.SASLHandshakeResponse)
		if closing {
			resp = rc.Resp.(*kmsg.SASLHandshakeResponse)
		}
		return resp.ErrorCode, resp.SupportedMechanisms, closing
	}
	authenticate := func(c *conn, msg string) (int16, bool) {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, []byte(msg)
		out := run(36, &wire.Request{Conn: c, Key: 36, Version: 2, Req: req})
		if rc, ok := out.(wire.RespondAndClose); ok {
			return rc.Resp.(*kmsg.SASLAuthenticateResponse).ErrorCode, true
		}
		return out.(*kmsg.SASLAuthenticateResponse).ErrorCode, false
	}

	// PLAINTEXT: both answer ILLEGAL_SASL_STATE, the connection stays.
	c := &conn{}
	c.setListener(plainL)
	if code, _, closing := handshake(c, mechPlain); code != kerr.IllegalSaslState.Code || closing || c.authPending {
		t.Errorf("PLAINTEXT handshake: code %d closing %v", code, closing)
	}
	if code, closing := authenticate(c, "\x00alice\x00pw"); code != kerr.IllegalSaslState.Code || closing || c.Principal() != security.AnonymousPrincipal {
		t.Errorf("PLAINTEXT authenticate: code %d closing %v principal %s", code, closing, c.Principal())
	}

	// SASL: authenticate before the handshake closes.
	c = &conn{}
	c.setListener(saslL)
	if !c.authPending || allowedBeforeAuth(3) || !allowedBeforeAuth(18) {
		t.Fatalf("a SASL connection starts pending")
	}
	if code, closing := authenticate(c, "\x00alice\x00pw"); code != kerr.IllegalSaslState.Code || !closing {
		t.Errorf("authenticate before handshake: code %d closing %v", code, closing)
	}
	// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the list, closing.
	if code, mechs, closing := handshake(c, "GSSAPI"); code != kerr.UnsupportedSaslMechanism.Code || !closing || len(mechs) != 2 {
		t.Errorf("GSSAPI: code %d mechs %v closing %v", code, mechs, closing)
	}
	// PLAIN, a second handshake, then success.
	c = &conn{}
	c.setListener(saslL)
	if code, mechs, closing := handshake(c, mechPlain); code != 0 || closing || len(mechs) != 2 {
		t.Fatalf("PLAIN handshake: code %d mechs %v closing %v", code, mechs, closing)
	}
	c2 := &conn{}
	c2.setListener(saslL)
	c2.sasl.Mechanism = mechPlain
	if code, _, closing := handshake(c2, mechPlain); code != kerr.IllegalSaslState.Code || !closing {
		t.Errorf("second handshake: code %d closing %v", code, closing)
	}
	c3 := &conn{}
	c3.setListener(saslL)
	c3.sasl.Mechanism = mechPlain
	if code, closing := authenticate(c3, "\x00alice\x00nope"); code != kerr.SaslAuthenticationFailed.Code || !closing || c3.Principal() != security.AnonymousPrincipal {
		t.Errorf("wrong password: code %d closing %v", code, closing)
	}
	if code, closing := authenticate(c, "\x00alice\x00pw"); code != 0 || closing || c.authPending || c.Principal() != "User:alice" {
		t.Errorf("PLAIN: code %d closing %v pending %v principal %s", code, closing, c.authPending, c.Principal())
	}
	// After authentication: ILLEGAL_SASL_STATE, the connection stays.
	if code, _, closing := handshake(c, mechPlain); code != kerr.IllegalSaslState.Code || closing {
		t.Errorf("handshake after authentication: code %d closing %v", code, closing)
	}
	if code, closing := authenticate(c, "\x00alice\x00pw"); code != kerr.IllegalSaslState.Code || closing || c.Principal() != "User:alice" {
		t.Errorf("authenticate after authentication: code %d closing %v", code, closing)
	}
}

// FuzzParsePlainJAAS: any JAAS text parses or fails, never panics.
func FuzzParsePlainJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b\"c";`)
	f.Add(`x optional k=v; y required;`)
	f.Fuzz(func(t *testing.T, s string) { _, _ = config.ParsePlainJAAS(s) })
}
