package security

import (
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Short names for the codes the tables use.
const (
	tTopic, tGroup, tCluster, tTxn = int8(aclResTopic), int8(aclResGroup), int8(aclResCluster), int8(aclResTxnID)
	tDelegationToken               = int8(kmsg.ACLResourceTypeDelegationToken)
	pLit, pPre                     = int8(aclPatLiteral), int8(aclPatPrefixed)
	allow, deny                    = int8(aclPermAllow), int8(aclPermDeny)
	opAll, opRead, opWrite         = int8(kmsg.ACLOperationAll), int8(kmsg.ACLOperationRead), int8(kmsg.ACLOperationWrite)
	opDescribe, opAlter, opCreate  = int8(kmsg.ACLOperationDescribe), int8(kmsg.ACLOperationAlter), int8(kmsg.ACLOperationCreate)
	opAlterCfg, opDescribeCfg      = int8(kmsg.ACLOperationAlterConfigs), int8(kmsg.ACLOperationDescribeConfigs)
)

func bind(rt int8, name string, pt int8, principal, host string, op, perm int8) ACLBinding {
	return ACLBinding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

// aclSetOf builds the set of bindings bs, one AccessControlEntryRecord
// each, as the image's replay does; ACLs is the set.
func aclSetOf(t *testing.T, bs ...ACLBinding) struct{ ACLs *ACLSet } {
	t.Helper()
	ab := NewACLBuilder(nil)
	for _, b := range bs {
		if err := ab.Add(&AccessControlEntryRecord{ID: NewACLID(), ACLBinding: b}); err != nil {
			t.Fatal(err)
		}
	}
	return struct{ ACLs *ACLSet }{ab.Build()}
}

func TestAuthorizePrecedence(t *testing.T) {
	const alice, bob, anon = "User:alice", "User:bob", AnonymousPrincipal
	im := aclSetOf(t,
		bind(tTopic, "orders", pLit, alice, "*", opRead, allow),
		bind(tTopic, "orders", pLit, alice, "10.0.0.9", opRead, deny),
		bind(tTopic, "pay-", pPre, "User:*", "*", opWrite, allow),
		bind(tTopic, "pay-secret", pLit, bob, "*", opAll, deny),
		bind(tDelegationToken, "*", pLit, "User:ops", "*", opAll, allow),
		bind(tTopic, "cfg", pLit, alice, "*", opAlterCfg, allow),
		bind(tGroup, "g", pLit, anon, "*", opRead, deny),
		bind(tCluster, clusterResourceName, pLit, alice, "*", opCreate, allow),
	)
	type tc struct {
		name      string
		principal string
		host      string
		op        int8
		rt        int8
		res       string
		everyone  bool
		want      bool
	}
	cases := []tc{
		{"literal allow", alice, "10.0.0.1", opRead, tTopic, "orders", false, true},
		{"allow READ implies DESCRIBE", alice, "10.0.0.1", opDescribe, tTopic, "orders", false, true},
		{"allow READ does not give WRITE", alice, "10.0.0.1", opWrite, tTopic, "orders", false, false},
		{"deny on host wins", alice, "10.0.0.9", opRead, tTopic, "orders", false, false},
		{"deny READ does not deny DESCRIBE", alice, "10.0.0.9", opDescribe, tTopic, "orders", false, true},
		{"ACLs on the resource but none for the principal", bob, "10.0.0.1", opRead, tTopic, "orders", true, false},
		{"prefixed wildcard principal", bob, "1.2.3.4", opWrite, tTopic, "pay-in", false, true},
		{"prefixed WRITE implies DESCRIBE", anon, "1.2.3.4", opDescribe, tTopic, "pay-in", false, true},
		{"prefix does not cover shorter name", bob, "1.2.3.4", opWrite, tTopic, "pay", true, true},
		{"prefix does not cover shorter name, no everyone", bob, "1.2.3.4", opWrite, tTopic, "pay", false, false},
		{"deny ALL beats prefixed allow", bob, "1.2.3.4", opWrite, tTopic, "pay-secret", true, false},
		{"wildcard resource", "User:ops", "1.2.3.4", opAlter, tDelegationToken, "anything", false, true},
		{"a wildcard binding names every resource", bob, "1.2.3.4", opAlter, tDelegationToken, "anything", true, false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", alice, "h", opDescribeCfg, tTopic, "cfg", false, true},
		{"no ACL, everyone allowed", bob, "h", opRead, tTopic, "free", true, true},
		{"no ACL, default deny", bob, "h", opRead, tTopic, "free", false, false},
		{"group deny", anon, "h", opRead, tGroup, "g", true, false},
		{"other group free", anon, "h", opRead, tGroup, "g2", true, true},
		{"cluster create", alice, "h", opCreate, tCluster, clusterResourceName, false, true},
		{"cluster other op", alice, "h", opAlter, tCluster, clusterResourceName, true, false},
		{"transactional id untouched", anon, "h", opWrite, tTxn, "tx", true, true},
		{"super user beats deny", "User:root", "10.0.0.9", opRead, tTopic, "orders", false, true},
	}
	for _, c := range cases {
		a := &Authorizer{superUsers: map[string]bool{"User:root": true}, allowEveryone: c.everyone}
		got := a.authorize(im.ACLs, c.principal, c.host, kmsg.ACLOperation(c.op), kmsg.ACLResourceType(c.rt), c.res)
		if got != c.want {
			t.Errorf("%s: authorize(%s, %s, %d, %d, %q) = %v, want %v", c.name, c.principal, c.host, c.op, c.rt, c.res, got, c.want)
		}
	}
}

func TestAuthorizeAnyOfType(t *testing.T) {
	a := &Authorizer{superUsers: map[string]bool{}}
	anon := AnonymousPrincipal
	if a.authorizeAnyOfType(nil, anon, "h", kmsg.ACLOperationWrite, aclResTopic) {
		t.Error("no ACLs, allow.everyone false: allowed")
	}
	im := aclSetOf(t, bind(tTopic, "t", pLit, anon, "*", opWrite, allow))
	if !a.authorizeAnyOfType(im.ACLs, anon, "h", kmsg.ACLOperationWrite, aclResTopic) {
		t.Error("ALLOW WRITE on one topic: denied")
	}
	im = aclSetOf(t, bind(tTopic, "t", pLit, anon, "*", opWrite, allow), bind(tTopic, "t", pPre, anon, "*", opWrite, deny))
	if a.authorizeAnyOfType(im.ACLs, anon, "h", kmsg.ACLOperationWrite, aclResTopic) {
		t.Error("ALLOW WRITE covered by a DENY prefix: allowed")
	}
	a.allowEveryone = true
	im = aclSetOf(t, bind(tTopic, "*", pLit, anon, "*", opWrite, deny))
	if a.authorizeAnyOfType(im.ACLs, anon, "h", kmsg.ACLOperationWrite, aclResTopic) {
		t.Error("DENY WRITE on every topic: allowed")
	}
}

func TestAuthorizeDoesNotAllocate(t *testing.T) {
	var bs []ACLBinding
	for _, p := range []string{"a", "ab", "abc-", "orders-"} {
		bs = append(bs, bind(tTopic, p, pPre, "User:x", "*", opWrite, allow))
	}
	bs = append(bs, bind(tTopic, "orders-eu", pLit, AnonymousPrincipal, "*", opWrite, deny))
	im := aclSetOf(t, bs...)
	a := &Authorizer{superUsers: map[string]bool{"User:root": true}, allowEveryone: true}
	name := "orders-eu"
	n := testing.AllocsPerRun(1000, func() {
		if a.authorize(im.ACLs, AnonymousPrincipal, "127.0.0.1", kmsg.ACLOperationWrite, aclResTopic, name) {
			t.Fatal("allowed")
		}
	})
	if n != 0 {
		t.Errorf("authorize allocates %v times per call, want 0", n)
	}
}

func TestACLFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := bind(tTopic, "orders", pLit, "User:a", "*", opRead, allow)
	wild := bind(tTopic, "*", pLit, "User:a", "*", opRead, allow)
	pre := bind(tTopic, "ord", pPre, "User:a", "*", opRead, allow)
	grp := bind(tGroup, "orders", pLit, "User:a", "*", opRead, deny)
	all := []ACLBinding{lit, wild, pre, grp}
	any := ACLFilter{ResourceType: int8(aclResAny), PatternType: int8(aclPatAny), Operation: int8(aclOpAny), Permission: int8(aclPermAny)}
	cases := []struct {
		name string
		f    func(f ACLFilter) ACLFilter
		want []ACLBinding
	}{
		{"ANY", func(f ACLFilter) ACLFilter { return f }, all},
		{"topic", func(f ACLFilter) ACLFilter { f.ResourceType = tTopic; return f }, []ACLBinding{lit, wild, pre}},
		{"ANY name orders", func(f ACLFilter) ACLFilter { f.ResourceName = str("orders"); return f }, []ACLBinding{lit, grp}},
		{"MATCH orders", func(f ACLFilter) ACLFilter {
			f.ResourceType, f.PatternType, f.ResourceName = tTopic, int8(aclPatMatch), str("orders")
			return f
		}, []ACLBinding{lit, wild, pre}},
		{"MATCH other", func(f ACLFilter) ACLFilter {
			f.PatternType, f.ResourceName = int8(aclPatMatch), str("x")
			return f
		}, []ACLBinding{wild}},
		{"LITERAL", func(f ACLFilter) ACLFilter { f.PatternType = pLit; return f }, []ACLBinding{lit, wild, grp}},
		{"PREFIXED ord", func(f ACLFilter) ACLFilter { f.PatternType, f.ResourceName = pPre, str("ord"); return f }, []ACLBinding{pre}},
		{"PREFIXED orders", func(f ACLFilter) ACLFilter { f.PatternType, f.ResourceName = pPre, str("orders"); return f }, nil},
		{"DENY", func(f ACLFilter) ACLFilter { f.Permission = deny; return f }, []ACLBinding{grp}},
		{"principal", func(f ACLFilter) ACLFilter { f.Principal = str("User:b"); return f }, nil},
		{"host", func(f ACLFilter) ACLFilter { f.Host = str("*"); f.Operation = opRead; return f }, all},
		{"op", func(f ACLFilter) ACLFilter { f.Operation = opWrite; return f }, nil},
	}
	for _, c := range cases {
		f := c.f(any)
		var got []ACLBinding
		for _, b := range all {
			if f.Matches(b) {
				got = append(got, b)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
	if err := (ACLFilter{ResourceType: 0, PatternType: 1, Operation: 1, Permission: 1}).Validate(); err == nil {
		t.Error("UNKNOWN resource type in a filter accepted")
	}
}

func TestValidateACLBinding(t *testing.T) {
	ok := bind(tTopic, "t", pLit, "User:a", "*", opRead, allow)
	if err := ValidateBinding(ok); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(b *ACLBinding){
		"ANY resource":       func(b *ACLBinding) { b.ResourceType = int8(aclResAny) },
		"UNKNOWN resource":   func(b *ACLBinding) { b.ResourceType = 0 },
		"MATCH pattern":      func(b *ACLBinding) { b.PatternType = int8(aclPatMatch) },
		"ANY operation":      func(b *ACLBinding) { b.Operation = int8(aclOpAny) },
		"ANY permission":     func(b *ACLBinding) { b.Permission = int8(aclPermAny) },
		"principal no colon": func(b *ACLBinding) { b.Principal = "alice" },
		"principal no name":  func(b *ACLBinding) { b.Principal = "User:" },
		"empty name":         func(b *ACLBinding) { b.ResourceName = "" },
		"cluster name":       func(b *ACLBinding) { b.ResourceType = tCluster; b.ResourceName = "c" },
	}
	for name, mut := range bad {
		b := ok
		mut(&b)
		if err := ValidateBinding(b); err == nil || wire.ErrCode(err) != kerr.InvalidRequest.Code {
			t.Errorf("%s: %v, want INVALID_REQUEST", name, err)
		}
	}
}
