package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// TestRollOutOfDescriptors: idle connections take every file descriptor
// the broker may open (its RLIMIT_NOFILE lowered with prlimit), then a
// franz-go producer (connected before) writes past segment.bytes. The
// roll cannot create the new segment: the appends are refused with the
// retriable KAFKA_STORAGE_ERROR and the broker warns, but the partition
// stays online, so once the connections close the producer's retries
// land and every record is stored once, in order. Before, the partition
// went offline until a restart while Metadata still showed it led (found
// by the fresh-user test with 4,500 idle connections).
func TestRollOutOfDescriptors(t *testing.T) {
	const (
		topic   = "fdroll"
		records = 400 // x 1 KiB: past the 64 KiB segment.bytes several times
	)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b := startBroker(t, "")
	segBytes := "65536"
	if _, err := newAdmin(t, b).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &segBytes}, topic); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(90*time.Second), kgo.RetryTimeout(90*time.Second), kgo.MaxBufferedRecords(records+1),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // the bytes must reach segment.bytes
	value := func(i int) []byte { return append(fmt.Appendf(nil, "%06d-", i), bytes.Repeat([]byte{'v'}, 1017)...) }
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(0)}).FirstErr(); err != nil {
		t.Fatalf("first produce: %v", err)
	}

	pid := b.cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	lowered := old
	lowered.Cur = uint64(len(fds) + 16)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lowered, nil); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil); err != nil {
				t.Errorf("restoring the broker's RLIMIT_NOFILE: %v", err)
			}
		}
	}
	defer restore()
	var idle []net.Conn
	closeIdle := func() {
		for _, c := range idle {
			c.Close()
		}
		idle = nil
	}
	defer closeIdle()
	for range 64 { // the kernel completes the handshakes the broker cannot accept
		c, err := net.DialTimeout("tcp", b.Addr, 2*time.Second)
		if err != nil {
			break
		}
		idle = append(idle, c)
	}
	// netpoll's accept4 fails at the limit; a multishot accept armed on a
	// ring before the limit was lowered keeps the old one (the kernel reads
	// it when the request is prepared) and fills the table past it.
	waitFor(t, 20*time.Second, "the broker to run out of descriptors accepting", func() bool {
		held, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		return logCount(t, b, "accept failed, file descriptors exhausted") > 0 || uint64(len(held)) >= lowered.Cur
	})

	results := make(chan error, records)
	for i := 1; i <= records; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value(i)}, func(_ *kgo.Record, err error) { results <- err })
	}
	waitFor(t, 30*time.Second, "a put-off roll", func() bool {
		if n := logCount(t, b, "offline after I/O error"); n > 0 {
			t.Fatalf("the partition went offline (%d log lines)", n)
		}
		return logCount(t, b, "segment roll put off: out of file descriptors") > 0
	})
	if len(results) > 0 {
		t.Fatalf("a record was answered while the roll could not happen: %v", <-results)
	}
	nIdle := len(idle)
	closeIdle()
	restore()
	for i := 1; i <= records; i++ {
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("record answered %v after the descriptors came back, want success (KAFKA_STORAGE_ERROR is %v)", err, kerr.KafkaStorageError)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d records answered", i-1, records)
		}
	}
	cons := newClient(t, b, kgo.ConsumePartitions(startOffsets(topic, 1)))
	got := consumeN(t, ctx, cons, records+1, 30*time.Second)
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, value(i)) {
			t.Fatalf("offset %d: record %d %.7q, want %.7q", i, r.Offset, r.Value, value(i))
		}
	}
	t.Logf("%d records stored after %d put-off rolls were logged, %d idle connections", len(got), logCount(t, b, "segment roll put off"), nIdle)
}

// logCount counts the lines of the broker's current log that contain s.
func logCount(t *testing.T, b *Broker, s string) int {
	t.Helper()
	data, err := os.ReadFile(b.logPaths[len(b.logPaths)-1])
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte(s))
}

// TestStartOutOfDescriptorsKeepsMarkers: a broker started with a
// descriptor limit below what its segments need refuses to start, saying
// to raise the limit, and leaves every partition's clean-shutdown marker
// in place: the partitions it had opened are closed again, and one that
// ran out is not taken for damage (its indexes were "rebuilt" and its
// active segment "recovered" before). The next start at the normal limit
// trusts them all (found by the fresh-user test: `ulimit -n 500; make
// run` left 1 of 132 markers and made the next start check every active
// segment).
func TestStartOutOfDescriptorsKeepsMarkers(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("needs prlimit(1)")
	}
	const (
		topic      = "fdstart"
		partitions = 8
		records    = 4000 // x 1 KiB over 8 partitions at 16 KiB segments: ~30 segments each
	)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	b := startBroker(t, "")
	segBytes := "16384"
	if _, err := newAdmin(t, b).CreateTopic(ctx, partitions, 1, map[string]*string{"segment.bytes": &segBytes}, topic); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Value: append(fmt.Appendf(nil, "%06d", i), bytes.Repeat([]byte{'x'}, 1018)...)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Stop()
	marked := func() (n int) {
		dirs, _ := os.ReadDir(b.DataDir)
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(b.DataDir, d.Name(), ".clean_shutdown")); err == nil { // nvme.CleanShutdownFile
				n++
			}
		}
		return n
	}
	before := marked()
	if before < partitions+100 { // and the internal topics' 100
		t.Fatalf("%d clean-shutdown markers after SIGTERM, want at least %d", before, partitions+100)
	}

	runCtx, runCancel := context.WithTimeout(ctx, 60*time.Second)
	defer runCancel()
	cmd := exec.CommandContext(runCtx, prlimit, append([]string{"--nofile=300:300", "--", b.bin}, b.args()...)...)
	cmd.Dir = b.root
	out, err := cmd.CombinedOutput()
	if err == nil || runCtx.Err() != nil {
		t.Fatalf("a start with 300 descriptors did not fail (%v, %v):\n%s", err, runCtx.Err(), tailLines(out, 20))
	}
	if !bytes.Contains(out, []byte("too many open files")) || !bytes.Contains(out, []byte("ulimit -n")) {
		t.Fatalf("the failed start does not say it ran out of descriptors and what to raise:\n%s", tailLines(out, 20))
	}
	for _, s := range []string{"rebuilding segment indexes", "recovering the active segment after a clean shutdown"} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("running out of descriptors was taken for damage (%q):\n%s", s, tailLines(out, 20))
		}
	}
	if after := marked(); after != before {
		var missing []string
		dirs, _ := os.ReadDir(b.DataDir)
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(b.DataDir, d.Name(), ".clean_shutdown")); err != nil && d.IsDir() && d.Name() != "__cluster_metadata-0" {
				missing = append(missing, d.Name())
			}
		}
		t.Fatalf("%d clean-shutdown markers after the failed start, %d before; missing in %v:\n%s", after, before, missing, tailLines(out, 30))
	}

	// Every partition keeps its marker and is trusted, also one whose open
	// ran out part way (direct mode had preallocated its active segment).
	b.Start()
	if n := logCount(t, b, "without a clean shutdown"); n > 0 {
		t.Fatalf("%d partitions checked in full after the failed start", n)
	}
	cons := newClient(t, b, kgo.ConsumePartitions(startOffsets(topic, partitions)))
	if got := consumeN(t, ctx, cons, records, 30*time.Second); len(got) != records {
		t.Fatalf("%d records after the restarts, want %d", len(got), records)
	}
}

// tailLines is the last n lines of out.
func tailLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
