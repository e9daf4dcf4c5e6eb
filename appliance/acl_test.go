package appliance

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Short names for the codes the tables use.
const (
	tTopic, tGroup, tCluster, tTxn = int8(aclResTopic), int8(aclResGroup), int8(aclResCluster), int8(aclResTxnID)
	tDelegationToken               = int8(kmsg.ACLResourceTypeDelegationToken)
	pLit, pPre                     = int8(kmsg.ACLResourcePatternTypeLiteral), int8(kmsg.ACLResourcePatternTypePrefixed)
	allow, deny                    = int8(kmsg.ACLPermissionTypeAllow), int8(kmsg.ACLPermissionTypeDeny)
	opAll, opRead, opWrite         = int8(kmsg.ACLOperationAll), int8(kmsg.ACLOperationRead), int8(kmsg.ACLOperationWrite)
	opDescribe, opAlter, opCreate  = int8(kmsg.ACLOperationDescribe), int8(kmsg.ACLOperationAlter), int8(kmsg.ACLOperationCreate)
	opAlterCfg, opDescribeCfg      = int8(kmsg.ACLOperationAlterConfigs), int8(kmsg.ACLOperationDescribeConfigs)
)

func bind(rt int8, name string, pt int8, principal, host string, op, perm int8) ACLBinding {
	return ACLBinding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

// aclSetOf applies one AccessControlEntryRecord per binding to an empty image.
func aclSetOf(t *testing.T, bs ...ACLBinding) *Image {
	t.Helper()
	var recs []MetadataRecord
	for _, b := range bs {
		recs = append(recs, MetadataRecord{ACL: &AccessControlEntryRecord{ID: ACLID(security.NewACLID()), ACLBinding: b}})
	}
	im, err := emptyImage().Apply(int64(len(recs)-1), recs)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func TestACLRecordsApply(t *testing.T) {
	b1 := bind(tTopic, "t", pLit, "User:a", "*", opRead, allow)
	b2 := bind(tGroup, "g-", pPre, "User:a", "*", opRead, deny)
	id1, id2 := ACLID(security.NewACLID()), ACLID(security.NewACLID())
	recs := []MetadataRecord{{ACL: &AccessControlEntryRecord{ID: id1, ACLBinding: b1}}, {ACL: &AccessControlEntryRecord{ID: id2, ACLBinding: b2}}}
	// Records survive their JSON form (the metadata log stores JSON).
	for i, r := range recs {
		v, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back MetadataRecord
		if err := json.Unmarshal(v, &back); err != nil {
			t.Fatal(err)
		}
		if back.ACL == nil || *back.ACL != *r.ACL {
			t.Fatalf("record %d: JSON %s decodes to %+v", i, v, back.ACL)
		}
	}
	im0 := emptyImage()
	im1, err := im0.Apply(1, recs)
	if err != nil {
		t.Fatal(err)
	}
	if im0.ACLs.Len() != 0 || im1.ACLs.Len() != 2 {
		t.Fatalf("ACLs before %d after %d, want 0 and 2", im0.ACLs.Len(), im1.ACLs.Len())
	}
	if id, ok := aclLookup(im1, b2); !ok || id != id2 {
		t.Fatalf("Lookup(b2) = %v %v", id, ok)
	}
	// An unrelated record keeps the set.
	im2, err := im1.Apply(2, []MetadataRecord{{ProducerIDs: &ProducerIDsRecord{NextProducerID: 1000}}})
	if err != nil || im2.ACLs != im1.ACLs {
		t.Fatalf("unrelated apply: %v, set kept %v", err, im2.ACLs == im1.ACLs)
	}
	im3, err := im2.Apply(3, []MetadataRecord{{RemoveACL: &RemoveAccessControlEntryRecord{ID: id1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := aclLookup(im3, b1); ok || im3.ACLs.Len() != 1 || im2.ACLs.Len() != 2 {
		t.Fatalf("after remove: %d bindings (before: %d)", im3.ACLs.Len(), im2.ACLs.Len())
	}
	a := security.NewAuthorizer("org.apache.kafka.metadata.authorizer.StandardAuthorizer", nil, false, nil)
	if a.Allowed(buildACLSet(im3.ACLs), "User:a", "h", kmsg.ACLOperationRead, aclResGroup, "g-1") || !a.Allowed(buildACLSet(im1.ACLs), "User:a", "h", kmsg.ACLOperationRead, aclResTopic, "t") {
		t.Fatal("the applied sets do not authorize as their bindings say")
	}
	if _, err := im3.Apply(4, []MetadataRecord{{RemoveACL: &RemoveAccessControlEntryRecord{ID: id1}}}); err == nil {
		t.Error("removing an unknown id applied")
	}
	if _, err := im3.Apply(4, []MetadataRecord{{ACL: &AccessControlEntryRecord{ID: id2, ACLBinding: b1}}}); err == nil {
		t.Error("adding an existing id applied")
	}
	if _, err := im3.Apply(4, []MetadataRecord{{ACL: &AccessControlEntryRecord{ID: ACLID(security.NewACLID()), ACLBinding: bind(1, "x", pLit, "User:a", "*", opRead, allow)}}}); err == nil {
		t.Error("adding an ANY-resource binding applied")
	}
}

func TestAuthorizerConfig(t *testing.T) {
	base := map[string]string{"log.dirs": t.TempDir()}
	with := func(k, v string) map[string]string {
		p := map[string]string{}
		for a, b := range base {
			p[a] = b
		}
		p[k] = v
		return p
	}
	cfg, err := ConfigFromProperties(base)
	if err != nil || cfg.AuthorizerClassName != "" || cfg.AllowEveryoneIfNoACLFound || newAuthorizer(cfg, nil) != nil {
		t.Fatalf("defaults: %v %+v", err, cfg.AuthorizerClassName)
	}
	for _, class := range []string{"org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer"} {
		cfg, err := ConfigFromProperties(with("authorizer.class.name", class))
		if err != nil || newAuthorizer(cfg, nil) == nil {
			t.Errorf("%s: %v", class, err)
		}
	}
	if _, err := ConfigFromProperties(with("authorizer.class.name", "com.example.MyAuthorizer")); err == nil || !strings.Contains(err.Error(), "com.example.MyAuthorizer") {
		t.Errorf("unknown authorizer class: %v", err)
	}
	cfg, err = ConfigFromProperties(with("super.users", "User:admin; User:ops;"))
	if err != nil || len(cfg.SuperUsers) != 2 || cfg.SuperUsers[1] != "User:ops" {
		t.Errorf("super.users: %v %q", err, cfg.SuperUsers)
	}
	if _, err := ConfigFromProperties(with("super.users", "admin")); err == nil {
		t.Error("super.users without a principal type accepted")
	}
}

func TestPeerHost(t *testing.T) {
	for remote, want := range map[string]string{"127.0.0.1:5555": "127.0.0.1", "[::1]:9092": "::1", "10.1.2.3": "10.1.2.3"} {
		if got := (&conn{remote: remote}).PeerHost(); got != want {
			t.Errorf("peerHost(%q) = %q, want %q", remote, got, want)
		}
	}
}

// aclBroker starts a broker with the authorizer on and props.
func aclBroker(t *testing.T, dir string, props map[string]string) *Broker {
	t.Helper()
	p := map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "log.dirs": dir, "metrics.listener": "none"}
	for k, v := range props {
		p[k] = v
	}
	return startTestBroker(t, p)
}

func TestACLAPIs(t *testing.T) {
	dir := t.TempDir()
	everyone := map[string]string{"allow.everyone.if.no.acl.found": "true"}
	b := aclBroker(t, dir, everyone)
	str := func(s string) *string { return &s }
	create := kmsg.NewPtrCreateACLsRequest()
	add := func(rt int8, name string, pt int8, principal string, op, perm int8) {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(rt), name, kmsg.ACLResourcePatternType(pt)
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
		create.Creations = append(create.Creations, c)
	}
	add(tTopic, "orders", pLit, "User:a", opRead, allow)
	add(tTopic, "ord", pPre, "User:b", opWrite, deny)
	add(tGroup, "g", pLit, "User:a", opRead, allow)
	add(tCluster, "other", pLit, "User:a", opAlter, allow) // invalid name
	add(tTopic, "x", pLit, "nocolon", opRead, allow)       // invalid principal
	add(tTopic, "orders", pLit, "User:a", opRead, allow)   // duplicate: fine
	cr := adminRun(t, b, create, 3).(*kmsg.CreateACLsResponse)
	wantCodes := []int16{0, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, 0}
	for i, res := range cr.Results {
		if res.ErrorCode != wantCodes[i] {
			t.Errorf("creation %d: code %d (%v), want %d", i, res.ErrorCode, res.ErrorMessage, wantCodes[i])
		}
	}
	if n := b.currentImage().ACLs.Len(); n != 3 {
		t.Fatalf("%d ACLs in the image, want 3", n)
	}

	describe := func(v int16, f func(r *kmsg.DescribeACLsRequest)) *kmsg.DescribeACLsResponse {
		r := kmsg.NewPtrDescribeACLsRequest()
		r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		f(r)
		return adminRun(t, b, r, v).(*kmsg.DescribeACLsResponse)
	}
	count := func(d *kmsg.DescribeACLsResponse) int {
		n := 0
		for _, r := range d.Resources {
			n += len(r.ACLs)
		}
		return n
	}
	if d := describe(3, func(*kmsg.DescribeACLsRequest) {}); d.ErrorCode != 0 || count(d) != 3 || len(d.Resources) != 3 {
		t.Errorf("describe ANY: code %d, %d ACLs in %d resources, want 3 in 3", d.ErrorCode, count(d), len(d.Resources))
	}
	if d := describe(3, func(r *kmsg.DescribeACLsRequest) {
		r.ResourceType, r.ResourcePatternType, r.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, str("orders")
	}); count(d) != 2 {
		t.Errorf("describe MATCH orders: %d ACLs, want 2", count(d))
	}
	// v0 filters literal patterns only.
	if d := describe(0, func(r *kmsg.DescribeACLsRequest) {}); count(d) != 2 {
		t.Errorf("describe v0: %d ACLs, want 2 literal ones", count(d))
	}
	if d := describe(1, func(r *kmsg.DescribeACLsRequest) { r.Operation = 0 }); d.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describe with UNKNOWN operation: code %d, want INVALID_REQUEST", d.ErrorCode)
	}

	// Restart: the bindings come back from the metadata log.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = aclBroker(t, dir, everyone)
	if n := b.currentImage().ACLs.Len(); n != 3 {
		t.Fatalf("after restart: %d ACLs, want 3", n)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f, f)
	f.ResourceType = 0
	del.Filters = append(del.Filters, f)
	dr := adminRun(t, b, del, 2).(*kmsg.DeleteACLsResponse)
	if len(dr.Results) != 3 || len(dr.Results[0].MatchingACLs) != 2 || len(dr.Results[1].MatchingACLs) != 0 || dr.Results[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete: %+v", dr.Results)
	}
	if n := b.currentImage().ACLs.Len(); n != 1 {
		t.Fatalf("after delete: %d ACLs, want 1", n)
	}
}

func TestACLAPIsSecurityDisabled(t *testing.T) {
	b := startTestBroker(t, map[string]string{"metrics.listener": "none"})
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = append(create.Creations, kmsg.NewCreateACLsRequestCreation())
	if r := adminRun(t, b, create, 1).(*kmsg.CreateACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("CreateAcls: %+v", r.Results)
	}
	if r := adminRun(t, b, kmsg.NewPtrDescribeACLsRequest(), 1).(*kmsg.DescribeACLsResponse); r.ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("DescribeAcls: code %d", r.ErrorCode)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Filters = append(del.Filters, kmsg.NewDeleteACLsRequestFilter())
	if r := adminRun(t, b, del, 3).(*kmsg.DeleteACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("DeleteAcls: %+v", r.Results)
	}
}

// commitACLs adds bindings through the controller directly, as an
// operator with every right would (the ACL APIs check the caller).
func commitACLs(b *Broker, bs ...ACLBinding) error {
	return securityBroker{b}.Change(func(security.View) []security.Record {
		recs := make([]security.Record, len(bs))
		for i, bd := range bs {
			recs[i] = security.Record{ACL: &security.AccessControlEntryRecord{ID: security.NewACLID(), ACLBinding: security.ACLBinding(bd)}}
		}
		return recs
	})
}

func TestACLEnforcedOnHandlers(t *testing.T) {
	// Default deny (allow.everyone.if.no.acl.found=false): only what the
	// bindings allow is allowed; the ACL APIs need cluster ACLs too.
	b := aclBroker(t, t.TempDir(), map[string]string{"auto.create.topics.enable": "false"})
	b.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, name := range []string{"open", "closed"} {
		if _, err := b.createTopic(TopicSpec{Name: name, Partitions: 1, ReplicationFactor: 1}, false); err != nil {
			t.Fatal(err)
		}
	}
	if r := adminRun(t, b, kmsg.NewPtrDescribeACLsRequest(), 1).(*kmsg.DescribeACLsResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("DescribeAcls without DESCRIBE on the cluster: code %d", r.ErrorCode)
	}
	if err := commitACLs(b, bind(tTopic, "open", pLit, security.AnonymousPrincipal, "*", opAll, allow)); err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	mr := adminRun(t, b, md, 12).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || *mr.Topics[0].Topic != "open" {
		t.Errorf("Metadata all topics: %d topics, want only \"open\"", len(mr.Topics))
	}
	for _, name := range []string{"open", "closed"} {
		n := name
		md.Topics = append(md.Topics, kmsg.MetadataRequestTopic{Topic: &n})
	}
	mr = adminRun(t, b, md, 12).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 2 || mr.Topics[0].ErrorCode != 0 || mr.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("Metadata open,closed: %+v", mr.Topics)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	for _, name := range []string{"open", "closed"} {
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = name
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
	}
	lr := adminRun(t, b, lo, 8).(*kmsg.ListOffsetsResponse)
	if lr.Topics[0].Partitions[0].ErrorCode != 0 || lr.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("ListOffsets: %d %d", lr.Topics[0].Partitions[0].ErrorCode, lr.Topics[1].Partitions[0].ErrorCode)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "new", 1, 1
	ct.Topics = append(ct.Topics, ctt)
	if r := adminRun(t, b, ct, 7).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("CreateTopics without CREATE: code %d", r.Topics[0].ErrorCode)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"closed"}
	if r := adminRun(t, b, dt, 5).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("DeleteTopics without DELETE: code %d", r.Topics[0].ErrorCode)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	for _, res := range []struct {
		rt   kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "open"}, {kmsg.ConfigResourceTypeTopic, "closed"}, {kmsg.ConfigResourceTypeBroker, "1"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = res.rt, res.name
		dc.Resources = append(dc.Resources, rr)
	}
	dcr := adminRun(t, b, dc, 4).(*kmsg.DescribeConfigsResponse)
	if got := []int16{dcr.Resources[0].ErrorCode, dcr.Resources[1].ErrorCode, dcr.Resources[2].ErrorCode}; got[0] != 0 ||
		got[1] != kerr.TopicAuthorizationFailed.Code || got[2] != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("DescribeConfigs codes %v", got)
	}
	if r := adminRun(t, b, kmsg.NewPtrDescribeLogDirsRequest(), 4).(*kmsg.DescribeLogDirsResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(r.Dirs) != 0 {
		t.Errorf("DescribeLogDirs without DESCRIBE on the cluster: code %d, %d dirs", r.ErrorCode, len(r.Dirs))
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	if r := adminRun(t, b, hb, 4).(*kmsg.HeartbeatResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("Heartbeat without READ on the group: code %d", r.ErrorCode)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	tx := "tx"
	ip.TransactionalID = &tx
	if r := adminRun(t, b, ip, 4).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("InitProducerId without WRITE on the transactional id: code %d", r.ErrorCode)
	}
	ip.TransactionalID = nil
	if r := adminRun(t, b, ip, 4).(*kmsg.InitProducerIDResponse); r.ErrorCode != 0 {
		t.Errorf("idempotent InitProducerId with WRITE on a topic: code %d", r.ErrorCode)
	}
}

// aclLookup is the id of binding b in im's ACL set, as the authorizer's
// index finds it.
func aclLookup(im *Image, b ACLBinding) (ACLID, bool) {
	id, ok := buildACLSet(im.ACLs).Lookup(security.ACLBinding(b))
	return ACLID(id), ok
}
