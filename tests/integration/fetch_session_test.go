package integration

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Incremental fetch sessions (KIP-227) with real clients over 1,000
// partitions: franz-go consumes through a session (the broker's
// ringbroker_fetch_sessions shows it, and its incremental fetches carry
// only partitions with data), librdkafka (kcat) reads the same records
// with its own fetches; every record produced comes back exactly once.
func TestFetchSessions1000Partitions(t *testing.T) {
	mport := freePort(t)
	b := startBroker(t, "", fmt.Sprintf("metrics.listener=127.0.0.1:%d", mport))
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const parts, records = 1000, 5000
	// Creating 1,000 partitions can outlast the client's request timeout on
	// a loaded machine; its retry then finds the topic made.
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, nil, "sessions"); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Topic: "sessions", Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("sessions"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := make([]int, records)
	got := 0
	for got < records && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			i, err := strconv.Atoi(string(r.Value))
			if err != nil || i < 0 || i >= records {
				t.Fatalf("record value %q", r.Value)
			}
			seen[i]++
			got++
		})
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("record %d seen %d times by franz-go", i, n)
		}
	}
	m := scrape(t, metricsURL)
	if m["ringbroker_fetch_sessions"] < 1 || m["ringbroker_fetch_session_partitions"] != parts {
		t.Fatalf("franz-go consumed without a session over all %d partitions: sessions %v, partitions %v",
			parts, m["ringbroker_fetch_sessions"], m["ringbroker_fetch_session_partitions"])
	}
	// Caught up, the session's fetches are incremental and answer nothing:
	// no new records arrive, and polling goes on without errors.
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	fs := cons.PollFetches(pctx)
	pcancel()
	if n := fs.NumRecords(); n != 0 {
		t.Fatalf("%d records after catching up", n)
	}

	kcat := needTool(t, "kcat")
	out, err := exec.CommandContext(ctx, kcat, "-b", b.Addr, "-C", "-t", "sessions", "-e", "-q", "-f", "%s\n").Output()
	if err != nil {
		t.Fatalf("kcat -C: %v", err)
	}
	kseen := make([]int, records)
	for _, line := range strings.Fields(string(out)) {
		i, err := strconv.Atoi(line)
		if err != nil || i < 0 || i >= records {
			t.Fatalf("kcat printed %q", line)
		}
		kseen[i]++
	}
	for i, n := range kseen {
		if n != 1 {
			t.Fatalf("record %d seen %d times by kcat", i, n)
		}
	}
}
