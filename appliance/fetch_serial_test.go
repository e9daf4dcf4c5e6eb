package appliance

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/wait"
	"github.com/ringbroker/ringbroker/ioring"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fixtureEngines is the engines a test runs on: RB_ENGINE's when set,
// else netpoll and, where io_uring works, uring.
func fixtureEngines() []string {
	if e := os.Getenv("RB_ENGINE"); e != "" {
		return []string{e}
	}
	if ok, _ := ioring.Available(); ok {
		return []string{"netpoll", "uring"}
	}
	return []string{"netpoll"}
}

// onEngines runs fn on a broker fixture of each fixtureEngines engine,
// with extra broker properties (nil for none).
func onEngines(t *testing.T, extra map[string]string, fn func(t *testing.T, f *allocFixture)) {
	if raceEnabled {
		t.Skip("starts a broker; slow under the race detector")
	}
	for _, e := range fixtureEngines() {
		t.Run(e, func(t *testing.T) {
			p := map[string]string{"io.engine": e}
			for k, v := range extra {
				p[k] = v
			}
			fn(t, newAllocFixtureWith(t, p))
		})
	}
}

// fetchFrame is a fetch v12 of partitions ps of "a" from offset 0.
func fetchFrame(corrID, minBytes, maxWaitMs, maxBytes int32, ps ...int32) []byte {
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = maxWaitMs, minBytes, maxBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	for _, p := range ps {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, maxBytes
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	return frameOf(fr, 12, corrID)
}

// readAnswer reads one response frame and returns its correlation id and
// size.
func readAnswer(t *testing.T, nc net.Conn) (int32, int) {
	t.Helper()
	corr, n, err := readAnswerHead(nc)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return corr, n
}

// readAnswerHead reads one response frame (20 s deadline), keeping its
// correlation id and size.
func readAnswerHead(nc net.Conn) (int32, int, error) {
	var sz [8]byte
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(nc, sz[:]); err != nil {
		return 0, 0, err
	}
	n := int(binary.BigEndian.Uint32(sz[:]))
	if _, err := io.CopyN(io.Discard, nc, int64(n-4)); err != nil {
		return 0, 0, err
	}
	return int32(binary.BigEndian.Uint32(sz[4:])), n, nil
}

// Fetches pipelined on one connection run one at a time (recordFetch,
// conn.waitWritten, uringConn.idle): three long polls that each wait 300 ms answer ~300 ms
// apart, in order, not all at once.
func TestPipelinedFetchesRunOneAtATime(t *testing.T) {
	onEngines(t, nil, func(t *testing.T, f *allocFixture) {
		nc, err := net.Dial("tcp", f.b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		var all []byte
		for i := int32(1); i <= 3; i++ { // partitions 1 and 2 are empty: each waits max_wait
			all = append(all, fetchFrame(i, 1<<20, 300, 1<<20, 1, 2)...)
		}
		start := time.Now()
		if _, err := nc.Write(all); err != nil {
			t.Fatal(err)
		}
		for i := int32(1); i <= 3; i++ {
			corr, _ := readAnswer(t, nc)
			at := time.Since(start)
			if corr != i {
				t.Fatalf("answer %d has correlation id %d", i, corr)
			}
			// Run one after another, answer i cannot come before
			// i x 300 ms; run together, all come at ~300 ms.
			if min := time.Duration(i) * 290 * time.Millisecond; at < min {
				t.Errorf("answer %d after %v, want at least %v", i, at, min)
			}
		}
	})
}

// A client that pipelines large fetches and does not read pins one answer:
// the fetches behind it are not run (no record bytes are read for them)
// until it reads, and then every answer comes, in order.
func TestSlowReaderPinsOneFetchAnswer(t *testing.T) {
	onEngines(t, nil, func(t *testing.T, f *allocFixture) {
		fillPartition0(f, 80) // 8 MB: one answer outgrows the socket buffers
		nc := smallRcvBuf(t, f.b.Addr().String())
		defer nc.Close()
		out := bytesOutCounter{f.b.metrics, "a"}
		before := out.Get()
		const n = 20
		var all []byte
		for i := int32(1); i <= n; i++ {
			all = append(all, fetchFrame(i, 1, 0, 8<<20, 0)...)
		}
		if _, err := nc.Write(all); err != nil {
			t.Fatal(err)
		}
		// A window in which a broker that ran the fetches behind the
		// unread answer would read their record bytes: an absence is
		// only seen over time.
		time.Sleep(500 * time.Millisecond)
		held := out.Get() - before
		sizes := make([]int, 0, n)
		for i := int32(1); i <= n; i++ {
			corr, size := readAnswer(t, nc)
			if corr != i {
				t.Fatalf("answer %d has correlation id %d", i, corr)
			}
			sizes = append(sizes, size)
		}
		if sizes[0] < 6<<20 {
			t.Fatalf("first answer is %d bytes, want the ~8 MB asked for", sizes[0])
		}
		if float64(held) > 1.5*float64(sizes[0]) {
			t.Errorf("%d record bytes read for the fetches of a connection that read nothing; one answer is %d", held, sizes[0])
		}
		if total := out.Get() - before; total < uint64(n-1)*uint64(sizes[0]) {
			t.Errorf("%d record bytes answered after reading, want about %d x %d", total, n, sizes[0])
		}
		t.Logf("%d record bytes read while the client did not read, %d after; answer %d bytes", held, out.Get()-before, sizes[0])
	})
}

// A fetch that arrives after the previous answer was queued but before
// the client read it runs once the client reads (the held fetch waits on
// the send queue draining, not on another answer).
func TestFetchAfterUnreadAnswerRuns(t *testing.T) {
	onEngines(t, nil, func(t *testing.T, f *allocFixture) {
		fillPartition0(f, 80) // 8 MB
		nc := smallRcvBuf(t, f.b.Addr().String())
		defer nc.Close()
		out := bytesOutCounter{f.b.metrics, "a"}
		before := out.Get()
		if _, err := nc.Write(fetchFrame(1, 1, 0, 8<<20, 0)); err != nil {
			t.Fatal(err)
		}
		// Answer 1 built and queued, unread.
		if !wait.Until(5*time.Second, func() bool { return out.Get()-before >= 6<<20 }) {
			t.Fatalf("answer 1 not built within 5 s (%d record bytes)", out.Get()-before)
		}
		if _, err := nc.Write(fetchFrame(2, 1, 0, 1<<20, 0)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // fetch 2 arrives before the client reads
		for i := int32(1); i <= 2; i++ {
			if corr, _ := readAnswer(t, nc); corr != i {
				t.Fatalf("answer %d has correlation id %d", i, corr)
			}
		}
	})
}

// fillPartition0 produces n batches of 100 records of 1000 bytes to
// partition 0 of "a".
func fillPartition0(f *allocFixture, n int) {
	recs := make([]kmsg.Record, 100)
	for i := range recs {
		recs[i].Value = make([]byte, 1000)
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = 1, 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "a"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = appendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, recs)
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	big := frameOf(pr, 9, 5)
	for i := 0; i < n; i++ {
		f.produceOne(big)
	}
}
