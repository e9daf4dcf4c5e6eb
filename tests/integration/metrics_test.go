package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// scrape reads url (Prometheus text) into name{labels} -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			out[line] = 1 // "# TYPE name kind" lines, for the type checks
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("malformed metrics line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("malformed value in %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return out
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsUnderLoad produces and consumes known amounts and checks that
// the byte, message and request counters move by as much.
func TestMetricsUnderLoad(t *testing.T) {
	mport := freePort(t)
	b := startBroker(t, "", fmt.Sprintf("metrics.listener=127.0.0.1:%d", mport))
	base := fmt.Sprintf("http://127.0.0.1:%d", mport)
	if c := httpStatus(t, base+"/healthz"); c != 200 {
		t.Errorf("/healthz: %d, want 200", c)
	}
	if c := httpStatus(t, base+"/readyz"); c != 200 {
		t.Errorf("/readyz: %d, want 200", c)
	}
	ctx := t.Context()
	createTopic(t, ctx, b, "load", 4)
	before := scrape(t, base+"/metrics")

	const n = 4000
	var payload int64
	var written batchBytes
	cl := newClient(t, b, kgo.DefaultProduceTopic("load"), kgo.WithHooks(&written), kgo.ProducerBatchCompression(kgo.NoCompression()))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = genRecord(7, "load", -1, i)
		recs[i].Topic = ""
		payload += int64(len(recs[i].Key) + len(recs[i].Value))
	}
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cancel()
	consumer := newClient(t, b, kgo.ConsumePartitions(startOffsets("load", 4)))
	consumeN(t, ctx, consumer, n, 60*time.Second)

	after := scrape(t, base+"/metrics")
	for _, typ := range []string{"ringbroker_request_duration_seconds histogram", "ringbroker_log_flush_duration_seconds histogram"} {
		if after["# TYPE "+typ] != 1 {
			t.Errorf("/metrics has no \"# TYPE %s\" line", typ)
		}
	}
	delta := func(name string) float64 { return after[name] - before[name] }

	if got := delta(`ringbroker_topic_messages_in_total{topic="load"}`); got != n {
		t.Errorf("messages in moved by %v, want %d", got, n)
	}
	bytesIn := delta(`ringbroker_topic_bytes_in_total{topic="load"}`)
	if bytesIn < float64(payload) || int64(bytesIn) != written.total() {
		t.Errorf("bytes in moved by %v, want the %d batch bytes the producer wrote (payload %d)", bytesIn, written.total(), payload)
	}
	if got := delta(`ringbroker_topic_bytes_out_total{topic="load"}`); got < bytesIn {
		t.Errorf("bytes out moved by %v, want at least the %v bytes in (everything was consumed)", got, bytesIn)
	}
	produces := delta(`ringbroker_request_total{api="Produce"}`)
	if produces < 1 || int64(produces) > written.batches() {
		t.Errorf("Produce requests moved by %v, want 1..%d (one per request, at most one per batch)", produces, written.batches())
	}
	if got := delta(`ringbroker_request_duration_seconds_count{api="Produce"}`); got != produces {
		t.Errorf("Produce latency count moved by %v, want %v", got, produces)
	}
	if got := delta(`ringbroker_request_total{api="Fetch"}`); got < 1 {
		t.Errorf("Fetch requests moved by %v, want > 0", got)
	}
	if got := delta(`ringbroker_request_total{api="Metadata"}`); got < 1 {
		t.Errorf("Metadata requests moved by %v, want > 0", got)
	}
	var end float64
	for p := 0; p < 4; p++ {
		end += after[fmt.Sprintf(`ringbroker_log_end_offset{topic="load",partition="%d"}`, p)]
	}
	if end != n {
		t.Errorf("sum of log end offsets = %v, want %d", end, n)
	}
	// acks=all produces are group-committed: the fsync counters and latency moved.
	if got := delta("ringbroker_log_flush_duration_seconds_count"); got < 1 {
		t.Errorf("flush latency count moved by %v, want > 0", got)
	}
	busy := 0.0
	for k, v := range after {
		if strings.HasPrefix(k, "ringbroker_shard_busy_seconds_total{") {
			busy += v - before[k]
		}
	}
	if busy <= 0 {
		t.Errorf("shard busy seconds did not move")
	}
	// uring with direct I/O writes segments from block buffers registered
	// with the shards' rings (io.uring.fixed.buffers, on by default).
	var fixedWrites, registered float64
	writevSeries := 0
	for k, v := range after {
		switch {
		case strings.HasPrefix(k, "ringbroker_log_ring_fixed_writes_total{"):
			fixedWrites += v - before[k]
		case strings.HasPrefix(k, "ringbroker_log_cache_buffers_registered{"):
			registered += v
		case strings.HasPrefix(k, "ringbroker_log_ring_writevs_total{"):
			writevSeries++
		}
	}
	if writevSeries == 0 {
		t.Errorf("no ringbroker_log_ring_writevs_total series")
	}
	if os.Getenv("RB_ENGINE") == "uring" && os.Getenv("RB_IO_MODE") == "direct" {
		if fixedWrites < 1 || registered < 1 {
			t.Errorf("uring with direct I/O: %v writes from registered buffers, %v buffers registered; want both > 0", fixedWrites, registered)
		}
	} else if fixedWrites != 0 || registered != 0 {
		t.Errorf("%v writes from registered buffers, %v buffers registered without uring and direct I/O; want 0", fixedWrites, registered)
	}
	if _, ok := after["ringbroker_purgatory_produce_size"]; !ok {
		t.Errorf("no ringbroker_purgatory_produce_size")
	}
	if _, ok := after["ringbroker_purgatory_fetch_size"]; !ok {
		t.Errorf("no ringbroker_purgatory_fetch_size")
	}

	// A produce to an unknown partition counts as an error of its code.
	bad := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0), kgo.RequestRetries(0))
	ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = bad.ProduceSync(ectx, &kgo.Record{Topic: "load", Partition: 9, Value: []byte("x")})
	cancel()
	_, _ = newAdmin(t, b).ListTopics(ctx, "does-not-exist")
	waitFor(t, 10*time.Second, "an UNKNOWN_TOPIC_OR_PARTITION error count", func() bool {
		m := scrape(t, base+"/metrics")
		return m[`ringbroker_request_errors_total{api="Metadata",error="UNKNOWN_TOPIC_OR_PARTITION"}`] > 0
	})
}

// batchBytes sums the bytes of the record batches a producer wrote, as they
// are stored (the 61-byte header plus the records).
type batchBytes struct {
	n, bytes int64
}

func (b *batchBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.n++
	b.bytes += int64(m.CompressedBytes) + 61 // records plus the batch v2 header
}

func (b *batchBytes) total() int64   { return b.bytes }
func (b *batchBytes) batches() int64 { return b.n }

// TestMetricsListenerDisabled checks that metrics.listener=none starts no
// listener and the broker still serves.
func TestMetricsListenerDisabled(t *testing.T) {
	mport := freePort(t)
	b := startBroker(t, "", "metrics.listener=none")
	_ = b
	if _, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)); err == nil {
		t.Errorf("something answers on the free port %d", mport)
	}
}
