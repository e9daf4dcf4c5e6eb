// Command scramcreds creates SCRAM credentials on a broker with franz-go's
// admin client (AlterUserScramCredentials, KIP-554), as `kafka-configs.sh
// --alter --add-config 'SCRAM-SHA-256=[password=...]'` does for the
// clients' docker set-ups. tests/compat/run.sh uses it before the SASL tests.
//
//	scramcreds HOST:PORT USER:256|512:PASSWORD ...
//
// Iterations are 4096 (Kafka's minimum). It exits 1 when any upsert fails.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: scramcreds HOST:PORT USER:256|512:PASSWORD ...")
		os.Exit(64)
	}
	var ups []kadm.UpsertSCRAM
	for _, a := range os.Args[2:] {
		p := strings.SplitN(a, ":", 3)
		if len(p) != 3 || (p[1] != "256" && p[1] != "512") {
			fmt.Fprintf(os.Stderr, "scramcreds: %q is not USER:256|512:PASSWORD\n", a)
			os.Exit(64)
		}
		m := kadm.ScramSha256
		if p[1] == "512" {
			m = kadm.ScramSha512
		}
		ups = append(ups, kadm.UpsertSCRAM{User: p[0], Mechanism: m, Iterations: 4096, Password: p[2]})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(os.Args[1]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "scramcreds:", err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, ups)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scramcreds:", err)
		os.Exit(1)
	}
	code := 0
	for u, r := range res {
		if r.Err != nil {
			fmt.Fprintf(os.Stderr, "scramcreds: %s: %v %s\n", u, r.Err, r.ErrMessage)
			code = 1
		}
	}
	os.Exit(code)
}
