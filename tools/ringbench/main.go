// Command ringbench is ringbroker's end-to-end load tool: it runs workload
// files (OpenMessaging Benchmark style, JSON) with franz-go producers and
// consumers against ringbroker processes it starts itself (one fresh broker
// and data directory per workload, target and round, so several engine or
// I/O configurations run side by side in one run) or against an external
// cluster, measures the machine's limits in the same run, and writes a JSON
// report plus a markdown table. With --rounds N each workload runs its
// targets N times, in the given order in even rounds and reversed in odd
// ones; with two or more targets a second table gives each target's ratios
// to the first one's (broker CPU s/GB, publish and end-to-end p99, publish
// MB/s) as the median over the rounds (see Compare).
//
// Usage:
//
//	ringbench [flags] workload.json...
//	ringbench --suite bench/suites/short.json --target ringbroker:shards=2,log.io.mode=buffered
//	ringbench --brokers 127.0.0.1:9092 bench/workloads/latency-10mbps.json
//	ringbench --suite bench/suites/short.json --target ringbroker --target kfake --target nats
//	ringbench --suite bench/suites/engines.json --rounds 3 --target ringbroker:io.engine=netpoll --target ringbroker:io.engine=uring
//
// Targets kfake and nats are peers (see PeerBins and RunNATS) built from the separate Go
// module bench/peers into --peers-bin; bench/run-short.sh builds them.
//
// Measurements: publish rate (records/s, MB/s of values, acked records sent
// inside the window), publish latency (send to ack; from the intended send
// time when the workload is rate-limited, so no coordinated omission) and
// end-to-end latency (send time carried in the first 8 bytes of each value
// to consume time) as HDR-style histograms, consumer backlog, and the
// broker's CPU seconds (utime+stime from /proc/<pid>/stat) and peak RSS
// (VmHWM). Every run ends by warm-up + duration + grace.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ringbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var targets multiFlag
	flag.Var(&targets, "target", "target to run against, repeatable: ringbroker[:key=value,...] (a broker started by ringbench with these --override settings), kfake[:sync-writes=true], nats[:sync=acks|always|default] or external:host:port (default ringbroker)")
	brokers := flag.String("brokers", "", "shorthand for --target external:host:port[,host:port]")
	suite := flag.String("suite", "", "suite file: a list of workloads with overrides (bench/suites/*.json)")
	brokerBin := flag.String("broker-bin", "", "ringbroker binary; empty builds ./tools/ringbroker from --repo")
	repo := flag.String("repo", ".", "repository root (to build the broker and find config)")
	config := flag.String("config", "config/server.properties", "server.properties for started brokers, relative to --repo")
	dataDir := flag.String("data-dir", "bench/results/tmp", "where brokers keep their data and limits are measured")
	outDir := flag.String("out-dir", "bench/results", "where the JSON report and latest.md go")
	duration := flag.Duration("duration", 0, "override every workload's duration")
	warmup := flag.Duration("warmup", -1, "override every workload's warm-up")
	grace := flag.Duration("grace", 20*time.Second, "bound on flushing producers and draining consumers after the window")
	limits := flag.Bool("limits", true, "measure disk and loopback limits in the same run")
	limitBytes := flag.Int64("limits-bytes", 512<<20, "O_DIRECT test file size")
	limitTime := flag.Duration("limits-time", 4*time.Second, "cap per disk limit phase")
	keep := flag.Bool("keep-data", false, "keep broker data directories")
	progress := flag.Bool("progress", true, "print a progress line every second")
	peersBin := flag.String("peers-bin", "bench/peers/bin", "directory with the peer binaries kfake, natsbench and nats-server (built by bench/run-short.sh)")
	natsServer := flag.String("nats-server", "", "nats-server binary; empty uses --peers-bin's, else nats-server on PATH")
	rounds := flag.Int("rounds", 1, "run each workload's list of targets this many times, in the given order in even rounds and reversed in odd ones (so drift favours no target); the comparison table takes the median over rounds")
	skipFallback := flag.Bool("skip-unavailable-engines", false, "drop ringbroker targets whose broker reports a different io.engine or log.io.mode than asked (probed once before the runs) instead of running the fallback")
	flag.Parse()
	if *rounds < 1 {
		return fmt.Errorf("--rounds %d: want at least 1", *rounds)
	}

	if *brokers != "" {
		targets = append(targets, "external:"+*brokers)
	}
	if len(targets) == 0 {
		targets = append(targets, "ringbroker")
	}
	var tgs []Target
	for _, s := range targets {
		t, err := ParseTarget(s)
		if err != nil {
			return err
		}
		tgs = append(tgs, t)
	}

	var workloads []*Workload
	if *suite != "" {
		_, ws, err := LoadSuite(*suite)
		if err != nil {
			return err
		}
		workloads = append(workloads, ws...)
	}
	for _, f := range flag.Args() {
		w, err := LoadWorkload(f, nil)
		if err != nil {
			return err
		}
		workloads = append(workloads, w)
	}
	if len(workloads) == 0 {
		return fmt.Errorf("no workloads: give workload files or --suite")
	}
	for _, w := range workloads {
		if *duration > 0 {
			w.Duration = Duration(*duration)
		}
		if *warmup >= 0 {
			w.Warmup = Duration(*warmup)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := &Report{Tool: "ringbench", Started: time.Now(), Host: hostInfo(), Rounds: *rounds}
	runID := rep.Started.Format("20060102-150405")
	root, err := filepath.Abs(filepath.Join(*dataDir, runID))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("cannot create data dir: %w", err)
	}
	if !*keep {
		defer os.RemoveAll(root)
	}

	rep.Host.DataDirFS = filesystemOf(root)
	peers := PeerBins{
		Kfake:      filepath.Join(*peersBin, "kfake"),
		NATSServer: *natsServer,
		NATSBench:  filepath.Join(*peersBin, "natsbench"),
	}
	if peers.NATSServer == "" {
		peers.NATSServer = filepath.Join(*peersBin, "nats-server")
		if _, err := os.Stat(peers.NATSServer); err != nil {
			if p, err := exec.LookPath("nats-server"); err == nil {
				peers.NATSServer = p
			}
		}
	}
	needBroker := false
	for _, t := range tgs {
		needBroker = needBroker || t.Kind == "ringbroker"
		if err := peers.check(t.Kind); err != nil {
			return err
		}
	}
	bin := *brokerBin
	cfg := *config
	if !filepath.IsAbs(cfg) {
		cfg = filepath.Join(*repo, cfg)
	}
	if needBroker && bin == "" {
		bin = filepath.Join(root, "ringbroker")
		fmt.Fprintf(os.Stderr, "building ringbroker into %s\n", bin)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./tools/ringbroker")
		cmd.Dir = *repo
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("cannot build ringbroker: %w", err)
		}
	}

	if *skipFallback {
		tgs = probeEngines(ctx, tgs, bin, cfg, root, rep)
	}

	if *limits {
		fmt.Fprintf(os.Stderr, "measuring limits in %s ...\n", root)
		rep.Limits = MeasureLimits(root, LimitOpts{FileBytes: *limitBytes, PhaseTime: *limitTime, SyncOps: 2000, TCPTime: 2 * time.Second})
		l := rep.Limits
		fmt.Fprintf(os.Stderr, "limits: O_DIRECT write %.0f MB/s, read %.0f MB/s, 4 KiB write+fdatasync p50 %.2f ms p99 %.2f ms, loopback TCP %.0f MB/s %v\n",
			l.DirectWriteMBPS, l.DirectReadMBPS, l.FdatasyncP50Ms, l.FdatasyncP99Ms, l.LoopbackTCPMBPS, l.Errors)
	}

	// Each workload runs its rounds back to back; RoundOrder alternates the
	// targets' order from round to round.
	type slot struct{ wi, round, ti int }
	var slots []slot
	for wi := range workloads {
		for round := range *rounds {
			for _, ti := range RoundOrder(len(tgs), round) {
				slots = append(slots, slot{wi, round, ti})
			}
		}
	}
	for _, sl := range slots {
		if ctx.Err() != nil {
			break
		}
		wi, w, round, ti, t := sl.wi, workloads[sl.wi], sl.round, sl.ti, tgs[sl.ti]
		label := fmt.Sprintf("[%s @ %s]", w.Name, t.Name)
		if *rounds > 1 {
			label = fmt.Sprintf("[%s @ %s, round %d of %d]", w.Name, t.Name, round+1, *rounds)
		}
		fmt.Fprintf(os.Stderr, "%s starting\n", label)
		var r *RunResult
		switch t.Kind {
		case "ringbroker":
			dir := filepath.Join(root, fmt.Sprintf("run-%02d-%02d-r%d", wi, ti, round))
			b, err := StartBroker(ctx, bin, cfg, dir, t)
			if err != nil {
				r = &RunResult{Workload: w, Started: time.Now(), Error: err.Error()}
				break
			}
			r = RunWorkload(ctx, w, []string{b.Addr}, b.Pid(), RunOpts{Grace: *grace, Progress: *progress, Label: label})
			if b.Exited() {
				r.Error = strings.TrimSpace(r.Error + "\nbroker exited during the run; log tail:\n" + b.LogTail(2000))
			}
			b.Stop()
			if !*keep {
				os.RemoveAll(dir)
			}
		case "kfake", "nats":
			dir := filepath.Join(root, fmt.Sprintf("run-%02d-%02d-r%d", wi, ti, round))
			var p *Broker
			var err error
			if t.Kind == "kfake" {
				p, err = StartKfake(ctx, peers.Kfake, dir, t)
			} else {
				p, err = StartNATS(ctx, peers.NATSServer, dir, natsSyncAlways(t, w))
			}
			if err != nil {
				r = &RunResult{Workload: w, Started: time.Now(), Error: err.Error()}
				break
			}
			opts := RunOpts{Grace: *grace, Progress: *progress, Label: label}
			if t.Kind == "kfake" {
				r = RunWorkload(ctx, w, []string{p.Addr}, p.Pid(), opts)
			} else {
				r = RunNATS(ctx, peers.NATSBench, w, p.Addr, p.Pid(), dir, opts)
			}
			if p.Exited() {
				r.Error = strings.TrimSpace(r.Error + "\n" + t.Kind + " exited during the run; log tail:\n" + p.LogTail(2000))
			}
			p.Stop()
			if !*keep {
				os.RemoveAll(dir)
			}
		case "external":
			r = RunWorkload(ctx, w, t.Brokers, 0, RunOpts{Grace: *grace, Progress: *progress, Label: label})
		}
		r.Target, r.Round = t, round
		ComputeRatios(r, rep.Limits)
		rep.Runs = append(rep.Runs, r)
		printRun(r, *rounds)
	}
	rep.Finished = time.Now()
	names := make([]string, len(tgs))
	for i, t := range tgs {
		names[i] = t.Name
	}
	rep.Comparisons = Compare(names, rep.Runs)

	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	host := nonName.ReplaceAllString(rep.Host.Hostname, "-")
	jsonPath := filepath.Join(*outDir, rep.Started.Format("2006-01-02T15-04-05")+"-"+host+".json")
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, data, 0o644); err != nil {
		return err
	}
	mdPath := filepath.Join(*outDir, "latest.md")
	f, err := os.Create(mdPath)
	if err != nil {
		return err
	}
	WriteMarkdown(f, rep)
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", jsonPath, mdPath)
	WriteMarkdown(os.Stdout, rep)
	for _, r := range rep.Runs {
		if r.Error != "" {
			return fmt.Errorf("%d of %d runs reported errors", countErr(rep.Runs), len(rep.Runs))
		}
	}
	return ctx.Err()
}

// probeEngines starts one broker per ringbroker target that asks for an
// io.engine or log.io.mode and drops the target when the broker's
// "ringbroker listening" line reports something else (a fallback), noting
// it in rep.Skipped.
func probeEngines(ctx context.Context, tgs []Target, bin, cfg, root string, rep *Report) []Target {
	var keep []Target
	for i, t := range tgs {
		wantEngine, wantMode := t.Overrides["io.engine"], t.Overrides["log.io.mode"]
		if t.Kind != "ringbroker" || (wantEngine == "" && wantMode == "") {
			keep = append(keep, t)
			continue
		}
		dir := filepath.Join(root, fmt.Sprintf("probe-%02d", i))
		b, err := StartBroker(ctx, bin, cfg, dir, t)
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: cannot start: %s", t.Name, firstLine(err.Error())))
			continue
		}
		engine, mode, ok := b.EngineLine()
		b.Stop()
		os.RemoveAll(dir)
		switch {
		case !ok:
			keep = append(keep, t) // no line to check against: run it
		case (wantEngine != "" && wantEngine != engine) || (wantMode != "" && wantMode != mode):
			msg := fmt.Sprintf("%s: the broker runs io.engine=%s log.io.mode=%s", t.Name, engine, mode)
			fmt.Fprintf(os.Stderr, "skipping %s\n", msg)
			rep.Skipped = append(rep.Skipped, msg)
		default:
			keep = append(keep, t)
		}
	}
	return keep
}

func countErr(rs []*RunResult) int {
	n := 0
	for _, r := range rs {
		if r.Error != "" {
			n++
		}
	}
	return n
}

// printRun prints r's summary line; with several rounds the label names
// r's round, as the progress lines do.
func printRun(r *RunResult, rounds int) {
	round := ""
	if rounds > 1 {
		round = fmt.Sprintf(", round %d of %d", r.Round+1, rounds)
	}
	fmt.Fprintf(os.Stderr, "[%s @ %s%s] publish %.0f rec/s %.1f MB/s p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms | e2e p50 %.2f p99 %.2f ms | consume %.1f MB/s | errors %d",
		r.Workload.Name, r.Target.Name, round, r.Publish.RecordsPS, r.Publish.MBPS, r.PublishLatency.P50Ms, r.PublishLatency.P99Ms,
		r.PublishLatency.P999Ms, r.PublishLatency.MaxMs, r.E2ELatency.P50Ms, r.E2ELatency.P99Ms, r.Consume.MBPS, r.PublishErrors)
	if r.Broker != nil {
		fmt.Fprintf(os.Stderr, " | broker %.1f CPU s/GB, peak RSS %.0f MiB", r.Broker.CPUSecondsPerGB, float64(r.Broker.PeakRSSBytes)/(1<<20))
	}
	if r.HostReportedMiB > 0 {
		fmt.Fprintf(os.Stderr, " | host took %.0f MiB", r.HostReportedMiB)
	}
	if r.FirstError != "" {
		fmt.Fprintf(os.Stderr, " | first error: %s", r.FirstError)
	}
	if r.Error != "" {
		fmt.Fprintf(os.Stderr, "\n  error: %s", r.Error)
	}
	fmt.Fprintln(os.Stderr)
}
