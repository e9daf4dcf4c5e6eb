// Command natsbench runs one ringbench workload against NATS JetStream with
// the NATS Go client (github.com/nats-io/nats.go/jetstream) and writes the
// result in ringbench's RunResult JSON shape, so ringbench can put NATS in
// the same table as ringbroker and kfake. ringbench starts nats-server,
// writes the workload (already validated, defaults filled) to a file and
// runs:
//
//	natsbench --url nats://127.0.0.1:4222 --workload w.json --broker-pid 1234 --out result.json
//
// The workload maps onto JetStream as follows:
//
//   - a topic is a stream with file storage and one replica, subjects
//     "<stream>.<partition>"; partitions are subjects of that stream (a
//     stream has one writer, so partitions only spread the subjects);
//   - a producer is a connection publishing with PublishMsgAsync: every
//     message is acknowledged by the server after it is stored. acks=all and
//     acks=1 both wait for that ack (there is one server, as there is one
//     broker); what differs is the server's fsync policy, which ringbench
//     sets per run (sync_interval: always for acks=all, as ringbroker
//     fdatasyncs before acking acks=all, and the 2-minute default for
//     acks=1). acks=0 publishes without an ack;
//   - max_buffered_records bounds the async publishes in flight
//     (PublishAsyncMaxPending, default 10,000 as franz-go's buffer);
//   - keys choose the subject (partition) by hash; they are not carried;
//   - compression other than none turns on the stream's S2 storage
//     compression (JetStream has no client-side batch compression);
//   - a consumer is an ordered consumer (no acks, deliver all) filtered to
//     its share of the partitions, or with consumer_group one durable pull
//     consumer (ack none) shared by the topic's consumers;
//   - linger, batch_max_bytes, max_inflight and topic_configs have no
//     analog and are ignored.
//
// Rates, latencies (publish: intended send time to ack; end-to-end: send
// time in the first 8 bytes of the value to delivery), warm-up, window,
// catch-up and drain follow ringbench's RunWorkload exactly.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	url := flag.String("url", "nats://127.0.0.1:4222", "NATS server URL")
	wpath := flag.String("workload", "", "workload JSON (ringbench's schema, validated)")
	pid := flag.Int("broker-pid", 0, "nats-server's pid, for its CPU seconds and peak RSS")
	out := flag.String("out", "", "result JSON file; empty writes to stdout")
	grace := flag.Duration("grace", 20*time.Second, "bound on flushing producers and draining consumers after the window")
	progress := flag.Bool("progress", true, "print a progress line every second")
	label := flag.String("label", "", "prefix of progress lines")
	flag.Parse()

	if err := run(*url, *wpath, *pid, *out, *grace, *progress, *label); err != nil {
		fmt.Fprintln(os.Stderr, "natsbench:", err)
		os.Exit(1)
	}
}

func run(url, wpath string, pid int, out string, grace time.Duration, progress bool, label string) error {
	if wpath == "" {
		return fmt.Errorf("no --workload")
	}
	b, err := os.ReadFile(wpath)
	if err != nil {
		return fmt.Errorf("cannot read workload: %w", err)
	}
	var w Workload
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("cannot parse workload %q: %w", wpath, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := RunWorkload(ctx, &w, url, pid, grace, progress, label)
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(append(data, '\n'))
		return err
	}
	return os.WriteFile(out, data, 0o644)
}
