package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScramAdminPersist stores SCRAM credentials with kadm, describes
// them, sees them survive a restart and deletes them.
func TestScramAdminPersist(t *testing.T) {
	b := startBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := newAdmin(t, b)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 16384, Password: "bob-secret"},
	})
	if err != nil {
		t.Fatalf("AlterUserSCRAMs: %v", err)
	}
	for _, u := range []string{"alice", "bob"} {
		if r := res[u]; r.Err != nil {
			t.Errorf("%s: %v %s", u, r.Err, r.ErrMessage)
		}
	}
	// kadm refuses iterations outside [4096, 16384] itself: ask the broker
	// directly.
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "weak", Mechanism: 1, Iterations: 1000, Salt: []byte("s"), SaltedPassword: []byte("p")}}
	if resp, err := req.RequestWith(ctx, newClient(t, b)); err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Errorf("1000 iterations: %v %+v, want UNACCEPTABLE_CREDENTIAL", err, resp)
	}
	check := func() {
		t.Helper()
		ds, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil {
			t.Fatalf("DescribeUserSCRAMs: %v", err)
		}
		if len(ds) != 2 {
			t.Fatalf("described %d users, want 2: %v", len(ds), ds)
		}
		a := ds["alice"]
		if a.Err != nil || len(a.CredInfos) != 2 || a.CredInfos[0].Mechanism != kadm.ScramSha256 || a.CredInfos[0].Iterations != 4096 ||
			a.CredInfos[1].Mechanism != kadm.ScramSha512 || a.CredInfos[1].Iterations != 8192 {
			t.Errorf("alice: %+v", a)
		}
		if bo := ds["bob"]; bo.Err != nil || len(bo.CredInfos) != 1 || bo.CredInfos[0].Iterations != 16384 {
			t.Errorf("bob: %+v", bo)
		}
	}
	check()
	b.Restart()
	adm = newAdmin(t, b)
	check()

	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}, {User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil {
		t.Fatalf("AlterUserSCRAMs deletions: %v", err)
	}
	if res["alice"].Err != nil || !errors.Is(res["carol"].Err, kerr.ResourceNotFound) {
		t.Errorf("deletions: alice %v, carol %v (want RESOURCE_NOT_FOUND)", res["alice"].Err, res["carol"].Err)
	}
	ds, err := adm.DescribeUserSCRAMs(ctx, "alice", "carol")
	if err != nil {
		t.Fatalf("DescribeUserSCRAMs: %v", err)
	}
	if a := ds["alice"]; a.Err != nil || len(a.CredInfos) != 1 || a.CredInfos[0].Mechanism != kadm.ScramSha512 {
		t.Errorf("alice after deletion: %+v", a)
	}
	if c := ds["carol"]; !errors.Is(c.Err, kerr.ResourceNotFound) {
		t.Errorf("carol: %v, want RESOURCE_NOT_FOUND", c.Err)
	}
}
