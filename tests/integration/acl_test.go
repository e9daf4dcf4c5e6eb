package integration

// ACLs with the built-in authorizer (authorizer.class.name naming Kafka's
// standard authorizer): franz-go's kadm creates, describes and deletes
// bindings, they survive a restart, and real clients meet them: a DENY WRITE
// fails a produce with TOPIC_AUTHORIZATION_FAILED, a DENY READ on a group
// fails a group consumer with GROUP_AUTHORIZATION_FAILED. Without an
// authorizer the ACL APIs answer SECURITY_DISABLED.

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const anonymous = "User:ANONYMOUS"

// describedACLs lists what a describe filter matched as "principal op name".
func describedACLs(t *testing.T, ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) []string {
	t.Helper()
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		t.Fatalf("DescribeACLs: %v", err)
	}
	var out []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("DescribeACLs filter: %v (%s)", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			out = append(out, d.Principal+" "+d.Operation.String()+" "+d.Name)
		}
	}
	sort.Strings(out)
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestACLAdminPersistAndEnforce(t *testing.T) {
	b := startBroker(t, "", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=true")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopic(t, ctx, b, "acl-open", 1)
	createTopic(t, ctx, b, "acl-closed", 1)
	adm := newAdmin(t, b)

	create := func(bd *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, bd)
		if err != nil {
			t.Fatalf("CreateACLs: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateACLs %s %s: %v (%s)", r.Principal, r.Name, r.Err, r.ErrMessage)
			}
		}
	}
	create(kadm.NewACLs().Deny(anonymous).Topics("acl-closed").Operations(kadm.OpWrite))
	create(kadm.NewACLs().Deny(anonymous).Groups("acl-denied-group").Operations(kadm.OpRead))
	// Every principal may write to (and so describe) acl-* topics; DENY wins over it.
	create(kadm.NewACLs().Allow("User:*").Topics("acl-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite, kadm.OpDescribe))

	// An invalid binding fails alone.
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("alice").Topics("x").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidRequest) {
		t.Fatalf("CreateACLs with principal %q: %v %+v, want INVALID_REQUEST", "alice", err, res)
	}

	anyFilter := func() *kadm.ACLBuilder {
		return kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	}
	all := []string{"User:* DESCRIBE acl-", "User:* WRITE acl-", "User:ANONYMOUS READ acl-denied-group", "User:ANONYMOUS WRITE acl-closed"}
	if got := describedACLs(t, ctx, adm, anyFilter()); !sameStrings(got, all) {
		t.Fatalf("DescribeACLs ANY = %q, want %q", got, all)
	}
	// MATCH finds the literal binding and the prefix that covers the name.
	match := kadm.NewACLs().Topics("acl-closed").Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternMatch)
	want := []string{"User:* DESCRIBE acl-", "User:* WRITE acl-", "User:ANONYMOUS WRITE acl-closed"}
	if got := describedACLs(t, ctx, adm, match); !sameStrings(got, want) {
		t.Fatalf("DescribeACLs MATCH acl-closed = %q, want %q", got, want)
	}

	// Enforcement with a real producer: the denied topic fails, the other works.
	cl := newClient(t, b, kgo.ProducerLinger(0))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "acl-open", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("produce to acl-open: %v", err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	err = cl.ProduceSync(pctx, &kgo.Record{Topic: "acl-closed", Value: []byte("no")}).FirstErr()
	pcancel()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to acl-closed: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// A group consumer of a group with DENY READ.
	cons := newClient(t, b, kgo.ConsumeTopics("acl-open"), kgo.ConsumerGroup("acl-denied-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	var groupErr error
	for groupErr == nil && gctx.Err() == nil {
		cons.PollFetches(gctx).EachError(func(_ string, _ int32, err error) {
			if groupErr == nil && !errors.Is(err, context.DeadlineExceeded) {
				groupErr = err
			}
		})
	}
	gcancel()
	if !errors.Is(groupErr, kerr.GroupAuthorizationFailed) {
		t.Fatalf("group consumer: %v, want GROUP_AUTHORIZATION_FAILED", groupErr)
	}

	// The bindings are metadata records: they survive a restart.
	b.Restart()
	adm = newAdmin(t, b)
	if got := describedACLs(t, ctx, adm, anyFilter()); !sameStrings(got, all) {
		t.Fatalf("after restart, DescribeACLs ANY = %q, want %q", got, all)
	}

	// Delete by filter: every DENY; the result lists what went.
	dres, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatalf("DeleteACLs: %v", err)
	}
	var deleted []string
	for _, r := range dres {
		if r.Err != nil {
			t.Fatalf("DeleteACLs filter: %v (%s)", r.Err, r.ErrMessage)
		}
		for _, d := range r.Deleted {
			deleted = append(deleted, d.Principal+" "+d.Operation.String()+" "+d.Name)
		}
	}
	sort.Strings(deleted)
	if want := all[2:]; !sameStrings(deleted, want) {
		t.Fatalf("DeleteACLs DENY deleted %q, want %q", deleted, want)
	}
	if got := describedACLs(t, ctx, adm, anyFilter()); !sameStrings(got, all[:2]) {
		t.Fatalf("after delete, DescribeACLs ANY = %q, want %q", got, all[:2])
	}
	// With the DENY gone, the topic takes writes again.
	if err := newClient(t, b).ProduceSync(ctx, &kgo.Record{Topic: "acl-closed", Value: []byte("now")}).FirstErr(); err != nil {
		t.Fatalf("produce to acl-closed after the DENY was deleted: %v", err)
	}
}

func TestACLSecurityDisabled(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := newAdmin(t, b)
	desc, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(desc) == 0 || !errors.Is(desc[0].Err, kerr.SecurityDisabled) {
		t.Errorf("DescribeACLs: %v %+v, want SECURITY_DISABLED", err, desc)
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:a").Topics("t").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Errorf("CreateACLs: %v %+v, want SECURITY_DISABLED", err, res)
	}
	dres, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(dres) == 0 || !errors.Is(dres[0].Err, kerr.SecurityDisabled) {
		t.Errorf("DeleteACLs: %v %+v, want SECURITY_DISABLED", err, dres)
	}
}
