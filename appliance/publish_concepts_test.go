package appliance

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/quota"
	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// scramListener is the SASL listener the login checks' connections are
// accepted on.
var scramListener = &Listener{Name: "SASL_PLAINTEXT", Protocol: protoSaslPlaintext, Mechanisms: []string{mechScramSHA256, mechScramSHA512}}

// scramLogin runs a whole SCRAM exchange (SaslHandshake, SaslAuthenticate
// until done) for user and pass against b's handlers, with franz-go's
// client side, and reports whether it authenticated the connection as
// user.
func scramLogin(t *testing.T, b *Broker, mech, user, pass string) bool {
	t.Helper()
	run := func(key int16, version int16, req kmsg.Request, c *conn) kmsg.Response {
		a, ok := b.front.apis.Lookup(key)
		if !ok {
			t.Fatalf("API key %d not registered", key)
		}
		req.SetVersion(version)
		out := a.Handle(&wire.Request{Conn: c, Key: key, Version: version, Req: req})
		if rc, ok := out.(wire.RespondAndClose); ok {
			return rc.Resp
		}
		return out.(kmsg.Response)
	}
	c := &conn{remote: "10.0.0.1:4000"}
	c.setListener(scramListener)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech
	if r := run(17, 1, hs, c).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake %s: code %d", mech, r.ErrorCode)
	}
	a := scram.Auth{User: user, Pass: pass}
	m := a.AsSha256Mechanism()
	if mech == mechScramSHA512 {
		m = a.AsSha512Mechanism()
	}
	sess, msg, err := m.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 { // SCRAM is two round trips
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = msg
		r := run(36, 2, req, c).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			return false
		}
		done, next, err := sess.Challenge(r.SASLAuthBytes)
		if err != nil {
			return false
		}
		if done {
			return c.Principal() == "User:"+user
		}
		msg = next
	}
	t.Fatalf("SCRAM exchange for %s did not end", user)
	return false
}

// securityObservation is what a node's listener-built tables answer, as
// one comparable string: the authorizer's decisions for a few principals
// and resources, SCRAM logins with right and wrong passwords, the quota
// limits that apply to a few clients, and the next producer id.
func securityObservation(t *testing.T, b *Broker) string {
	t.Helper()
	var sb strings.Builder
	for _, p := range []string{"User:alice", "User:bob", "User:carol"} {
		r := &wire.Request{Conn: &conn{user: p, remote: "10.0.0.1:4000"}}
		for _, rs := range []struct {
			rt   kmsg.ACLResourceType
			name string
		}{{aclResTopic, "orders-1"}, {aclResTopic, "orders-x"}, {aclResGroup, "g"}, {aclResTopic, "other"}} {
			for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe} {
				fmt.Fprint(&sb, map[bool]int{false: 0, true: 1}[b.authorize(r, op, rs.rt, rs.name)])
			}
		}
		sb.WriteByte(' ')
	}
	for _, l := range []struct{ mech, user, pass string }{
		{mechScramSHA256, "alice", "pw-alice"}, {mechScramSHA512, "bob", "pw-bob"}, {mechScramSHA512, "bob", "pw-bob-2"},
		{mechScramSHA256, "alice", "wrong"}, {mechScramSHA256, "bob", "pw-bob"},
	} {
		fmt.Fprintf(&sb, "login %s/%s/%s=%v ", l.user, l.pass, l.mech, scramLogin(t, b, l.mech, l.user, l.pass))
	}
	vals := b.quotas.Values()
	for _, u := range []struct{ user, client string }{{"alice", "c"}, {"bob", "c"}, {"bob", "d"}} {
		for _, key := range []string{quota.ProducerByteRate, quota.ConsumerByteRate} {
			limit, _, ok := vals.Resolve(key, u.user, u.client)
			fmt.Fprintf(&sb, "%s/%s/%s=%v/%g ", u.user, u.client, key, ok, limit)
		}
	}
	fmt.Fprintf(&sb, "kinds=%b next-pid=%d", b.quotas.Kinds(), b.currentImage().NextProducerID)
	return sb.String()
}

// scramUpsert is an AlterUserScramCredentials upsertion of user's
// password for mech (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
func scramUpsert(t *testing.T, user, pass string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	t.Helper()
	h, size := func() hash.Hash { return sha256.New() }, sha256.Size
	if mech == security.ScramSHA512 {
		h, size = func() hash.Hash { return sha512.New() }, sha512.Size
	}
	salt := []byte("salt-" + user)
	salted, err := pbkdf2.Key(h, pass, salt, 4096, size)
	if err != nil {
		t.Fatal(err)
	}
	return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: user, Mechanism: mech, Iterations: 4096, Salt: salt, SaltedPassword: salted}
}

// TestReplayedSecurityRecordsDriveTables: the authorizer's ACL set, the
// SCRAM credentials and the quota table are rebuilt by the records'
// published deltas, not by the code that proposed them nor when they are
// read. Node A changes ACLs, SCRAM credentials, client quotas and
// producer ids through its handlers, noting after each change what its
// tables answer (securityObservation); node B, a fresh node with its own
// metadata log, is fed A's committed batches one by one, as records
// replicated by a quorum would reach it, and after every batch that ends
// one of A's changes answers exactly as A did then; a restart of B from
// its own log answers as A did last, and hands out producer ids after A's.
func TestReplayedSecurityRecordsDriveTables(t *testing.T) {
	props := map[string]string{"super.users": "User:ANONYMOUS", "offsets.topic.num.partitions": "2"}
	a := aclBroker(t, t.TempDir(), props)
	seen := map[int64]string{} // A's observations by the offset of the batch that made them
	note := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		seen[a.currentImage().Offset] = securityObservation(t, a)
	}
	user := func(name string) []kmsg.AlterClientQuotasRequestEntryEntity {
		return []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: strp(name)}}
	}
	alterQuotas := func(ent []kmsg.AlterClientQuotasRequestEntryEntity, key string, v float64, remove bool) error {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: ent, Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: key, Value: v, Remove: remove}}}}
		if r := adminRun(t, a, req, 1).(*kmsg.AlterClientQuotasResponse); r.Entries[0].ErrorCode != 0 {
			return fmt.Errorf("code %d: %v", r.Entries[0].ErrorCode, r.Entries[0].ErrorMessage)
		}
		return nil
	}
	alterScram := func(dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) error {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions, req.Upsertions = dels, ups
		for _, r := range adminRun(t, a, req, 0).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			if r.ErrorCode != 0 {
				return fmt.Errorf("user %s: code %d", r.User, r.ErrorCode)
			}
		}
		return nil
	}
	denyBob := bind(tTopic, "orders-x", pLit, "User:bob", "*", opWrite, deny)
	empty := securityObservation(t, a)
	note("ACLs", commitACLs(a, bind(tTopic, "orders", pPre, "User:alice", "*", opRead, allow),
		bind(tTopic, "orders", pPre, "User:bob", "*", opAll, allow), denyBob, bind(tGroup, "g", pLit, "User:alice", "*", opAll, allow)))
	note("SCRAM", alterScram(nil, scramUpsert(t, "alice", "pw-alice", security.ScramSHA256), scramUpsert(t, "bob", "pw-bob", security.ScramSHA512)))
	note("quota alice", alterQuotas(user("alice"), quota.ProducerByteRate, 1000, false))
	note("quota client c", alterQuotas([]kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: strp("c")}}, quota.ConsumerByteRate, 2000, false))
	pid, err := a.newProducerID()
	note("producer ids", err)
	id, ok := aclLookup(a.currentImage(), denyBob)
	if !ok {
		t.Fatal("bob's DENY binding is not in A's image")
	}
	note("delete ACL", securityBroker{a}.Change(func(security.View) []security.Record {
		return []security.Record{{RemoveACL: &security.RemoveAccessControlEntryRecord{ID: security.ACLID(id)}}}
	}))
	note("SCRAM change", alterScram([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: security.ScramSHA256}},
		scramUpsert(t, "bob", "pw-bob-2", security.ScramSHA512)))
	note("quota removal", alterQuotas(user("alice"), quota.ProducerByteRate, 0, true))
	note("default user quota", alterQuotas([]kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user"}}, quota.ProducerByteRate, 500, false))

	// What A's tables answered must have changed with the records: without
	// the publish step they would answer as an empty node.
	for _, want := range []string{"101101111000 111101000000 ", "login alice/pw-alice/SCRAM-SHA-256=true", "alice/c/producer_byte_rate=true/1000", "kinds=11"} {
		found := false
		for _, obs := range seen {
			found = found || strings.Contains(obs, want)
		}
		if !found || strings.Contains(empty, want) {
			t.Fatalf("no observation of A shows %q (empty node: %s)", want, empty)
		}
	}
	final := securityObservation(t, a)
	// alice: READ (so DESCRIBE) on orders*, everything on group g; bob:
	// everything on orders*, his DENY on orders-x removed; carol nothing.
	if !strings.HasPrefix(final, "101101111000 111111000000 000000000000 ") || !strings.Contains(final, "login bob/pw-bob-2/SCRAM-SHA-512=true") ||
		!strings.Contains(final, "bob/d/producer_byte_rate=true/500") {
		t.Fatalf("A's final tables: %s", final)
	}
	aDir := a.cfg.LogDir
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// A's committed batches, in order.
	src, _, err := openMetadataLog(aDir, a.log)
	if err != nil {
		t.Fatal(err)
	}
	type batch struct {
		last int64
		recs []MetadataRecord
	}
	var batches []batch
	if _, err := src.ReplayBatches(emptyImage(), func(last int64, recs []MetadataRecord) error {
		batches = append(batches, batch{last, recs})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	src.Close()

	b := adminTestBroker(t, map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users": "User:ANONYMOUS", "offsets.topic.num.partitions": "2"})
	meta, im, err := openMetadataLog(b.cfg.LogDir, b.log)
	if err != nil {
		t.Fatal(err)
	}
	b.ctl.meta = meta
	b.ctl.image.Store(im)
	if got := securityObservation(t, b); got != empty {
		t.Fatalf("fresh node B answers\n%s\nA answered\n%s", got, empty)
	}
	compared := 0
	for i, bt := range batches {
		if err := b.applyCommitted(bt.recs); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if off := b.currentImage().Offset; off != bt.last {
			t.Fatalf("batch %d: B's image is at offset %d, A's batch ended at %d", i, off, bt.last)
		}
		want, ok := seen[bt.last]
		if !ok {
			continue // a batch that is not one of the noted changes (topics)
		}
		if got := securityObservation(t, b); got != want {
			t.Fatalf("after batch %d (offset %d) node B answers\n%s\nA answered\n%s", i, bt.last, got, want)
		}
		compared++
	}
	if compared != len(seen) {
		t.Fatalf("compared %d of A's %d observations: A's changes and its batches do not line up", compared, len(seen))
	}
	if err := b.closePartitions(); err != nil {
		t.Fatal(err)
	}
	if err := b.ctl.meta.Close(); err != nil {
		t.Fatal(err)
	}
	b.ctl.meta = nil

	// A restart of B replays B's own log through the same publisher.
	b2 := aclBroker(t, b.cfg.LogDir, props)
	if got := securityObservation(t, b2); got != final {
		t.Fatalf("after restart B answers\n%s\nA answered\n%s", got, final)
	}
	next, err := b2.newProducerID()
	if err != nil || next <= pid {
		t.Fatalf("B's first producer id after restart is %d (%v), A handed out %d", next, err, pid)
	}
}
