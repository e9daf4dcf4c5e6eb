package appliance

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and
// localhost and client certificates CN=client,OU=x and CN=admin,OU=x.
type testPKI struct {
	caPEM                []byte
	serverKey, serverCrt []byte          // PEM
	client, admin        tls.Certificate // CN=client,OU=x; CN=admin,OU=x
	pool                 *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ringbroker test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, subj pkix.Name, usage x509.ExtKeyUsage, server bool) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: subj, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if server {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			tmpl.DNSNames = []string{"localhost"}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), k
	}
	p := &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	crt, k := issue(2, pkix.Name{CommonName: "broker"}, x509.ExtKeyUsageServerAuth, true)
	p.serverKey, p.serverCrt = keyPEM(k), crt
	crt, k = issue(3, pkix.Name{CommonName: "client", OrganizationalUnit: []string{"x"}}, x509.ExtKeyUsageClientAuth, false)
	if p.client, err = tls.X509KeyPair(crt, keyPEM(k)); err != nil {
		t.Fatal(err)
	}
	crt, k = issue(4, pkix.Name{CommonName: "admin", OrganizationalUnit: []string{"x"}}, x509.ExtKeyUsageClientAuth, false)
	if p.admin, err = tls.X509KeyPair(crt, keyPEM(k)); err != nil {
		t.Fatal(err)
	}
	return p
}

// syncBuf is a log destination tests read while the broker writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTLSListeners serves PLAINTEXT, SSL (key store file), MTLS:SSL with
// ssl.client.auth=required and a principal mapping rule (inline key
// store, per-listener settings) and SASL_SSL (SCRAM-SHA-512) on each
// engine, and drives them with franz-go, kcat and raw sockets.
func TestTLSListeners(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("starts brokers")
	}
	pki := newTestPKI(t)
	dir := t.TempDir()
	keystore := filepath.Join(dir, "broker.pem")
	if err := os.WriteFile(keystore, append(append([]byte{}, pki.serverKey...), pki.serverCrt...), 0o600); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pki.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, engine := range fixtureEngines() {
		t.Run(engine, func(t *testing.T) {
			logs := &syncBuf{}
			p := map[string]string{
				"io.engine": engine, "log.dirs": t.TempDir(), "shards": "2", "offsets.topic.num.partitions": "2", "metrics.listener": "none",
				"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
				"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
				"ssl.keystore.type":              "PEM",
				"ssl.keystore.location":          keystore,
				"ssl.truststore.type":            "PEM",
				"ssl.truststore.location":        caFile,
				"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
				// MTLS: the key store inline, client certificates required.
				"listener.name.mtls.ssl.keystore.location":          "",
				"listener.name.mtls.ssl.keystore.key":               string(pki.serverKey),
				"listener.name.mtls.ssl.keystore.certificate.chain": string(pki.serverCrt),
				"listener.name.mtls.ssl.truststore.certificates":    string(pki.caPEM),
				"listener.name.mtls.ssl.client.auth":                "required",
				"listener.name.mtls.ssl.principal.mapping.rules":    "RULE:^CN=([a-z]+),.*$/$1/,DEFAULT",
				"listener.name.mtls.ssl.enabled.protocols":          "TLSv1.3",
				"authorizer.class.name":                             "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
				"allow.everyone.if.no.acl.found":                    "true",
				"super.users":                                       "User:admin",
			}
			cfg, err := ConfigFromProperties(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			addr := func(i int) string {
				l := b.cfg.Listeners[i]
				return net.JoinHostPort(l.AdvertisedHost, strconv.Itoa(int(l.AdvertisedPort)))
			}
			plainAddr, sslAddr, mtlsAddr, saslAddr := addr(0), addr(1), addr(2), addr(3)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			client := func(seed string, opts ...kgo.Opt) *kgo.Client {
				cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.RequestRetries(2), kgo.RetryTimeout(5 * time.Second),
					kgo.ProducerLinger(0), kgo.DisableIdempotentWrite()}, opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cl.Close)
				return cl
			}
			tlsOpt := func(certs ...tls.Certificate) kgo.Opt {
				return kgo.DialTLSConfig(&tls.Config{RootCAs: pki.pool, Certificates: certs, MinVersion: tls.VersionTLS12})
			}
			adm := kadm.NewClient(client(plainAddr))
			for _, topic := range []string{"tls-t", "secured", "admin-only", "kcat-t"} {
				if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
					t.Fatal(err)
				}
			}
			roundTrip := func(t *testing.T, seed, key string, opts ...kgo.Opt) {
				t.Helper()
				cl := client(seed, opts...)
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tls-t", Key: []byte(key), Value: bytes.Repeat([]byte(key), 1000)}).FirstErr(); err != nil {
					t.Fatalf("produce over %s: %v", seed, err)
				}
				cc := client(seed, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tls-t": {0: kgo.NewOffset().AtStart()}}))...)
				for seen := false; !seen; {
					fs := cc.PollFetches(ctx)
					if err := ctx.Err(); err != nil {
						t.Fatalf("consume over %s: record %s not seen", seed, key)
					}
					fs.EachRecord(func(r *kgo.Record) {
						seen = seen || string(r.Key) == key && len(r.Value) == 1000*len(key)
					})
				}
			}

			t.Run("SSL", func(t *testing.T) { roundTrip(t, sslAddr, "ssl", tlsOpt()) })
			t.Run("mTLS", func(t *testing.T) {
				roundTrip(t, mtlsAddr, "mtls", tlsOpt(pki.client))
				// Without a client certificate: refused, and logged.
				if err := client(mtlsAddr, tlsOpt(), kgo.RequestRetries(0)).Ping(ctx); err == nil {
					t.Fatal("a client without a certificate was served on the MTLS listener")
				}
				waitFor(t, 10*time.Second, "a log line for the refused handshake", func() bool {
					return strings.Contains(logs.String(), "TLS handshake on listener MTLS failed")
				})
				// TLS 1.2 is not enabled on MTLS.
				if err := client(mtlsAddr, kgo.DialTLSConfig(&tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client},
					MaxVersion: tls.VersionTLS12}), kgo.RequestRetries(0)).Ping(ctx); err == nil {
					t.Fatal("TLS 1.2 served on a TLSv1.3-only listener")
				}
				// An ACL on User:client (the mapped principal) opens
				// "secured" to the mTLS client only.
				rs, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:client").Topics("secured").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
				if err != nil || rs[0].Err != nil {
					t.Fatalf("CreateACLs: %v %v", err, rs)
				}
				rec := func() *kgo.Record { return &kgo.Record{Topic: "secured", Value: []byte("v")} }
				waitFor(t, 10*time.Second, "the ACL to deny the SSL (anonymous) client", func() bool {
					err := client(sslAddr, tlsOpt(), kgo.RequestRetries(0)).ProduceSync(ctx, rec()).FirstErr()
					return errors.Is(err, kerr.TopicAuthorizationFailed)
				})
				if err := client(mtlsAddr, tlsOpt(pki.client)).ProduceSync(ctx, rec()).FirstErr(); err != nil {
					t.Fatalf("User:client over mTLS, allowed by its ACL: %v", err)
				}
				// "admin-only" allows User:nobody only: User:client is
				// denied, User:admin (super.users) is not.
				rs, err = adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:nobody").Topics("admin-only").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
				if err != nil || rs[0].Err != nil {
					t.Fatalf("CreateACLs: %v %v", err, rs)
				}
				admRec := func() *kgo.Record { return &kgo.Record{Topic: "admin-only", Value: []byte("v")} }
				waitFor(t, 10*time.Second, "the ACL to deny User:client", func() bool {
					err := client(mtlsAddr, tlsOpt(pki.client), kgo.RequestRetries(0)).ProduceSync(ctx, admRec()).FirstErr()
					return errors.Is(err, kerr.TopicAuthorizationFailed)
				})
				if err := client(mtlsAddr, tlsOpt(pki.admin)).ProduceSync(ctx, admRec()).FirstErr(); err != nil {
					t.Fatalf("User:admin (super.users) over mTLS: %v", err)
				}
			})
			t.Run("SASL_SSL", func(t *testing.T) {
				res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-512"}})
				if err != nil || res["alice"].Err != nil {
					t.Fatalf("AlterUserSCRAMs: %v %v", err, res["alice"].Err)
				}
				roundTrip(t, saslAddr, "sasl", tlsOpt(), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism()))
				err = client(saslAddr, tlsOpt(), kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism())).Ping(ctx)
				if !errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Errorf("wrong password over SASL_SSL: %v, want SASL_AUTHENTICATION_FAILED", err)
				}
				// Without SASL, a request other than ApiVersions closes.
				conn, err := tls.Dial("tcp", saslAddr, &tls.Config{RootCAs: pki.pool})
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := tlsRawRequest(conn, kmsg.NewPtrMetadataRequest()); err == nil {
					t.Error("Metadata before SASL authentication was answered")
				}
			})
			t.Run("not-TLS", func(t *testing.T) {
				mr := kmsg.NewPtrApiVersionsRequest()
				mr.Version = 3
				for _, in := range [][]byte{rawFrame(mr), []byte("GET / HTTP/1.1\r\n\r\n"), {0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5}} {
					c, err := net.Dial("tcp", sslAddr)
					if err != nil {
						t.Fatal(err)
					}
					_ = c.SetDeadline(time.Now().Add(15 * time.Second))
					if _, err := c.Write(in); err != nil {
						t.Fatal(err)
					}
					got, err := io.ReadAll(c)
					c.Close()
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						t.Fatalf("%q to a TLS port: connection still open after 15 s", in)
					}
					if len(got) >= 8 && binary.BigEndian.Uint32(got) == uint32(len(got)-4) {
						t.Fatalf("%q to a TLS port: answered with a Kafka frame %x", in, got)
					}
				}
				waitFor(t, 10*time.Second, "a log line for the plaintext request", func() bool {
					return strings.Contains(logs.String(), "TLS handshake on listener SSL failed")
				})
				roundTrip(t, sslAddr, "after-garbage", tlsOpt()) // still serving
			})
			t.Run("kcat", func(t *testing.T) {
				kcat, err := exec.LookPath("kcat")
				if err != nil {
					t.Skip("kcat not installed")
				}
				args := []string{"-b", sslAddr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + caFile}
				run := func(stdin string, extra ...string) string {
					cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
					defer ccancel()
					cmd := exec.CommandContext(cctx, kcat, append(append([]string{}, args...), extra...)...)
					cmd.Stdin = strings.NewReader(stdin)
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("kcat %v: %v\n%s", extra, err, out)
					}
					return string(out)
				}
				var lines []string
				for i := range 50 {
					lines = append(lines, fmt.Sprintf("kcat-%d", i))
				}
				run(strings.Join(lines, "\n")+"\n", "-P", "-t", "kcat-t")
				out := run("", "-C", "-t", "kcat-t", "-o", "beginning", "-e", "-q")
				if got := strings.Fields(out); strings.Join(got, ",") != strings.Join(lines, ",") {
					t.Fatalf("kcat consumed %d records over SSL, want %d:\n%s", len(got), len(lines), out)
				}
			})
		})
	}
}

// rawFrame is req as a request frame (client id "t").
func rawFrame(req kmsg.Request) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, 1)
	body = binary.BigEndian.AppendUint16(body, 1)
	body = append(body, 't')
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// tlsRawRequest writes req on c and reads one response frame.
func tlsRawRequest(c net.Conn, req kmsg.Request) ([]byte, error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(rawFrame(req)); err != nil {
		return nil, err
	}
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return nil, err
	}
	resp := make([]byte, binary.BigEndian.Uint32(h[:]))
	_, err := io.ReadFull(c, resp)
	return resp, err
}

// waitFor polls cond every 20 ms until it holds, failing t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}
