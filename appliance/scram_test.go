package appliance

import (
	"bytes"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestScramHandlersPersist(t *testing.T) {
	dir := t.TempDir()
	b := metaTestBroker(t, dir)
	alter := func(dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]int16 {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions, req.Upsertions = dels, ups
		resp := adminRun(t, b, req, 0).(*kmsg.AlterUserSCRAMCredentialsResponse)
		out := map[string]int16{}
		for _, r := range resp.Results {
			if _, dup := out[r.User]; dup {
				t.Errorf("user %q answered twice", r.User)
			}
			out[r.User] = r.ErrorCode
			if r.ErrorCode != 0 && r.ErrorMessage == nil {
				t.Errorf("user %q: error %d without a message", r.User, r.ErrorCode)
			}
		}
		return out
	}
	up := func(user string, mech int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: user, Mechanism: mech, Iterations: iters, Salt: []byte("salt"), SaltedPassword: []byte("salted-" + user)}
	}
	del := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		return kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: user, Mechanism: mech}
	}
	got := alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("ghost", 1)}, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("alice", 1, 4096), up("alice", 2, 16384), up("bob", 2, 8192),
		up("", 1, 4096), up("low", 1, 4095), up("high", 1, 16385), up("mech", 3, 4096),
		up("dup", 1, 4096), up("dup", 1, 5000),
	})
	want := map[string]int16{"ghost": kerr.ResourceNotFound.Code, "alice": 0, "bob": 0, "": kerr.UnacceptableCredential.Code,
		"low": kerr.UnacceptableCredential.Code, "high": kerr.UnacceptableCredential.Code, "mech": kerr.UnsupportedSaslMechanism.Code,
		"dup": kerr.DuplicateResource.Code}
	for u, code := range want {
		if got[u] != code {
			t.Errorf("user %q: code %d, want %d", u, got[u], code)
		}
	}
	check := func(im *Image) {
		t.Helper()
		if users := scramCredentials(im.Scram).Users(); len(users) != 2 || users[0] != "alice" || users[1] != "bob" {
			t.Errorf("users %v", users)
		}
		c, ok := scramCredential(im, "alice", security.ScramSHA512)
		want := security.NewScramCredential(security.ScramSHA512, []byte("salt"), []byte("salted-alice"), 16384)
		if !ok || c.Iterations != 16384 || !bytes.Equal(c.StoredKey, want.StoredKey) || !bytes.Equal(c.ServerKey, want.ServerKey) || string(c.Salt) != "salt" {
			t.Errorf("alice SCRAM-SHA-512: %+v %v", c, ok)
		}
		if _, ok := scramCredential(im, "bob", security.ScramSHA256); ok {
			t.Errorf("bob has a SCRAM-SHA-256 credential")
		}
	}
	check(b.currentImage())
	check(replayImage(t, b, dir))

	describe := func(users ...string) *kmsg.DescribeUserSCRAMCredentialsResponse {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			req.Users = append(req.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
		}
		return adminRun(t, b, req, 0).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	}
	all := describe()
	if len(all.Results) != 2 || all.Results[0].User != "alice" || len(all.Results[0].CredentialInfos) != 2 ||
		all.Results[0].CredentialInfos[1].Iterations != 16384 || all.Results[1].CredentialInfos[0].Mechanism != 2 {
		t.Errorf("describe all: %+v", all.Results)
	}
	some := describe("bob", "nobody", "alice", "alice")
	if len(some.Results) != 3 || some.Results[0].ErrorCode != 0 || some.Results[1].ErrorCode != kerr.ResourceNotFound.Code ||
		some.Results[2].ErrorCode != kerr.DuplicateResource.Code {
		t.Errorf("describe some: %+v", some.Results)
	}

	// A user with one bad alteration is not changed at all.
	got = alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("alice", 1)}, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("alice", 2, 10)})
	if got["alice"] != kerr.UnacceptableCredential.Code {
		t.Errorf("mixed alteration: %v", got)
	}
	if _, ok := scramCredential(b.currentImage(), "alice", 1); !ok {
		t.Errorf("alice's SCRAM-SHA-256 credential deleted by a failed request")
	}
	got = alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("alice", 1), del("alice", 2), del("bob", 2)}, nil)
	if got["alice"] != 0 || got["bob"] != 0 {
		t.Errorf("deletions: %v", got)
	}
	if im := replayImage(t, b, dir); len(scramCredentials(im.Scram).Users()) != 0 {
		t.Errorf("users after deletion: %v", scramCredentials(im.Scram).Users())
	}
}
