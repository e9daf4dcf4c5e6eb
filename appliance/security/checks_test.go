package security

import (
	"errors"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testConn is a wire.Conn with a fixed principal.
type testConn struct{ principal string }

func (c testConn) Principal() string       { return c.principal }
func (c testConn) PeerAddr() string        { return "10.0.0.1:4000" }
func (c testConn) PeerHost() string        { return "10.0.0.1" }
func (c testConn) Listener() string        { return "PLAINTEXT" }
func (c testConn) Closed() <-chan struct{} { return nil }
func req(principal string) *wire.Request   { return &wire.Request{Conn: testConn{principal}} }
func records(bs ...ACLBinding) []AccessControlEntryRecord {
	out := make([]AccessControlEntryRecord, len(bs))
	for i, b := range bs {
		out[i] = AccessControlEntryRecord{ID: NewACLID(), ACLBinding: b}
	}
	return out
}

// TestChecks asks every check of a State-backed Authorizer, and of a nil
// one (the authorizer off), for principals with and without bindings.
func TestChecks(t *testing.T) {
	var s State
	if err := s.SetACLs(records(
		bind(tTopic, "t", pLit, "User:w", "*", opWrite, allow),
		bind(tTxn, "tx", pLit, "User:w", "*", opWrite, allow),
		bind(tGroup, "g", pLit, "User:w", "*", opRead, allow),
		bind(tCluster, wire.ClusterResource, pLit, "User:admin", "*", opAll, allow),
		bind(tTopic, "t", pLit, "User:creator", "*", opCreate, allow),
		bind(tTopic, "t", pLit, "User:creator", "*", opDescribe, allow),
		bind(tTopic, "t", pLit, "User:d", "*", opDescribe, allow),
	)); err != nil {
		t.Fatal(err)
	}
	a := NewAuthorizer(standardAuthorizerClass, nil, false, s.ACLs)
	w, admin, nobody, creator, d := req("User:w"), req("User:admin"), req("User:nobody"), req("User:creator"), req("User:d")
	tx, other := "tx", "other"
	code := func(e *kerr.Error) int16 {
		if e == nil {
			return 0
		}
		return e.Code
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"produce allowed", a.ProduceDenied(w, &tx, "t"), int16(0)},
		{"produce other txn", a.ProduceDenied(w, &other, "t"), kerr.TransactionalIDAuthorizationFailed.Code},
		{"produce other topic", a.ProduceDenied(w, nil, "u"), kerr.TopicAuthorizationFailed.Code},
		{"topic denied", a.TopicDenied(nobody, kmsg.ACLOperationWrite, "t"), true},
		{"topic write implies describe", a.TopicDenied(w, kmsg.ACLOperationDescribe, "t"), false},
		{"group refusal empty", code(a.GroupRefusal(w, kmsg.ACLOperationRead, "")), kerr.InvalidGroupID.Code},
		{"group refusal denied", code(a.GroupRefusal(nobody, kmsg.ACLOperationRead, "g")), kerr.GroupAuthorizationFailed.Code},
		{"group refusal allowed", code(a.GroupRefusal(w, kmsg.ACLOperationRead, "g")), int16(0)},
		{"create by cluster", a.CreateTopicAuthzErr(admin, "x") == nil, true},
		{"create by topic", a.CreateTopicAuthzErr(creator, "t") == nil, true},
		{"create denied", errors.Is(a.CreateTopicAuthzErr(w, "t"), kerr.TopicAuthorizationFailed), true},
		{"config topic", errors.Is(a.ConfigResourceAuthzErr(nobody, kmsg.ACLOperationDescribeConfigs, kmsg.ConfigResourceTypeTopic, "t"), kerr.TopicAuthorizationFailed), true},
		{"config broker", errors.Is(a.ConfigResourceAuthzErr(w, kmsg.ACLOperationDescribeConfigs, kmsg.ConfigResourceTypeBroker, "1"), kerr.ClusterAuthorizationFailed), true},
		{"config broker admin", a.ConfigResourceAuthzErr(admin, kmsg.ACLOperationAlterConfigs, kmsg.ConfigResourceTypeBroker, "1") == nil, true},
		{"metadata described", a.MetadataTopicDenied(d, "t", false), false},
		{"metadata undescribed", a.MetadataTopicDenied(nobody, "t", false), true},
		{"metadata create denied", a.MetadataTopicDenied(d, "t", true), true},
		{"metadata create allowed", a.MetadataTopicDenied(creator, "t", true), false},
		{"coordinator group", code(a.FindCoordinatorDenied(nobody, 0, "g")), kerr.GroupAuthorizationFailed.Code},
		{"coordinator txn", code(a.FindCoordinatorDenied(nobody, 1, "tx")), kerr.TransactionalIDAuthorizationFailed.Code},
		{"coordinator txn allowed", code(a.FindCoordinatorDenied(w, 1, "tx")), int16(0)},
		{"any topic", a.PermitsAnyTopic(w, kmsg.ACLOperationWrite), true},
		{"any topic denied", a.PermitsAnyTopic(nobody, kmsg.ACLOperationWrite), false},
		{"cluster ops admin", a.ClusterAuthorizedOps(admin, 1<<7|1<<8), int32(1<<7 | 1<<8)},
		{"cluster ops nobody", a.ClusterAuthorizedOps(nobody, 1<<7|1<<8), int32(0)},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	// A nil Authorizer allows everything.
	var off *Authorizer
	if off.ProduceDenied(nobody, &other, "t") != 0 || off.TopicDenied(nobody, kmsg.ACLOperationWrite, "t") ||
		off.GroupRefusal(nobody, kmsg.ACLOperationRead, "g") != nil || off.GroupRefusal(nobody, kmsg.ACLOperationRead, "") != kerr.InvalidGroupID ||
		off.CreateTopicAuthzErr(nobody, "t") != nil || off.ConfigResourceAuthzErr(nobody, kmsg.ACLOperationAlterConfigs, kmsg.ConfigResourceTypeBroker, "1") != nil ||
		off.MetadataTopicDenied(nobody, "t", true) || off.FindCoordinatorDenied(nobody, 1, "tx") != nil || !off.PermitsAnyTopic(nobody, kmsg.ACLOperationWrite) ||
		off.ClusterAuthorizedOps(nobody, 1<<7) != 1<<7 || off.TopicAuthzErr(nobody, kmsg.ACLOperationDelete, "t") != nil {
		t.Error("a nil Authorizer refused something")
	}
}

// TestState: the zero State is empty; SetACLs and SetScram each replace
// their part and keep the other; a binding the set refuses is reported
// and left out.
func TestState(t *testing.T) {
	var s State
	if s.ACLs() != nil || s.View().Scram != nil {
		t.Fatal("the zero State is not empty")
	}
	recs := records(bind(tTopic, "t", pLit, "User:a", "*", opRead, allow))
	if err := s.SetACLs(recs); err != nil {
		t.Fatal(err)
	}
	s.SetScram(Credentials{"a": {ScramSHA256: {Iterations: 4096}}})
	if s.ACLs().Len() != 1 || s.View().ACLs != s.ACLs() {
		t.Fatalf("SetScram dropped the ACLs: %d bindings", s.ACLs().Len())
	}
	if _, ok := s.View().Scram.Lookup("a", ScramSHA256); !ok {
		t.Fatal("credential missing")
	}
	bad := append(recs, recs[0], AccessControlEntryRecord{ID: NewACLID(), ACLBinding: bind(tTopic, "", pLit, "User:a", "*", opRead, allow)})
	bad = append(bad, records(bind(tGroup, "g", pLit, "User:a", "*", opRead, allow))...)
	if err := s.SetACLs(bad); err == nil {
		t.Fatal("a duplicate id and an invalid binding indexed without an error")
	}
	if n := s.ACLs().Len(); n != 2 {
		t.Fatalf("%d bindings after a partly refused SetACLs, want the 2 valid ones", n)
	}
	if _, ok := s.View().Scram.Lookup("a", ScramSHA256); !ok {
		t.Fatal("SetACLs dropped the credentials")
	}
	if err := s.SetACLs(nil); err != nil || s.ACLs() != nil {
		t.Fatalf("SetACLs(nil): %v, %d bindings", err, s.ACLs().Len())
	}
}
