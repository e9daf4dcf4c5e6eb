package integration

// SASL_PLAINTEXT listeners (KIP-43, KIP-84, KIP-152): a broker with a
// PLAINTEXT and a SASL_PLAINTEXT listener; franz-go produces and consumes
// over SASL with PLAIN (users from the listener's JAAS property) and
// SCRAM-SHA-256/512 (credentials created with kadm on the PLAINTEXT
// listener); a wrong password fails with SASL_AUTHENTICATION_FAILED; a
// request before authentication closes the connection; Metadata answers
// each listener's own advertised port; and the ACL authorizer sees the
// SASL principal User:alice while PLAINTEXT clients stay User:ANONYMOUS.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// rawRequest writes req (its version set) as one frame on c and returns the
// response body, or the read error (io.EOF when the broker closed).
func rawRequest(c net.Conn, req kmsg.Request, corrID int32) ([]byte, error) {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corrID))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(append(frame, body...)); err != nil {
		return nil, err
	}
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return nil, err
	}
	resp := make([]byte, binary.BigEndian.Uint32(h[:]))
	if _, err := io.ReadFull(c, resp); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(resp)); got != corrID {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corrID)
	}
	return resp[4:], nil
}

func TestSASLListeners(t *testing.T) {
	saslPort := freePort(t)
	saslAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(saslPort))
	b := startBroker(t, "") // the port is known only after start: restart with the second listener
	plainAddr := b.Addr
	listeners := fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s", plainAddr, saslAddr)
	b.overrides = append(b.overrides,
		"listeners="+listeners, "advertised.listeners="+listeners,
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-plain" user_carol="carol-plain";`,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=true",
		"quota.window.num=2", "quota.window.size.seconds=1", // throttles of at most 2 s for user-quota
	)
	b.Restart()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := newAdmin(t, b)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-256"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-512"},
	})
	if err != nil || res["alice"].Err != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, res["alice"].Err)
	}
	createTopic(t, ctx, b, "sasl-t", 1)
	createTopic(t, ctx, b, "sasl-denied", 1)

	saslClient := func(m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(saslAddr), kgo.SASL(m), kgo.DisableIdempotentWrite(),
			kgo.RequestRetries(2), kgo.RetryTimeout(5 * time.Second), kgo.ProducerLinger(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	mechs := []struct {
		name   string
		m, bad sasl.Mechanism
	}{
		{"PLAIN", plain.Auth{User: "alice", Pass: "alice-plain"}.AsMechanism(), plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()},
		{"SCRAM-SHA-256", scram.Auth{User: "alice", Pass: "alice-256"}.AsSha256Mechanism(), scram.Auth{User: "alice", Pass: "alice-512"}.AsSha256Mechanism()},
		{"SCRAM-SHA-512", scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism(), scram.Auth{User: "nobody", Pass: "x"}.AsSha512Mechanism()},
	}
	for i, mc := range mechs {
		t.Run(mc.name, func(t *testing.T) {
			cl := saslClient(mc.m)
			// Metadata on the SASL listener advertises the SASL port.
			md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			if err != nil || len(md.Brokers) != 1 || md.Brokers[0].Port != int32(saslPort) {
				t.Fatalf("Metadata over SASL: %v %+v, want port %d", err, md.Brokers, saslPort)
			}
			key := fmt.Sprintf("k%d", i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl-t", Key: []byte(key), Value: []byte(mc.name)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			cc := saslClient(mc.m, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"sasl-t": {0: kgo.NewOffset().At(int64(i))}}))
			got := consumeN(t, ctx, cc, 1, 10*time.Second)
			if string(got[0].Key) != key || string(got[0].Value) != mc.name {
				t.Errorf("consumed %q=%q, want %q=%q", got[0].Key, got[0].Value, key, mc.name)
			}
			bad := saslClient(mc.bad)
			if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("wrong credentials: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}

	t.Run("before-auth", func(t *testing.T) {
		c, err := net.Dial("tcp", saslAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// ApiVersions passes; Metadata before authentication closes.
		if _, err := rawRequest(c, kmsg.NewPtrApiVersionsRequest(), 1); err != nil {
			t.Fatalf("ApiVersions before authentication: %v", err)
		}
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 1
		if body, err := rawRequest(c, md, 2); err == nil {
			t.Fatalf("Metadata before authentication answered %d bytes, want the connection closed", len(body))
		}
		// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM, the enabled
		// ones, then the connection closes.
		c2, err := net.Dial("tcp", saslAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "GSSAPI"
		body, err := rawRequest(c2, hs, 3)
		if err != nil {
			t.Fatalf("SaslHandshake: %v", err)
		}
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code ||
			fmt.Sprint(resp.SupportedMechanisms) != "[PLAIN SCRAM-SHA-256 SCRAM-SHA-512]" {
			t.Errorf("SaslHandshake GSSAPI: %v %+v", err, resp)
		}
		if _, err := rawRequest(c2, kmsg.NewPtrApiVersionsRequest(), 4); err == nil {
			t.Errorf("connection still open after UNSUPPORTED_SASL_MECHANISM")
		}
	})

	t.Run("acl-principal", func(t *testing.T) {
		// Everyone may write, but alice: DENY wins over ALLOW.
		for _, bd := range []*kadm.ACLBuilder{
			kadm.NewACLs().Allow("User:*").Topics("sasl-denied").Operations(kadm.OpWrite),
			kadm.NewACLs().Deny("User:alice").Topics("sasl-denied").Operations(kadm.OpWrite),
		} {
			acl, err := adm.CreateACLs(ctx, bd)
			if err != nil || acl[0].Err != nil {
				t.Fatalf("CreateACLs: %v %v", err, acl)
			}
		}
		alice := saslClient(mechs[1].m)
		err = alice.ProduceSync(ctx, &kgo.Record{Topic: "sasl-denied", Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("alice's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		anon := newClient(t, b, kgo.ProducerLinger(0))
		if err := anon.ProduceSync(ctx, &kgo.Record{Topic: "sasl-denied", Value: []byte("x")}).FirstErr(); err != nil {
			t.Errorf("ANONYMOUS's produce: %v", err)
		}
		// carol (PLAIN) is not denied.
		carol := saslClient(plain.Auth{User: "carol", Pass: "carol-plain"}.AsMechanism())
		if err := carol.ProduceSync(ctx, &kgo.Record{Topic: "sasl-denied", Value: []byte("x")}).FirstErr(); err != nil {
			t.Errorf("carol's produce: %v", err)
		}
	})

	// Before authentication a frame may be at most
	// sasl.server.max.receive.size (512 KiB): a 1 MiB size prefix closes the
	// connection before the broker buffers it.
	t.Run("preauth-frame-cap", func(t *testing.T) {
		c, err := net.Dial("tcp", saslAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hdr := binary.BigEndian.AppendUint32(nil, 1<<20)
		if _, err := c.Write(append(hdr, make([]byte, 1024)...)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 16)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("1 MiB frame before authentication: read %d bytes, err %v; want the connection closed", n, err)
		}
	})

	// librdkafka (kcat) lists ApiVersions before its handshake, wants
	// SaslHandshake v0 listed, and sends SCRAM's client-final nonce with its
	// client nonce in front of the server-first nonce.
	t.Run("kcat", func(t *testing.T) {
		kcat := needTool(t, "kcat", "-V")
		run := func(stdin string, args ...string) (string, error) {
			cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
			defer ccancel()
			cmd := exec.CommandContext(cctx, kcat, append([]string{"-b", saslAddr, "-X", "security.protocol=SASL_PLAINTEXT"}, args...)...)
			cmd.Stdin = strings.NewReader(stdin)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		for _, m := range []struct{ mech, pass string }{{"PLAIN", "alice-plain"}, {"SCRAM-SHA-256", "alice-256"}, {"SCRAM-SHA-512", "alice-512"}} {
			auth := []string{"-X", "sasl.mechanisms=" + m.mech, "-X", "sasl.username=alice", "-X", "sasl.password=" + m.pass}
			if out, err := run("v-"+m.mech+"\n", append(auth, "-P", "-t", "sasl-t", "-k", "kc-"+m.mech)...); err != nil {
				t.Fatalf("kcat -P with %s: %v\n%s", m.mech, err, out)
			}
			out, err := run("", append(auth, "-C", "-t", "sasl-t", "-e", "-q", "-f", "%k=%s\n")...)
			if err != nil || !strings.Contains(out, "kc-"+m.mech+"=v-"+m.mech) {
				t.Fatalf("kcat -C with %s: %v\n%s", m.mech, err, out)
			}
		}
		// A wrong password fails with an authentication error (kcat then
		// waits out -m seconds for metadata).
		bad := []string{"-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password=wrong", "-m", "2", "-L"}
		if out, err := run("", bad...); err == nil || !strings.Contains(strings.ToLower(out), "authentication") {
			t.Errorf("kcat -L with a wrong SCRAM-SHA-256 password: %v\n%s", err, out)
		}
	})

	// Quotas resolve with the authenticated user: a producer_byte_rate for
	// user carol throttles carol, not ANONYMOUS with the same client id.
	t.Run("user-quota", func(t *testing.T) {
		rate := 1024.0
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
			Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr("carol")}},
			Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}},
		}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("AlterClientQuotas: %v %v", err, res)
		}
		throttled := func(cl *kgo.Client, hook *throttleHook) time.Duration {
			t.Helper()
			big := make([]byte, 32<<10)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl-t", Value: big}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			return time.Duration(hook.total.Load())
		}
		ch := &throttleHook{}
		carol := saslClient(plain.Auth{User: "carol", Pass: "carol-plain"}.AsMechanism(), kgo.WithHooks(ch), kgo.ClientID("q"),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		ah := &throttleHook{}
		anon := newClient(t, b, kgo.WithHooks(ah), kgo.ClientID("q"), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if d := throttled(anon, ah); d != 0 {
			t.Errorf("ANONYMOUS was throttled %v by carol's quota", d)
		}
		if d := throttled(carol, ch); d == 0 {
			t.Errorf("carol's 32 KiB produce at a %v B/s quota was not throttled", rate)
		}
	})
}
