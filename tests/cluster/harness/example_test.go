package harness_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ringbroker/ringbroker/tests/cluster/harness"
)

// A test that kills a node under acks=all produces and checks that every
// acknowledged record survives (compiled, not run: it has no output).
func Example() {
	var t *testing.T // the test's
	c := harness.New(t, harness.Options{Nodes: 3, Hosts: harness.LoopbackHosts(3)})
	cl := harness.NewProducer(t, c.Bootstrap())
	rec := &harness.Recorder{History: harness.NewHistory()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 1000 { // bounded in count, and in time by ctx
		rec.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: fmt.Appendf(nil, "v%d", i)})
		if i == 500 {
			c.Node(1).Kill()
		}
	}
	rec.Wait(ctx)
	took := harness.Eventually(t, 10*time.Second, 0, func() error {
		return c.Node(2).Probe(ctx) // or: a new leader answers
	})
	t.Logf("back after %v", took)
	c.Node(1).Start()
	c.Node(1).MustReady()
	harness.RequireAcked(t, time.Minute, c.Bootstrap(), rec.Acks())
}

// Partitions in network namespaces: node 1 cut off from 2 and 3, then
// healed.
func ExampleNetwork() {
	var t *testing.T               // the test's
	nw := harness.NewNetwork(t, 3) // skips (or fails with RB_REQUIRE_NETNS=1) where not permitted
	c := harness.New(t, harness.Options{Nodes: 3, Network: nw})
	nw.Isolate(1)
	// ... the majority (nodes 2 and 3) goes on; node 1 cannot commit ...
	nw.Heal()
	c.Node(1).MustReady()
}
