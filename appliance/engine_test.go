package appliance

import (
	"testing"

	"github.com/ringbroker/ringbroker/ioring"
	"golang.org/x/sys/unix"
)

// TestUringPinShards: with the uring engine each shard's thread is pinned
// to one CPU; io.uring.pin.shards=false leaves it every CPU the process
// may use (its thread is still the ring's only one).
func TestUringPinShards(t *testing.T) {
	if ok, why := ioring.Available(); !ok {
		t.Skipf("io_uring unavailable: %s", why)
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	if all.Count() < 2 {
		t.Skip("one CPU allowed: pinned and unpinned look the same")
	}
	for _, pin := range []string{"true", "false"} {
		b := startTestBroker(t, map[string]string{"shards": "3", "io.engine": "uring", "io.uring.pin.shards": pin,
			"metrics.listener": "none", "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})
		for _, st := range b.shards {
			var set unix.CPUSet
			var gerr error
			st.loop.Call(func() { gerr = unix.SchedGetaffinity(0, &set) })
			if gerr != nil {
				t.Fatal(gerr)
			}
			want := 1
			if pin == "false" {
				want = all.Count()
			}
			if set.Count() != want {
				t.Errorf("io.uring.pin.shards=%s: shard %d's thread may run on %d CPUs, want %d", pin, st.id, set.Count(), want)
			}
		}
		b.Close()
	}
}
