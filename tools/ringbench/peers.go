package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Peers are the other brokers ringbench runs the same workloads against,
// built from their own Go module in bench/peers so the broker's go.mod
// stays clean (bench/run-short.sh builds them into bench/peers/bin):
//
//   - kfake: franz-go's in-memory fake cluster as its own process, driven
//     by the same franz-go workload as ringbroker: the Kafka protocol with
//     no disk, an upper bound for the protocol path;
//   - nats: nats-server with JetStream (file store on the data directory's
//     filesystem), driven by natsbench, which runs the same workload with the
//     NATS client and writes its result in RunResult's JSON shape, so this
//     module needs no NATS dependency.

// PeerBins are the peer binaries.
type PeerBins struct {
	Kfake      string // bench/peers/cmd/kfake
	NATSServer string // nats-server
	NATSBench  string // bench/peers/cmd/natsbench
}

// check reports the first binary kind needs that is missing.
func (p PeerBins) check(kind string) error {
	var need []string
	switch kind {
	case "kfake":
		need = []string{p.Kfake}
	case "nats":
		need = []string{p.NATSServer, p.NATSBench}
	}
	for _, b := range need {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("cannot find peer binary for %s: %w (bench/run-short.sh builds bench/peers/bin)", kind, err)
		}
	}
	return nil
}

// natsSyncAlways says whether nats-server fsyncs every write for w: with
// sync=acks (the default) only for acks=all, the analog of ringbroker's
// fdatasync before acking acks=all.
func natsSyncAlways(t Target, w *Workload) bool {
	switch t.Overrides["sync"] {
	case "always":
		return true
	case "default":
		return false
	}
	return w.Acks == "all"
}

// RunNATS runs w with natsbench against the nats-server at addr (pid) and
// reads its result. natsbench's stderr (progress) passes through.
func RunNATS(ctx context.Context, bin string, w *Workload, addr string, pid int, dir string, o RunOpts) *RunResult {
	res := &RunResult{Workload: w, Started: time.Now()}
	wpath := filepath.Join(dir, "workload.json")
	outPath := filepath.Join(dir, "result.json")
	data, err := json.Marshal(w)
	if err == nil {
		err = os.WriteFile(wpath, data, 0o644)
	}
	if err != nil {
		res.Error = fmt.Sprintf("cannot write workload for natsbench: %v", err)
		return res
	}
	cmd := exec.CommandContext(ctx, bin, "--url", "nats://"+addr, "--workload", wpath, "--out", outPath,
		"--broker-pid", fmt.Sprint(pid), "--grace", o.Grace.String(), fmt.Sprintf("--progress=%v", o.Progress), "--label", o.Label)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	runErr := cmd.Run()
	data, err = os.ReadFile(outPath)
	if err != nil {
		res.Error = fmt.Sprintf("natsbench wrote no result (%v): %v", runErr, err)
		return res
	}
	if err := json.Unmarshal(data, res); err != nil {
		res.Error = fmt.Sprintf("cannot parse natsbench result %q: %v", outPath, err)
		return res
	}
	res.Workload = w
	if runErr != nil {
		res.Error = strings.TrimSpace(res.Error + "\nnatsbench: " + runErr.Error())
	}
	return res
}
