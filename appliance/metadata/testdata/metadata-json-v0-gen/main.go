// Command metadata-json-v0-gen wrote the fixture in ../metadata-json-v0:
// it drives a broker built from commit 2d1ec21 (JSON metadata records),
// started with io.engine=netpoll, log.io.mode=buffered, shards=2 and the
// StandardAuthorizer with allow.everyone.if.no.acl.found=true, at the
// address given as its argument. Under testdata, so go build ./... skips it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	addr := os.Args[1]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("events"))
	must(err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ret := "3600000"
	mmb := "2000000"
	seg := "1048576"
	r, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &ret, "max.message.bytes": &mmb}, "orders")
	must(err)
	must(r.Error())
	r, err = adm.CreateTopics(ctx, 1, 1, map[string]*string{"segment.bytes": &seg}, "events")
	must(err)
	must(r.Error())
	r, err = adm.CreateTopics(ctx, 1, 1, nil, "gone")
	must(err)
	must(r.Error())
	cp := "compact"
	r, err = adm.CreateTopics(ctx, 2, 1, map[string]*string{"cleanup.policy": &cp}, "compacted")
	must(err)
	must(r.Error())
	d, err := adm.DeleteTopics(ctx, "gone")
	must(err)
	must(d.Error())
	lz := "lz4"
	ac, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: &lz}, {Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, "orders")
	must(err)
	for _, a := range ac {
		must(a.Err)
	}
	cpr, err := adm.CreatePartitions(ctx, 1, "events")
	must(err)
	must(cpr.Error())
	b := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	cr, err := adm.CreateACLs(ctx, b)
	must(err)
	for _, c := range cr {
		must(c.Err)
	}
	b2 := kadm.NewACLs().Deny("User:mallory").DenyHosts("10.0.0.1").Groups("team-").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)
	cr, err = adm.CreateACLs(ctx, b2)
	must(err)
	for _, c := range cr {
		must(c.Err)
	}
	sr, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"}, {User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
	must(err)
	for _, s := range sr {
		must(s.Err)
	}
	rate := 1048576.0
	qr, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kadm.StringPtr("alice")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2 * rate}}},
	})
	must(err)
	for _, q := range qr {
		must(q.Err)
	}
	// An idempotent producer takes a block of producer ids.
	res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")})
	must(res.FirstErr())
	fmt.Println("ok")
}
