package appliance

import (
	"sync"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIncrementalAlterConfigsConcurrentListOps runs SUBTRACT delete and
// SUBTRACT compact on cleanup.policy "delete,compact" at the same time. In
// any serial order the second one would leave an empty policy, which is
// invalid, so exactly one may succeed; both succeeding means one was
// computed against a value the other had already changed (a lost update).
// The test holds the controller lock while both requests start, so both
// are in flight together.
func TestIncrementalAlterConfigsConcurrentListOps(t *testing.T) {
	b := startTestBroker(t, nil)
	if _, err := b.createTopic(TopicSpec{Name: "race", Partitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	op := func(o kmsg.IncrementalAlterConfigOp, v string) kmsg.IncrementalAlterConfigsRequestResource {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType = 2
		rr.ResourceName = "race"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "cleanup.policy", o, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, c)
		return rr
	}
	// alter runs one resource through the registered handler, as the
	// connection would, and returns its error.
	alter := func(rr kmsg.IncrementalAlterConfigsRequestResource) error {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = append(req.Resources, rr)
		api, _ := b.front.apis.Lookup(req.Key())
		resp := api.Handle(&wire.Request{Key: req.Key(), Version: 1, Req: req}).(wire.Deferred)().(*kmsg.IncrementalAlterConfigsResponse)
		return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	for round := 0; round < 5; round++ {
		if err := alter(op(kmsg.IncrementalAlterConfigOpSet, "delete,compact")); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		b.ctl.mu.Lock()
		for i, v := range []string{"delete", "compact"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = alter(op(kmsg.IncrementalAlterConfigOpSubtract, v))
			}()
		}
		time.Sleep(20 * time.Millisecond)
		b.ctl.mu.Unlock()
		wg.Wait()
		got := b.currentImage().Topics["race"].Configs["cleanup.policy"]
		switch {
		case errs[0] == nil && errs[1] == nil:
			t.Fatalf("round %d: both SUBTRACTs succeeded (cleanup.policy = %q): one was computed against a stale value", round, got)
		case errs[0] != nil && errs[1] != nil:
			t.Fatalf("round %d: both SUBTRACTs failed: %v; %v", round, errs[0], errs[1])
		case errs[0] == nil && got != "compact", errs[1] == nil && got != "delete":
			t.Fatalf("round %d: cleanup.policy = %q after one SUBTRACT (errors %v, %v)", round, got, errs[0], errs[1])
		}
	}
}
