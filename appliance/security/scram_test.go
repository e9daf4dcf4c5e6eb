package security

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"testing"
)

// TestScramCredentialRFC7677 checks the stored keys against the
// SCRAM-SHA-256 exchange of RFC 7677 section 3: the client proof verifies
// against StoredKey and ServerKey gives the server signature.
func TestScramCredentialRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := pbkdf2.Key(sha256.New, "pencil", salt, 4096, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	c := NewScramCredential(ScramSHA256, salt, salted, 4096)
	auth := []byte("n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
	proof, _ := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	mac := hmac.New(sha256.New, c.StoredKey)
	mac.Write(auth)
	clientKey := mac.Sum(nil)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	if h := sha256.Sum256(clientKey); !bytes.Equal(h[:], c.StoredKey) {
		t.Errorf("client proof does not verify against StoredKey")
	}
	mac = hmac.New(sha256.New, c.ServerKey)
	mac.Write(auth)
	if got := base64.StdEncoding.EncodeToString(mac.Sum(nil)); got != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Errorf("server signature %s", got)
	}
	if bytes.Equal(c.StoredKey, salted) || bytes.Equal(c.ServerKey, salted) {
		t.Errorf("salted password stored")
	}
	if len(NewScramCredential(ScramSHA512, salt, salted, 4096).StoredKey) != 64 {
		t.Errorf("SCRAM-SHA-512 keys are not 64 bytes")
	}
}
