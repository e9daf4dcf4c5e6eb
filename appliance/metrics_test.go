package appliance

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metrics"
	"github.com/twmb/franz-go/pkg/kgo"
)

func startTestBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "shards": "2",
		"offsets.topic.num.partitions": "2", "metrics.listener": "127.0.0.1:0"}
	for k, v := range props {
		p[k] = v
	}
	cfg, err := ConfigFromProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
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

// TestMetricsTwoBrokersOneProcess starts two brokers in one process (each
// with its own metrics.Set), produces to one, and checks both endpoints.
func TestMetricsTwoBrokersOneProcess(t *testing.T) {
	b1 := startTestBroker(t, nil)
	b2 := startTestBroker(t, nil)
	if b1.MetricsAddr() == nil || b2.MetricsAddr() == nil {
		t.Fatal("metrics listeners not bound")
	}
	u1, u2 := "http://"+b1.MetricsAddr().String(), "http://"+b2.MetricsAddr().String()
	for _, u := range []string{u1, u2} {
		if c, _ := get(t, u+"/readyz"); c != 200 {
			t.Errorf("%s/readyz = %d", u, c)
		}
		if c, _ := get(t, u+"/healthz"); c != 200 {
			t.Errorf("%s/healthz = %d", u, c)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.Addr().String()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("m"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	_, m1 := get(t, u1+"/metrics")
	_, m2 := get(t, u2+"/metrics")
	for _, want := range []string{`ringbroker_topic_messages_in_total{topic="m"} 10`, `ringbroker_log_end_offset{topic="m",partition="0"} 10`,
		`ringbroker_request_total{api="Produce"} 10`, `ringbroker_shard_busy_seconds_total{shard="1"}`, `ringbroker_group_count{state="Stable"} 0`,
		"ringbroker_purgatory_produce_size 0", "ringbroker_log_flush_duration_seconds_count 10", "process_cpu_seconds_total"} {
		if !strings.Contains(m1, want) {
			t.Errorf("broker 1 metrics lack %q", want)
		}
	}
	if strings.Contains(m2, `topic="m"`) {
		t.Errorf("broker 2 reports broker 1's topic")
	}
	b1.Close()
	if _, err := http.Get(u1 + "/metrics"); err == nil {
		t.Errorf("metrics still served after Close")
	}
}

func TestMetricsDisabledAndBadListener(t *testing.T) {
	b := startTestBroker(t, map[string]string{"metrics.listener": "none"})
	if b.MetricsAddr() != nil {
		t.Errorf("metrics.listener=none bound %v", b.MetricsAddr())
	}
	if _, err := ConfigFromProperties(map[string]string{"metrics.listener": "nonsense"}); err == nil {
		t.Errorf("metrics.listener=nonsense accepted")
	}
	// A port in use is logged; the broker serves anyway.
	b2 := startTestBroker(t, nil)
	b3 := startTestBroker(t, map[string]string{"metrics.listener": b2.MetricsAddr().String()})
	if b3.MetricsAddr() != nil {
		t.Errorf("second broker bound the same metrics port")
	}
}

// tailHits and tailMisses are b's fetch tail reads and misses so far.
func tailHits(b *Broker) uint64 {
	h, _ := b.metrics.TailReads()
	return h
}

func tailMisses(b *Broker) uint64 {
	_, m := b.metrics.TailReads()
	return m
}

// bytesOutCounter reads a topic's ringbroker_topic_bytes_out_total.
type bytesOutCounter struct {
	m     *metrics.Metrics
	topic string
}

func (c bytesOutCounter) Get() uint64 { return c.m.TopicBytesOut(c.topic) }
