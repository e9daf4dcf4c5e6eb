package appliance

import (
	"net"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client that sends a long poll (max_wait_ms near 2^31, min_bytes 1 GiB)
// and disconnects must not keep its connection on the broker until the
// poll's max wait: the broker closes its side at once, as Kafka drops a
// disconnected channel. Before the fix the netpoll path waited for the
// poll's answer and the socket stayed in CLOSE-WAIT.
func TestAbandonedLongPollClosesConnection(t *testing.T) {
	if raceEnabled {
		t.Skip("starts a broker; slow under the race detector")
	}
	f := newAllocFixture(t)
	conns := func() int {
		f.b.front.mu.Lock()
		defer f.b.front.mu.Unlock()
		return len(f.b.front.conns)
	}
	base := conns()
	purgatory := f.b.metrics.FetchPurgatory()

	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = 1<<31-1, 1<<30, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 2, 0, 1<<20 // partition 2 is empty: the fetch waits
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	frame := frameOf(fr, 12, 7)

	const n = 20
	for i := 0; i < n; i++ {
		// The polls of the connections closed before have ended (if they
		// have not within 2 s, the checks below fail).
		wait.Until(2*time.Second, func() bool { return f.b.metrics.FetchPurgatory() <= purgatory })
		nc, err := net.Dial("tcp", f.b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		// Let the broker start the poll (or give up after 2 s: closing
		// before it parks is the other race, which must hold too).
		wait.Until(2*time.Second, func() bool { return f.b.metrics.FetchPurgatory() > purgatory })
		nc.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	wait.Until(5*time.Second, func() bool { return conns() <= base })
	if got := conns(); got > base {
		t.Fatalf("%d of %d abandoned long-poll connections still open 5 s after the clients left", got-base, n)
	}
	// Their polls ended with them (conn.markClosed), not at max_wait_ms.
	wait.Until(time.Until(deadline), func() bool { return f.b.metrics.FetchPurgatory() <= purgatory })
	if got := f.b.metrics.FetchPurgatory(); got > purgatory {
		t.Fatalf("%d abandoned long polls still in the fetch purgatory", got-purgatory)
	}

	// Clients that leave right after sending: the connection is often
	// gone before the first read pass ends (a poll that could not register
	// with its closed connection once crashed the broker).
	for i := 0; i < 200; i++ {
		nc, err := net.Dial("tcp", f.b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(frame)
		nc.Close()
	}
	wait.Until(10*time.Second, func() bool { return conns() <= base && f.b.metrics.FetchPurgatory() <= purgatory })
	if got, p := conns(), f.b.metrics.FetchPurgatory(); got > base || p > purgatory {
		t.Fatalf("after 200 write-and-leave clients: %d connections and %d polls left", got-base, p-purgatory)
	}
	f.produceOne(f.produce) // still serving
}
