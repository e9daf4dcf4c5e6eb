package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned returns a PEM key and certificate for CN=test.
func selfSigned(t *testing.T) (keyPEM, certPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(k)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func parseTLSListeners(props map[string]string) ([]Listener, error) {
	get := func(k string) string {
		if v, ok := props[k]; ok {
			return v
		}
		if k == "listener.security.protocol.map" {
			return DefaultSecurityProtocolMap
		}
		if k == "sasl.enabled.mechanisms" {
			return DefaultSaslMechanisms
		}
		return ""
	}
	return ParseListeners(props, get)
}

func TestListenerTLSSettings(t *testing.T) {
	key, cert := selfSigned(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "ks.pem")
	if err := os.WriteFile(store, append(append([]byte{}, key...), cert...), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func(kv ...string) map[string]string {
		p := map[string]string{
			"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
			"ssl.keystore.location":          store,
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return p
	}
	ls, err := parseTLSListeners(base(
		"listener.name.mtls.ssl.client.auth", "required",
		"listener.name.mtls.ssl.keystore.location", "",
		"listener.name.mtls.ssl.keystore.key", string(key),
		"listener.name.mtls.ssl.keystore.certificate.chain", string(cert),
		"listener.name.mtls.ssl.truststore.certificates", string(cert),
		"listener.name.mtls.ssl.enabled.protocols", "TLSv1.3",
		"listener.name.mtls.ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/U",
		"ssl.client.auth", "requested",
		"ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	))
	if err != nil {
		t.Fatal(err)
	}
	if ls[0].TLS != nil || ls[1].TLS == nil || ls[2].TLS == nil || ls[3].TLS == nil || !ls[3].SASL() || ls[1].SASL() {
		t.Fatalf("TLS on %v %v %v %v, SASL on SASL_SSL %v", ls[0].TLS, ls[1].TLS, ls[2].TLS, ls[3].TLS, ls[3].SASL())
	}
	ssl, mtls := ls[1].TLS.Config, ls[2].TLS.Config
	if ca := ls[3].TLS.Config.ClientAuth; ca != tls.NoClientCert {
		t.Errorf("SASL_SSL took the broker-wide ssl.client.auth (KIP-684: only its listener's own counts): %v", ca)
	}
	if ls2, err := parseTLSListeners(base("listener.name.sasl_ssl.ssl.client.auth", "required")); err != nil || ls2[3].TLS.Config.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("listener.name.sasl_ssl.ssl.client.auth=required: %v", err)
	}
	if ssl.ClientAuth != tls.VerifyClientCertIfGiven || ssl.MinVersion != tls.VersionTLS12 || ssl.MaxVersion != tls.VersionTLS13 ||
		len(ssl.CipherSuites) != 1 || ssl.ClientCAs != nil {
		t.Errorf("SSL: client auth %v versions %x-%x suites %v CAs %v", ssl.ClientAuth, ssl.MinVersion, ssl.MaxVersion, ssl.CipherSuites, ssl.ClientCAs)
	}
	if mtls.ClientAuth != tls.RequireAndVerifyClientCert || mtls.MinVersion != tls.VersionTLS13 || mtls.ClientCAs == nil {
		t.Errorf("MTLS: client auth %v min version %x CAs %v", mtls.ClientAuth, mtls.MinVersion, mtls.ClientCAs)
	}
	if got, _ := ls[2].TLS.Rules.Map("CN=abc"); got != "ABC" {
		t.Errorf("MTLS rules map CN=abc to %q, want ABC", got)
	}
	if got, _ := ls[1].TLS.Rules.Map("CN=abc"); got != "CN=abc" {
		t.Errorf("SSL rules (DEFAULT) map CN=abc to %q", got)
	}

	// A legacy-encrypted key (what ssl.key.password would unlock).
	encKey := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}, Bytes: []byte{1}})
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"ssl.keystore.location", ""}, "needs ssl.keystore.location"},
		{[]string{"ssl.keystore.location", filepath.Join(dir, "missing.pem")}, "cannot read ssl.keystore.location"},
		{[]string{"ssl.keystore.type", "JKS"}, "only PEM"},
		{[]string{"listener.name.ssl.ssl.truststore.type", "PKCS12"}, "listener.name.ssl.ssl.truststore.type=PKCS12: only PEM"},
		{[]string{"ssl.client.auth", "always"}, "want none, requested or required"},
		{[]string{"ssl.enabled.protocols", "TLSv1.1"}, "not supported"},
		{[]string{"ssl.enabled.protocols", " , "}, "empty"},
		{[]string{"ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_SHA"}, "not supported"},
		{[]string{"ssl.truststore.certificates", "nope"}, "holds no PEM certificate"},
		{[]string{"ssl.principal.mapping.rules", "RULE:x"}, "ssl.principal.mapping.rules"},
		{[]string{"ssl.keystore.location", "", "ssl.keystore.key", string(encKey), "ssl.keystore.certificate.chain", string(cert), "ssl.key.password", "pw"}, "ssl.key.password) are not supported"},
		{[]string{"ssl.keystore.location", "", "ssl.keystore.key", string(cert), "ssl.keystore.certificate.chain", string(cert)}, "cannot load the key store"},
	} {
		_, err := parseTLSListeners(base(tc.kv...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.kv, err, tc.want)
		}
	}
	// Controller listeners stay without TLS.
	_, err = parseListenerSetFor(t, map[string]string{"listeners": "CONTROLLER://127.0.0.1:0", "controller.listener.names": "CONTROLLER",
		"listener.security.protocol.map": "CONTROLLER:SSL", "ssl.keystore.location": store})
	if err == nil || !strings.Contains(err.Error(), "not implemented on controller listeners") {
		t.Errorf("SSL controller listener: %v", err)
	}
}

func parseListenerSetFor(t *testing.T, props map[string]string) ([]Listener, error) {
	t.Helper()
	_, ctl, err := parseListenerSet(props, func(k string) string { return props[k] })
	return ctl, err
}
