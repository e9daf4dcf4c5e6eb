package security

// SASL authentication of SASL_PLAINTEXT connections (KIP-43, KIP-152):
// the server side of PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
// RFC 7677, Kafka's KIP-84 subset: no channel binding, no extensions).
//
// The broker's connections and their SaslHandshake and SaslAuthenticate
// handlers drive these: a connection of a SASL listener starts
// unauthenticated; SaslHandshake picks the mechanism; SaslAuthenticate
// carries the mechanism's tokens (VerifyPlain, ScramServer.Step). On
// success the connection's principal becomes User:<name>, which the ACL
// authorizer and super.users see; on failure the client gets
// SASL_AUTHENTICATION_FAILED (58) with a message and the connection closes.
// A SCRAM exchange for an unknown user runs against a made-up credential
// and fails at the proof, as a wrong password does, so answers do not tell
// which users exist.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SASL mechanism names (sasl.enabled.mechanisms).
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
)

// errSaslAuthFailed is the message-free cause of a failed authentication;
// the client sees SASL_AUTHENTICATION_FAILED with the wrapped text.
var errSaslAuthFailed = errors.New("authentication failed")

// plainCredentials parses a PLAIN message (RFC 4616): authzid NUL authcid
// NUL passwd. An authzid other than empty or the authcid is refused, as
// Kafka refuses it.
func plainCredentials(msg []byte) (user, pass string, err error) {
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("%w: invalid PLAIN message: want authzid NUL username NUL password", errSaslAuthFailed)
	}
	authz, user, pass := parts[0], parts[1], parts[2]
	if user == "" {
		return "", "", fmt.Errorf("%w: username not specified", errSaslAuthFailed)
	}
	if pass == "" {
		return "", "", fmt.Errorf("%w: password not specified", errSaslAuthFailed)
	}
	if authz != "" && authz != user {
		return "", "", fmt.Errorf("%w: the authorization id differs from the username", errSaslAuthFailed)
	}
	return user, pass, nil
}

// VerifyPlain checks msg against users (name -> password) and returns the
// user name. Passwords are compared in constant time; an unknown user is
// compared against a dummy so the time does not tell.
func VerifyPlain(users map[string]string, msg []byte) (string, error) {
	user, pass, err := plainCredentials(msg)
	if err != nil {
		return "", err
	}
	want, ok := users[user]
	if !ok {
		want = "\x00unknown user\x00"
	}
	if subtle.ConstantTimeCompare([]byte(pass), []byte(want)) != 1 || !ok {
		return "", fmt.Errorf("%w: invalid username or password", errSaslAuthFailed)
	}
	return user, nil
}

// ScramLookup returns a user's stored credential for the exchange's
// mechanism, and whether the user has one.
type ScramLookup func(user string) (ScramCredential, bool)

// ScramServer is the server side of one SCRAM exchange: two steps, each
// taking the client's message and returning the server's.
type ScramServer struct {
	mech   int8 // ScramSHA256 or ScramSHA512
	lookup ScramLookup
	// fakeKey derives the salt of made-up credentials for unknown users.
	fakeKey []byte
	// nonce returns the server's nonce part (tests fix it).
	nonce func() string

	step        int // 0: want client-first, 1: want client-final, 2: done
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	fullNonce   string
	user        string
	cred        ScramCredential
	known       bool
}

// NewScramServer starts the server side of a SCRAM exchange for mechanism
// mech (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), looking credentials up with
// lookup; fakeKey derives the salts of made-up credentials for unknown
// users (random per process).
func NewScramServer(mech int8, lookup ScramLookup, fakeKey []byte) *ScramServer {
	return &ScramServer{mech: mech, lookup: lookup, fakeKey: fakeKey, nonce: randomNonce}
}

// randomNonce is 24 random bytes in base64 (printable, no comma).
func randomNonce() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawStdEncoding.EncodeToString(b[:])
}

// Step takes the client's next message and returns the server's answer.
// done is true once the exchange succeeded (the answer is server-final);
// an error (wrapping errSaslAuthFailed) ends it.
func (s *ScramServer) Step(msg []byte) (out []byte, done bool, err error) {
	switch s.step {
	case 0:
		out, err = s.clientFirstMsg(string(msg))
		if err != nil {
			return nil, false, err
		}
		s.step = 1
		return out, false, nil
	case 1:
		s.step = 2
		out, err = s.clientFinalMsg(string(msg))
		if err != nil {
			return nil, false, err
		}
		return out, true, nil
	}
	return nil, false, fmt.Errorf("%w: the SCRAM exchange is over", errSaslAuthFailed)
}

// User is the authenticated user name (after Step reported done).
func (s *ScramServer) User() string { return s.user }

// decodeSaslName undoes RFC 5802's escaping of ',' (=2C) and '=' (=3D).
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// validNonce: printable ASCII except ',' (RFC 5802 section 7).
func validNonce(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// clientFirstMsg parses "n,[a=authzid],n=user,r=nonce" and answers
// server-first "r=<client+server nonce>,s=<salt>,i=<iterations>".
func (s *ScramServer) clientFirstMsg(m string) ([]byte, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: invalid SCRAM client-first message: %s", errSaslAuthFailed, why)
	}
	// gs2-header: channel binding flag, authzid.
	flag, rest, ok := strings.Cut(m, ",")
	if !ok {
		return nil, bad("no GS2 header")
	}
	if flag != "n" {
		return nil, bad(fmt.Sprintf("channel binding flag %q is not supported (only n)", flag))
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, bad("no GS2 header")
	}
	s.gs2Header = m[:len(m)-len(bare)]
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return nil, bad("malformed authzid")
		}
		if authz, ok = decodeSaslName(a); !ok {
			return nil, bad("malformed authzid")
		}
	}
	fields := strings.Split(bare, ",")
	if len(fields) < 2 {
		return nil, bad("want n=user,r=nonce")
	}
	if strings.HasPrefix(fields[0], "m=") {
		return nil, bad("mandatory extensions are not supported")
	}
	uname, ok := strings.CutPrefix(fields[0], "n=")
	if !ok {
		return nil, bad("want n=user first")
	}
	user, ok := decodeSaslName(uname)
	if !ok || user == "" {
		return nil, bad("malformed user name")
	}
	cnonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !validNonce(cnonce) {
		return nil, bad("malformed nonce")
	}
	if len(fields) > 2 {
		return nil, bad(fmt.Sprintf("extensions %q are not supported", strings.Join(fields[2:], ",")))
	}
	if authz != "" && authz != user {
		return nil, fmt.Errorf("%w: the authorization id differs from the username", errSaslAuthFailed)
	}
	s.user, s.clientFirst = user, bare
	s.cred, s.known = s.lookup(user)
	if !s.known {
		s.cred = s.fakeCredential(user)
	}
	s.fullNonce = cnonce + s.nonce()
	s.serverFirst = "r=" + s.fullNonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(int(s.cred.Iterations))
	return []byte(s.serverFirst), nil
}

// fakeCredential is a credential no password matches, with a salt stable
// per user name (HMAC of the name under fakeKey), so that repeated tries
// for an unknown user look like those for a known one.
func (s *ScramServer) fakeCredential(user string) ScramCredential {
	mac := hmac.New(scramHash(ScramSHA256), s.fakeKey)
	mac.Write([]byte(user))
	salt := mac.Sum(nil)
	var key [64]byte
	_, _ = rand.Read(key[:])
	n := scramHash(s.mech)().Size()
	return ScramCredential{Salt: salt, StoredKey: key[:n], ServerKey: key[:n], Iterations: scramMinIterations}
}

// clientFinalMsg checks "c=<gs2 header>,r=<nonce>,p=<proof>" against the
// stored key and answers server-final "v=<server signature>".
func (s *ScramServer) clientFinalMsg(m string) ([]byte, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: invalid SCRAM client-final message: %s", errSaslAuthFailed, why)
	}
	i := strings.LastIndex(m, ",p=")
	if i < 0 {
		return nil, bad("no proof")
	}
	withoutProof, proofB64 := m[:i], m[i+3:]
	fields := strings.Split(withoutProof, ",")
	if len(fields) != 2 {
		return nil, bad("want c=...,r=...,p=... without extensions")
	}
	cb, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return nil, bad("no channel binding")
	}
	if gs2, err := base64.StdEncoding.DecodeString(cb); err != nil || string(gs2) != s.gs2Header {
		return nil, bad("channel binding does not match the GS2 header")
	}
	// Kafka accepts a nonce that ends with the server-first nonce (its
	// check is endsWith); librdkafka sends its client nonce in front of it.
	if n, ok := strings.CutPrefix(fields[1], "r="); !ok || !strings.HasSuffix(n, s.fullNonce) {
		return nil, bad("nonce does not match")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	h := scramHash(s.mech)
	if err != nil || len(proof) != h().Size() {
		return nil, bad("malformed proof")
	}
	authMsg := s.clientFirst + "," + s.serverFirst + "," + withoutProof
	mac := hmac.New(h, s.cred.StoredKey)
	mac.Write([]byte(authMsg))
	clientSig := mac.Sum(nil)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	sh := h()
	sh.Write(clientKey)
	if subtle.ConstantTimeCompare(sh.Sum(nil), s.cred.StoredKey) != 1 || !s.known {
		return nil, fmt.Errorf("%w: invalid credentials with SASL mechanism %s", errSaslAuthFailed, ScramMechanismName(s.mech))
	}
	mac = hmac.New(h, s.cred.ServerKey)
	mac.Write([]byte(authMsg))
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac.Sum(nil))), nil
}

// ScramMechanismByName maps SCRAM-SHA-256/512 to the mechanism code; 0
// for anything else.
func ScramMechanismByName(name string) int8 {
	switch name {
	case MechScramSHA256:
		return ScramSHA256
	case MechScramSHA512:
		return ScramSHA512
	}
	return 0
}
