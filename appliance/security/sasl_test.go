package security

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// rfc7677Lookup is the credential of RFC 7677 section 3 (user "user",
// password "pencil").
func rfc7677Lookup(t *testing.T) ScramLookup {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := pbkdf2.Key(sha256.New, "pencil", salt, 4096, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	c := NewScramCredential(ScramSHA256, salt, salted, 4096)
	return func(user string) (ScramCredential, bool) { return c, user == "user" }
}

// TestScramServerRFC7677 runs the SCRAM-SHA-256 exchange of RFC 7677
// section 3 through the server state machine, with the RFC's nonces.
func TestScramServerRFC7677(t *testing.T) {
	s := NewScramServer(ScramSHA256, rfc7677Lookup(t), []byte("k"))
	s.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	out, done, err := s.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatalf("client-first: %v done=%v", err, done)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(out) != want {
		t.Fatalf("server-first %q, want %q", out, want)
	}
	out, done, err = s.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatalf("client-final: %v done=%v", err, done)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(out) != want {
		t.Errorf("server-final %q, want %q", out, want)
	}
	if s.User() != "user" {
		t.Errorf("user %q", s.User())
	}
	if _, _, err := s.Step([]byte("x")); err == nil {
		t.Errorf("a third step succeeded")
	}
}

// TestScramServerBadInput: malformed or unsupported client messages and a
// wrong proof fail with errSaslAuthFailed.
func TestScramServerBadInput(t *testing.T) {
	firsts := []string{
		"", "n", "y,,n=user,r=abc", "p=tls-unique,,n=user,r=abc", "n,,m=ext,n=user,r=abc", "n,,n=user",
		"n,,r=abc,n=user", "n,,n=user,r=", "n,,n=user,r=a,b", "n,,n=user,r=abc,ext=1", "n,,n=us=er,r=abc",
		"n,a=other,n=user,r=abc", "n,x,n=user,r=abc",
	}
	for _, m := range firsts {
		s := NewScramServer(ScramSHA256, rfc7677Lookup(t), []byte("k"))
		if _, _, err := s.Step([]byte(m)); !errors.Is(err, errSaslAuthFailed) {
			t.Errorf("client-first %q: %v, want errSaslAuthFailed", m, err)
		}
	}
	good := "c=biws,r=rOprNGfwEbeRWgbNEkqOSRV,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	finals := []string{
		"", "c=biws,r=rOprNGfwEbeRWgbNEkqOSRV", strings.Replace(good, "c=biws", "c=eSws", 1), // y,,
		strings.Replace(good, "SRV", "XXX", 1), strings.Replace(good, "p=dH", "p=eH", 1), // wrong proof
		strings.Replace(good, ",p=", ",x=1,p=", 1), strings.Replace(good, "p=dHzb", "p=!!", 1),
	}
	for _, m := range finals {
		s := NewScramServer(ScramSHA256, rfc7677Lookup(t), []byte("k"))
		s.nonce = func() string { return "SRV" }
		if _, _, err := s.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")); err != nil {
			t.Fatal(err)
		}
		if _, done, err := s.Step([]byte(m)); !errors.Is(err, errSaslAuthFailed) || done {
			t.Errorf("client-final %q: done=%v %v, want errSaslAuthFailed", m, done, err)
		}
	}
	// The authzid may name the user itself; names are unescaped.
	s := NewScramServer(ScramSHA256, func(u string) (ScramCredential, bool) {
		return ScramCredential{Salt: []byte("s"), Iterations: 4096}, u == "a,b=c"
	},
		[]byte("k"))
	if _, _, err := s.Step([]byte("n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=abc")); err != nil || s.User() != "a,b=c" {
		t.Errorf("escaped names: %v user %q", err, s.User())
	}
}

// TestScramServerFranzClient authenticates franz-go's SCRAM client against
// the server for both mechanisms, and sees a wrong password and an unknown
// user fail alike at the proof.
func TestScramServerFranzClient(t *testing.T) {
	creds := map[int8]ScramCredential{}
	for _, m := range []struct {
		mech int8
		kdf  func() []byte
	}{
		{ScramSHA256, func() []byte {
			k, _ := pbkdf2.Key(sha256.New, "secret-256", []byte("salt256"), 4096, sha256.Size)
			return k
		}},
		{ScramSHA512, func() []byte {
			k, _ := pbkdf2.Key(sha512.New, "secret-512", []byte("salt512"), 8192, sha512.Size)
			return k
		}},
	} {
		salt := []byte("salt256")
		iters := int32(4096)
		if m.mech == ScramSHA512 {
			salt, iters = []byte("salt512"), 8192
		}
		creds[m.mech] = NewScramCredential(m.mech, salt, m.kdf(), iters)
	}
	run := func(mech int8, user, pass string) error {
		s := NewScramServer(mech, func(u string) (ScramCredential, bool) {
			c, ok := creds[mech]
			return c, ok && u == "alice"
		}, []byte("k"))
		a := scram.Auth{User: user, Pass: pass}
		m := a.AsSha256Mechanism()
		if mech == ScramSHA512 {
			m = a.AsSha512Mechanism()
		}
		sess, msg, err := m.Authenticate(context.Background(), "broker:9092")
		if err != nil {
			return err
		}
		for {
			out, sdone, err := s.Step(msg)
			if err != nil {
				return err
			}
			cdone, next, err := sess.Challenge(out)
			if err != nil {
				return err
			}
			if sdone != cdone {
				t.Fatalf("server done=%v, client done=%v", sdone, cdone)
			}
			if sdone {
				if s.User() != user {
					t.Errorf("user %q, want %q", s.User(), user)
				}
				return nil
			}
			msg = next
		}
	}
	if err := run(ScramSHA256, "alice", "secret-256"); err != nil {
		t.Errorf("SCRAM-SHA-256: %v", err)
	}
	if err := run(ScramSHA512, "alice", "secret-512"); err != nil {
		t.Errorf("SCRAM-SHA-512: %v", err)
	}
	wrong := run(ScramSHA256, "alice", "secret-512")
	unknown := run(ScramSHA256, "mallory", "secret-256")
	if !errors.Is(wrong, errSaslAuthFailed) || !errors.Is(unknown, errSaslAuthFailed) || wrong.Error() != unknown.Error() {
		t.Errorf("wrong password %v, unknown user %v: want the same errSaslAuthFailed", wrong, unknown)
	}
}

func TestVerifyPlain(t *testing.T) {
	users := map[string]string{"alice": "secret", "bob": ""}
	for _, tc := range []struct {
		msg, user string
		ok        bool
	}{
		{"\x00alice\x00secret", "alice", true},
		{"alice\x00alice\x00secret", "alice", true},
		{"bob\x00alice\x00secret", "", false},
		{"\x00alice\x00wrong", "", false},
		{"\x00alice\x00secretx", "", false},
		{"\x00mallory\x00secret", "", false},
		{"\x00bob\x00", "", false},
		{"\x00\x00secret", "", false},
		{"alice\x00secret", "", false},
		{"\x00alice\x00secret\x00", "", false},
		{"", "", false},
	} {
		user, err := VerifyPlain(users, []byte(tc.msg))
		if tc.ok != (err == nil) || user != tc.user {
			t.Errorf("%q: user %q err %v, want ok=%v user %q", tc.msg, user, err, tc.ok, tc.user)
		}
		if err != nil && !errors.Is(err, errSaslAuthFailed) {
			t.Errorf("%q: %v does not wrap errSaslAuthFailed", tc.msg, err)
		}
	}
}

// FuzzScramServer feeds arbitrary client messages to both steps: any input
// is an error or an answer, never a panic, and never a success.
func FuzzScramServer(f *testing.F) {
	f.Add("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "c=biws,r=rOprNGfwEbeRWgbNEkqOSRV,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Add("n,a=u,n=u,r=x", "c=bixx,r=x,p=")
	lookup := func(u string) (ScramCredential, bool) {
		return ScramCredential{Salt: []byte("s"), StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096}, u == "user"
	}
	f.Fuzz(func(t *testing.T, first, final string) {
		s := NewScramServer(ScramSHA256, lookup, []byte("k"))
		s.nonce = func() string { return "SRV" }
		if _, _, err := s.Step([]byte(first)); err != nil {
			return
		}
		if _, done, err := s.Step([]byte(final)); err == nil || done {
			t.Fatalf("client-final %q succeeded against a zero key", final)
		}
	})
}

// TestScramServerNonceSuffix: as Kafka (endsWith), a client-final nonce
// that ends with the server-first nonce is accepted, as librdkafka sends
// it with its client nonce in front; a nonce that does not end with it
// is refused.
func TestScramServerNonceSuffix(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := pbkdf2.Key(sha256.New, "pencil", salt, 4096, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	hm := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := hm(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	for _, tc := range []struct {
		nonce string // the client-final r= value, %s = the server-first nonce
		ok    bool
	}{{"%s", true}, {"rOprNGfwEbeRWgbNEkqO%s", true}, {"%sx", false}} {
		s := NewScramServer(ScramSHA256, rfc7677Lookup(t), []byte("k"))
		s.nonce = func() string { return "SRV" }
		first, _, err := s.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
		if err != nil {
			t.Fatal(err)
		}
		full := strings.TrimPrefix(strings.Split(string(first), ",")[0], "r=")
		withoutProof := "c=biws,r=" + fmt.Sprintf(tc.nonce, full)
		sig := hm(storedKey[:], "n=user,r=rOprNGfwEbeRWgbNEkqO,"+string(first)+","+withoutProof)
		proof := make([]byte, len(clientKey))
		for i := range proof {
			proof[i] = clientKey[i] ^ sig[i]
		}
		_, done, err := s.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
		if ok := err == nil && done; ok != tc.ok {
			t.Errorf("client-final nonce %q: done=%v err=%v, want accepted=%v", withoutProof, done, err, tc.ok)
		}
	}
}
