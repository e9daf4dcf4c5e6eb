package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/appliance"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A signal that arrives while the broker shuts down does not cut the
// shutdown short: it is logged with what the shutdown waits for, and the
// shutdown completes (the partitions reopen clean).
func TestSecondSignalReportsShutdownStage(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir,
		"metrics.listener": "none", "num.partitions": "1"}
	cfg, err := appliance.ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	b, err := appliance.New(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const parts = 200
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		cl.Produce(ctx, &kgo.Record{Topic: "t", Partition: p, Value: []byte("v")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if got := b.ShutdownStage(); got != "" {
		t.Fatalf("ShutdownStage before Close = %q, want empty", got)
	}

	// The second signal arrives once the shutdown has begun, as when an
	// operator presses Ctrl-C twice (closing 200 partitions, each with its
	// syncs, takes far longer than this wait).
	var logs bytes.Buffer
	sigs := make(chan os.Signal, 1)
	go func() {
		for b.ShutdownStage() == "" {
			runtime.Gosched()
		}
		sigs <- syscall.SIGTERM
	}()
	if err := closeReporting(b, sigs, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "shutdown in progress") || !strings.Contains(out, "signal=terminated") {
		t.Fatalf("no report of the second signal:\n%s", out)
	}
	known := false
	for _, s := range []string{"closing client connections", "stopping the log cleaner", "writing share-group and log start offsets",
		"closing partitions (", "stopping shards", "closing the metadata log"} {
		known = known || strings.Contains(out, "waiting_for=\""+s)
	}
	if !known {
		t.Fatalf("the report names no shutdown stage:\n%s", out)
	}
	if got, want := b.ShutdownStage(), "closing the metadata log"; got != want {
		t.Errorf("ShutdownStage after Close = %q, want %q", got, want)
	}

	// The shutdown went to the end: every partition reopens, with its record.
	cfg2, _ := appliance.ConfigFromProperties(props)
	b2, err := appliance.New(cfg2, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Start(); err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b2.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	ends, err := kadm.NewClient(cl2).ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 1 {
			t.Errorf("partition %d after restart: end offset %d, err %v", o.Partition, o.Offset, o.Err)
		}
		n++
	})
	if n != parts {
		t.Fatalf("%d partitions after restart, want %d", n, parts)
	}
	if strings.Contains(logs.String(), "without a clean shutdown") || strings.Contains(logs.String(), "rebuilding segment indexes") {
		t.Errorf("restart after the reported shutdown found unclean logs:\n%s", logs.String())
	}
}
