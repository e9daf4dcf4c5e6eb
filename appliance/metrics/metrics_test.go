package metrics

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/ioring"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func scrape(m *Metrics) string {
	var sb strings.Builder
	m.set.WritePrometheus(&sb)
	return sb.String()
}

func TestCountResponseErrors(t *testing.T) {
	m := New(Options{APIKeys: []int16{0, 1, 20}})
	resp := kmsg.NewPtrDeleteTopicsResponse()
	for _, code := range []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code} {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.ErrorCode = code
		resp.Topics = append(resp.Topics, rt)
	}
	m.RequestDone(20, time.Now(), resp)
	pr := kmsg.NewPtrProduceResponse()
	pt := kmsg.NewProduceResponseTopic()
	pp := kmsg.NewProduceResponseTopicPartition()
	pp.ErrorCode = kerr.NotLeaderForPartition.Code
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	m.RequestDone(0, time.Now(), pr)
	m.RequestDone(20, time.Now(), &wire.FixedVersion{Resp: resp})
	m.RequestDone(1, time.Now(), wire.Close{Reason: "x"})
	m.RequestDone(1, time.Time{}, nil)
	m.RequestDone(99, time.Now(), resp) // not a registered API: nothing counted
	out := scrape(m)
	for _, want := range []string{`ringbroker_request_errors_total{api="DeleteTopics",error="UNKNOWN_TOPIC_OR_PARTITION"} 4`,
		`ringbroker_request_errors_total{api="Produce",error="NOT_LEADER_FOR_PARTITION"} 1`, `ringbroker_request_total{api="DeleteTopics"} 2`,
		`ringbroker_request_errors_total{api="Fetch",error="UNKNOWN_SERVER_ERROR"} 1`, `ringbroker_request_total{api="Fetch"} 2`} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(out, "Key99") || strings.Contains(out, `api="ListGroups"`) {
		t.Errorf("an API without metrics was counted:\n%s", out)
	}
	// The nil receiver is a no-op, as in brokers built without New.
	var nilm *Metrics
	nilm.RequestDone(0, time.Now(), pr)
	nilm.Produced("x", 1, 1)
	nilm.AddFetchPurgatory(1)
	nilm.CountError(1, 1)
	nilm.Stop()
	if nilm.Addr() != nil || nilm.FetchPurgatory() != 0 || nilm.Set() != nil {
		t.Fatal("a nil Metrics reports values")
	}
}

func TestTopicAndPurgatoryCounters(t *testing.T) {
	m := New(Options{})
	m.Produced("orders", 1000, 10)
	m.Produced("orders", 24, 2)
	m.FetchedBytes("orders", 7)
	m.AddProducePurgatory(1)
	m.AddFetchPurgatory(2)
	m.AddFetchPurgatory(-1)
	m.TailRead(true)
	m.TailRead(false)
	m.TailRead(false)
	m.ConnRejected("max_connections_per_ip")
	m.ConnWarningSuppressed()
	out := scrape(m)
	for _, want := range []string{`ringbroker_topic_bytes_in_total{topic="orders"} 1024`, `ringbroker_topic_messages_in_total{topic="orders"} 12`,
		`ringbroker_topic_bytes_out_total{topic="orders"} 7`, "ringbroker_purgatory_produce_size 1", "ringbroker_purgatory_fetch_size 1",
		"ringbroker_fetch_tail_reads_total 1", "ringbroker_fetch_tail_misses_total 2", "ringbroker_network_connections 0",
		`ringbroker_network_connections_rejected_total{reason="max_connections_per_ip"} 1`,
		`ringbroker_network_connections_rejected_total{reason="max_connections"} 0`, "ringbroker_connection_warnings_suppressed_total 1"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, out)
		}
	}
	if h, mi := m.TailReads(); h != 1 || mi != 2 {
		t.Errorf("TailReads = %d, %d", h, mi)
	}
	if m.TopicBytesOut("orders") != 7 || m.FetchPurgatory() != 1 || m.RejectedConnections("max_connections_per_ip") != 1 || m.SuppressedConnWarnings() != 1 {
		t.Error("accessors disagree with the scrape")
	}
}

// fakeSource is a Source with fixed stats.
type fakeSource struct{ st Stats }

func (f fakeSource) Connections() int { return 3 }
func (f fakeSource) Stats() Stats     { return f.st }

func TestWriteShardMetrics(t *testing.T) {
	closing := make(chan struct{})
	src := fakeSource{Stats{
		Shards: []ShardStat{{Tasks: 5, Busy: 1500 * time.Millisecond, Depth: 2}, {Tasks: 7, IsRing: true, Loop: ioring.LoopStats{Sleeps: 4}}},
		Partitions: []PartitionStat{{Topic: "b", Partition: 0, Start: 1, End: 9, Size: 100},
			{Topic: "a", Partition: 10, Start: -1, End: -1, Offline: true}, {Topic: "a", Partition: 2, End: 3}},
		MetadataLog: true, MetadataOffline: true,
		Groups:       []GroupCount{{"Stable", 2}, {"Empty", 0}},
		GroupOffsets: 11,
	}}
	m := New(Options{Source: src, Closing: closing})
	var sb strings.Builder
	m.WriteShardMetrics(&sb)
	if sb.Len() != 0 {
		t.Fatalf("wrote before Start: %q", sb.String())
	}
	m.Start() // no listener: marks ready only
	out := scrape(m)
	for _, want := range []string{
		`ringbroker_shard_busy_seconds_total{shard="0"} 1.5`, `ringbroker_shard_tasks_total{shard="1"} 7`, `ringbroker_shard_queue_depth{shard="0"} 2`,
		`ringbroker_shard_loop_sleeps_total{shard="1"} 4`, "ringbroker_network_connections 3",
		"ringbroker_log_start_offset{topic=\"a\",partition=\"2\"} 0\nringbroker_log_start_offset{topic=\"a\",partition=\"10\"} -1\nringbroker_log_start_offset{topic=\"b\",partition=\"0\"} 1\n",
		`ringbroker_log_end_offset{topic="b",partition="0"} 9`, `ringbroker_log_size_bytes{topic="b",partition="0"} 100`,
		"ringbroker_partitions_offline 1", "ringbroker_metadata_log_offline 1", "ringbroker_partitions 3",
		"ringbroker_group_count{state=\"Stable\"} 2\nringbroker_group_count{state=\"Empty\"} 0\nringbroker_group_offsets_count 11\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `ringbroker_shard_loop_sleeps_total{shard="0"}`) {
		t.Error("a netpoll shard wrote ring counters")
	}
	close(closing)
	sb.Reset()
	m.WriteShardMetrics(&sb)
	if sb.Len() != 0 {
		t.Fatalf("wrote while closing: %q", sb.String())
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHTTPEndpoints(t *testing.T) {
	if Enabled("") || Enabled("none") || !Enabled("127.0.0.1:0") {
		t.Fatal("Enabled")
	}
	closing := make(chan struct{})
	m := New(Options{Listener: "127.0.0.1:0", Closing: closing, APIKeys: []int16{0}})
	if m.Addr() != nil {
		t.Fatal("bound before Start")
	}
	m.Start()
	defer m.Stop()
	if m.Addr() == nil {
		t.Fatal("not bound")
	}
	u := "http://" + m.Addr().String()
	if c, body := get(t, u+"/metrics"); c != 200 || !strings.Contains(body, `ringbroker_request_total{api="Produce"} 0`) ||
		!strings.Contains(body, "# TYPE ringbroker_request_duration_seconds histogram") {
		t.Fatalf("/metrics %d:\n%s", c, body)
	}
	_, body := get(t, u+"/metrics")
	checkExposition(t, body)
	if c, _ := get(t, u+"/readyz"); c != 200 {
		t.Fatalf("/readyz %d", c)
	}
	if c, _ := get(t, u+"/healthz"); c != 200 {
		t.Fatalf("/healthz %d", c)
	}
	close(closing)
	if c, _ := get(t, u+"/healthz"); c != http.StatusServiceUnavailable {
		t.Fatalf("/healthz while closing %d", c)
	}
	m.Stop()
	if _, err := http.Get(u + "/readyz"); err == nil {
		t.Fatal("served after Stop")
	}
	// A listener that cannot be bound (the address is taken) leaves the
	// metrics unserved.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	m2 := New(Options{Listener: taken.Addr().String(), Closing: closing})
	m2.Start()
	defer m2.Stop()
	if m2.Addr() != nil {
		t.Fatal("bound a taken address")
	}
}

func BenchmarkProduced(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.Produced("orders", 1000, 10)
	}
}

func TestHotPathAllocs(t *testing.T) {
	m := New(Options{APIKeys: []int16{0}})
	m.Produced("orders", 1, 1)
	for name, fn := range map[string]func(){
		"Produced":           func() { m.Produced("orders", 1000, 10) },
		"FetchedBytes":       func() { m.FetchedBytes("orders", 10) },
		"AddFetchPurgatory":  func() { m.AddFetchPurgatory(1); m.AddFetchPurgatory(-1) },
		"TailRead":           func() { m.TailRead(true) },
		"RequestDone acks=0": func() { m.RequestDone(0, time.Time{}, nil) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s allocates %v times", name, n)
		}
	}
}

// checkExposition checks a /metrics body: no "# HELP name" line without text,
// and every sample's family has a TYPE line before it.
func checkExposition(t *testing.T, body string) {
	t.Helper()
	typed := map[string]bool{}
	samples := 0
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(line, "# HELP "):
			if f := strings.Fields(line); len(f) < 4 {
				t.Errorf("/metrics has an empty HELP line %q", line)
			}
		case strings.HasPrefix(line, "# TYPE "):
			if f := strings.Fields(line); len(f) == 4 {
				typed[f[2]] = true
			}
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			samples++
			name, _, _ := strings.Cut(line, "{")
			name, _, _ = strings.Cut(name, " ")
			family := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if typed[strings.TrimSuffix(name, suf)] {
					family = strings.TrimSuffix(name, suf)
				}
			}
			if !typed[family] {
				t.Errorf("/metrics sample %q has no TYPE line for %q before it", line, family)
			}
		}
	}
	if samples == 0 {
		t.Errorf("/metrics has no samples:\n%s", body)
	}
}

func TestAppendWithoutEmptyHelp(t *testing.T) {
	in := "# HELP a\n# TYPE a gauge\na 1\n# HELP b some text\n# TYPE b counter\nb 2\n# HELP c"
	want := "# TYPE a gauge\na 1\n# HELP b some text\n# TYPE b counter\nb 2\n"
	if got := string(appendWithoutEmptyHelp(nil, []byte(in))); got != want {
		t.Errorf("appendWithoutEmptyHelp = %q, want %q", got, want)
	}
}
