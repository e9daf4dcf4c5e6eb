package config

// TLS settings of SSL and SASL_SSL listeners, by Kafka's names, each read
// first as listener.name.<lower-cased listener name>.<key>, then as
// <key>:
//
//   - ssl.keystore.type=PEM (the only type): ssl.keystore.location names
//     one PEM file holding the private key followed by the certificate
//     chain, or ssl.keystore.key and ssl.keystore.certificate.chain hold
//     them inline. ssl.key.password: encrypted keys are not supported
//     (neither encrypted PKCS#8 nor legacy PEM encryption); a key that is
//     encrypted refuses to start with a message saying so.
//   - ssl.truststore.type=PEM: ssl.truststore.location (a PEM file of CA
//     certificates) or ssl.truststore.certificates (inline); the CAs that
//     client certificates are verified against. Without a trust store the
//     system's roots are used.
//   - ssl.client.auth=none (default), requested or required; on a SASL_SSL
//     listener only listener.name.<name>.ssl.client.auth counts, the
//     broker-wide value does not (KIP-684, as Kafka).
//   - ssl.enabled.protocols: TLSv1.2 and/or TLSv1.3 (default both); older
//     versions are refused.
//   - ssl.cipher.suites: Go's cipher suite names (IANA names, as Kafka
//     takes them); TLS 1.3 suites are not configurable in Go.
//   - ssl.principal.mapping.rules (PrincipalRules).
//
// Certificates are read once, at start: no reload.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
)

// ListenerTLS is what a TLS listener's connections need.
type ListenerTLS struct {
	// Config is the server configuration (crypto/tls), shared by every
	// connection of the listener.
	Config *tls.Config
	// Rules are the listener's ssl.principal.mapping.rules.
	Rules PrincipalRules
}

// tlsProps reads listener l's TLS settings, the per-listener key first.
type tlsProps struct {
	props  map[string]string
	get    func(string) string
	prefix string
}

// value returns the key's value and the name it was read under.
func (p tlsProps) value(key string) (string, string) {
	if v, ok := p.props[p.prefix+key]; ok {
		return strings.TrimSpace(v), p.prefix + key
	}
	return strings.TrimSpace(p.get(key)), key
}

// parseTLS builds l.TLS from the properties.
func (l *Listener) parseTLS(props map[string]string, get func(string) string) error {
	p := tlsProps{props: props, get: get, prefix: "listener.name." + strings.ToLower(l.Name) + "."}
	t, err := buildListenerTLS(p, l.Protocol == ProtoSaslSSL)
	if err != nil {
		return fmt.Errorf("listener %s (%s): %w", l.Name, l.Protocol, err)
	}
	l.TLS = t
	return nil
}

func buildListenerTLS(p tlsProps, sasl bool) (*ListenerTLS, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	if v, k := p.value("ssl.keystore.type"); v != "" && !strings.EqualFold(v, "PEM") {
		return nil, fmt.Errorf("%s=%s: only PEM is supported", k, v)
	}
	cert, err := loadKeystore(p)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{cert}
	if v, k := p.value("ssl.truststore.type"); v != "" && !strings.EqualFold(v, "PEM") {
		return nil, fmt.Errorf("%s=%s: only PEM is supported", k, v)
	}
	if pool, err := loadTruststore(p); err != nil {
		return nil, err
	} else if pool != nil {
		cfg.ClientCAs = pool
	}
	clientAuth, k := p.value("ssl.client.auth")
	if sasl && k == "ssl.client.auth" {
		clientAuth = "" // KIP-684: SASL_SSL takes only the listener's own setting
	}
	switch v := clientAuth; strings.ToLower(v) {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("%s=%s: want none, requested or required", k, v)
	}
	if v, k := p.value("ssl.enabled.protocols"); v != "" {
		cfg.MinVersion, cfg.MaxVersion = 0, 0
		for _, e := range strings.Split(v, ",") {
			var ver uint16
			switch strings.TrimSpace(e) {
			case "":
				continue
			case "TLSv1.2":
				ver = tls.VersionTLS12
			case "TLSv1.3":
				ver = tls.VersionTLS13
			default:
				return nil, fmt.Errorf("%s=%s: protocol %q is not supported (TLSv1.2 and TLSv1.3 are)", k, v, strings.TrimSpace(e))
			}
			if cfg.MinVersion == 0 || ver < cfg.MinVersion {
				cfg.MinVersion = ver
			}
			cfg.MaxVersion = max(cfg.MaxVersion, ver)
		}
		if cfg.MinVersion == 0 {
			return nil, fmt.Errorf("%s is empty", k)
		}
	}
	if v, k := p.value("ssl.cipher.suites"); v != "" {
		byName := map[string]uint16{}
		for _, s := range tls.CipherSuites() {
			byName[s.Name] = s.ID
		}
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			id, ok := byName[e]
			if !ok {
				return nil, fmt.Errorf("%s: cipher suite %q is not supported by crypto/tls (or is insecure)", k, e)
			}
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	rulesV, k := p.value("ssl.principal.mapping.rules")
	rules, err := ParsePrincipalRules(rulesV)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	return &ListenerTLS{Config: cfg, Rules: rules}, nil
}

// loadKeystore reads the key and certificate chain: ssl.keystore.location,
// else ssl.keystore.key with ssl.keystore.certificate.chain.
func loadKeystore(p tlsProps) (tls.Certificate, error) {
	var keyPEM, chainPEM []byte
	if loc, k := p.value("ssl.keystore.location"); loc != "" {
		b, err := os.ReadFile(loc)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("cannot read %s: %w", k, err)
		}
		keyPEM, chainPEM = b, b // tls.X509KeyPair picks the blocks it needs
	} else {
		key, kk := p.value("ssl.keystore.key")
		chain, ck := p.value("ssl.keystore.certificate.chain")
		if key == "" || chain == "" {
			return tls.Certificate{}, fmt.Errorf("a TLS listener needs ssl.keystore.location, or both %s and %s", kk, ck)
		}
		keyPEM, chainPEM = []byte(key), []byte(chain)
	}
	if checkKeyEncrypted(keyPEM) {
		_, pk := p.value("ssl.key.password")
		return tls.Certificate{}, fmt.Errorf("the key store's private key is encrypted: encrypted keys (%s) are not supported, store the key unencrypted", pk)
	}
	cert, err := tls.X509KeyPair(chainPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("cannot load the key store (PEM private key and certificate chain): %w", err)
	}
	return cert, nil
}

// checkKeyEncrypted reports whether b holds an encrypted private key
// (PKCS#8 or legacy PEM encryption), which ssl.key.password would unlock.
func checkKeyEncrypted(b []byte) bool {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return false
		}
		if blk.Type == "ENCRYPTED PRIVATE KEY" || blk.Headers["Proc-Type"] == "4,ENCRYPTED" {
			return true
		}
	}
}

// loadTruststore reads ssl.truststore.location or
// ssl.truststore.certificates; nil when neither is set.
func loadTruststore(p tlsProps) (*x509.CertPool, error) {
	var b []byte
	k := ""
	if loc, lk := p.value("ssl.truststore.location"); loc != "" {
		var err error
		if b, err = os.ReadFile(loc); err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", lk, err)
		}
		k = lk
	} else if certs, ck := p.value("ssl.truststore.certificates"); certs != "" {
		b, k = []byte(certs), ck
	} else {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", k)
	}
	return pool, nil
}

// SubjectDN is a certificate subject in RFC 2253 form, most specific
// attribute first ("CN=client,OU=x,O=org"), as Kafka's principal builder
// sees it (X500Principal.getName()).
func SubjectDN(c *x509.Certificate) string { return c.Subject.String() }

// Principal is the principal name of a TLS connection: the mapped subject
// of its verified client certificate; ok is false without one (the
// connection is then User:ANONYMOUS, as Kafka's SSL listeners without
// client authentication).
func (t *ListenerTLS) Principal(st tls.ConnectionState) (name string, ok bool, err error) {
	if len(st.PeerCertificates) == 0 {
		return "", false, nil
	}
	name, err = t.Rules.Map(SubjectDN(st.PeerCertificates[0]))
	return name, err == nil, err
}
