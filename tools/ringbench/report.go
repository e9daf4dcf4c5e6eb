package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Report is ringbench's JSON result file.
type Report struct {
	Tool     string    `json:"tool"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Host     HostInfo  `json:"host"`
	Limits   *Limits   `json:"limits,omitempty"`
	// Rounds is how often each workload ran against the list of targets
	// (--rounds); 0 in reports written before the flag means 1.
	Rounds int          `json:"rounds,omitempty"`
	Runs   []*RunResult `json:"runs"`
	// Comparisons are each target's ratios to the first target's, per
	// workload over the rounds (see Compare); none for a single target.
	Comparisons []Comparison `json:"comparisons,omitempty"`
	// Skipped lists targets dropped before the runs, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// HostInfo describes the machine the run was on.
type HostInfo struct {
	Hostname  string `json:"hostname"`
	Kernel    string `json:"kernel"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	MemBytes  int64  `json:"mem_bytes,omitempty"`
	GoVersion string `json:"go_version"`
	// DataDirFS is the filesystem of the data directory: type, source and
	// mount point, from /proc/self/mountinfo.
	DataDirFS string `json:"data_dir_fs,omitempty"`
}

// filesystemOf describes the mount that holds dir: "ext4 /dev/vda1 on /"
// (the longest mount point that is a prefix of dir in
// /proc/self/mountinfo), or "" when unknown.
func filesystemOf(dir string) string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	best, bestLen := "", -1
	for line := range strings.Lines(string(data)) {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 2 {
			continue
		}
		mp := f[4]
		if !(dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) || len(mp) <= bestLen {
			continue
		}
		best, bestLen = fmt.Sprintf("%s %s on %s", g[0], g[1], mp), len(mp)
	}
	return best
}

func hostInfo() HostInfo {
	h := HostInfo{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemBytes = int64(si.Totalram) * int64(si.Unit)
	}
	return h
}

// ratio is a/b, or 0 when either is missing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// ComputeRatios fills r.Ratios against the measured limits. Bandwidths are
// fractions of the limit (1 = at the limit); latencies are multiples of
// the limit (1 = as fast as one bare write+fdatasync).
func ComputeRatios(r *RunResult, l *Limits) {
	if l == nil {
		return
	}
	m := map[string]float64{
		"publish_mbps_to_odirect_write": ratio(r.Publish.MBPS, l.DirectWriteMBPS),
		"publish_mbps_to_loopback_tcp":  ratio(r.Publish.MBPS, l.LoopbackTCPMBPS),
		"consume_mbps_to_loopback_tcp":  ratio(r.Consume.MBPS, l.LoopbackTCPMBPS),
		"consume_mbps_to_odirect_read":  ratio(r.Consume.MBPS, l.DirectReadMBPS),
		"publish_p50_to_fdatasync_p50":  ratio(r.PublishLatency.P50Ms, l.FdatasyncP50Ms),
		"publish_p99_to_fdatasync_p99":  ratio(r.PublishLatency.P99Ms, l.FdatasyncP99Ms),
	}
	if r.CatchUp != nil && r.CatchUp.Completed {
		m["catch_up_mbps_to_odirect_read"] = ratio(r.CatchUp.MBPS, l.DirectReadMBPS)
	}
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
	r.Ratios = m
}

// WriteMarkdown writes the report as markdown tables for the README.
func WriteMarkdown(w io.Writer, rep *Report) {
	h := rep.Host
	fs := h.DataDirFS
	if fs == "" {
		fs = "unknown"
	}
	fmt.Fprintf(w, "ringbench run of %s on `%s`: %d CPUs (%s), %.0f GiB, %s, %s; data directory on %s.\n\n",
		rep.Started.UTC().Format("2006-01-02 15:04 UTC"), h.Hostname, h.CPUs, h.CPUModel,
		float64(h.MemBytes)/(1<<30), h.Kernel, h.GoVersion, fs)
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "Skipped target %s.\n\n", s)
	}
	if l := rep.Limits; l != nil {
		fmt.Fprintf(w, "Limits measured in the same run (data directory's filesystem, loopback):\n\n")
		fmt.Fprintf(w, "| O_DIRECT seq write 1 MiB | O_DIRECT seq read 1 MiB | 4 KiB write+fdatasync p50 / p99 | loopback TCP 1 stream |\n")
		fmt.Fprintf(w, "|---|---|---|---|\n")
		fmt.Fprintf(w, "| %.0f MB/s | %.0f MB/s | %.2f / %.2f ms | %.0f MB/s |\n\n",
			l.DirectWriteMBPS, l.DirectReadMBPS, l.FdatasyncP50Ms, l.FdatasyncP99Ms, l.LoopbackTCPMBPS)
		if len(l.Errors) > 0 {
			fmt.Fprintf(w, "Limit errors: %s\n\n", strings.Join(l.Errors, "; "))
		}
	}
	// With several rounds a round column follows the target's.
	roundCol, roundHead, roundSep := func(*RunResult) string { return "" }, "", ""
	if rep.Rounds > 1 {
		roundCol = func(r *RunResult) string { return fmt.Sprintf(" %d |", r.Round) }
		roundHead, roundSep = " round |", "---|"
	}
	// On a VM with free page reporting, a column for the guest memory the
	// host took back during each window (RunResult.HostReportedMiB).
	hostCol, hostHead, hostSep := func(*RunResult) string { return "" }, "", ""
	for _, r := range rep.Runs {
		if r.HostReportedMiB > 0 {
			hostCol = func(r *RunResult) string {
				if r.HostReportedMiB < 0 {
					return " - |"
				}
				return fmt.Sprintf(" %.0f |", r.HostReportedMiB)
			}
			hostHead, hostSep = " host took MiB |", "---|"
			break
		}
	}
	fmt.Fprintf(w, "| workload | target |%s acks | publish MB/s | publish rec/s | publish p50 / p99 / p99.9 ms | e2e p50 / p99 ms | consume MB/s | broker CPU s/GB | broker cores | broker peak RSS MiB | loadgen cores |%s publish / disk write | consume / loopback | p50 / fdatasync p50 |\n", roundHead, hostHead)
	fmt.Fprintf(w, "|---|---|%s---|---|---|---|---|---|---|---|---|---|%s---|---|---|\n", roundSep, hostSep)
	for _, r := range rep.Runs {
		if r.Error != "" && r.Publish.Records == 0 {
			fmt.Fprintf(w, "| %s | %s |%s %s | failed: %s ||||||||||||\n", r.Workload.Name, r.Target.Name, roundCol(r), r.Workload.Acks,
				strings.ReplaceAll(firstLine(r.Error), "|", "/"))
			continue
		}
		var cpuGB, cores, rss string = "-", "-", "-"
		if r.Broker != nil {
			cpuGB = fmt.Sprintf("%.1f", r.Broker.CPUSecondsPerGB)
			cores = fmt.Sprintf("%.2f", r.Broker.CPUCores)
			rss = fmt.Sprintf("%.0f", float64(r.Broker.PeakRSSBytes)/(1<<20))
		}
		cons := "-"
		if r.Workload.ConsumersPerTopic > 0 {
			cons = fmt.Sprintf("%.1f", r.Consume.MBPS)
			if r.CatchUp != nil {
				if r.CatchUp.Completed {
					cons += fmt.Sprintf(" (catch-up %.1f MB/s over %.0f MB)", r.CatchUp.MBPS, float64(r.CatchUp.BacklogBytes)/1e6)
				} else {
					cons += " (catch-up not completed)"
				}
			}
		}
		e2e := "-"
		if r.E2ELatency.Count > 0 {
			e2e = fmt.Sprintf("%.2f / %.2f", r.E2ELatency.P50Ms, r.E2ELatency.P99Ms)
		}
		pubLat := "-"
		if r.PublishLatency.Count > 0 {
			pubLat = fmt.Sprintf("%.2f / %.2f / %.2f", r.PublishLatency.P50Ms, r.PublishLatency.P99Ms, r.PublishLatency.P999Ms)
		}
		rt := func(k string) string {
			if v, ok := r.Ratios[k]; ok {
				return fmt.Sprintf("%.3g", v)
			}
			return "-"
		}
		note := ""
		if r.PublishErrors > 0 || r.Error != "" {
			note = fmt.Sprintf(" (%d errors%s)", r.PublishErrors, strings.ReplaceAll(map[bool]string{true: ": " + firstLine(r.Error), false: ""}[r.Error != ""], "|", "/"))
		}
		if r.Publish.Records == 0 && r.Error == "" {
			note += " (nothing sent in the window was acked before it closed)"
		}
		fmt.Fprintf(w, "| %s%s | %s |%s %s | %.1f | %.0f | %s | %s | %s | %s | %s | %s | %.2f |%s %s | %s | %s |\n",
			r.Workload.Name, note, r.Target.Name, roundCol(r), r.Workload.Acks, r.Publish.MBPS, r.Publish.RecordsPS,
			pubLat, e2e, cons, cpuGB, cores, rss, r.Loadgen.CPUCores, hostCol(r),
			rt("publish_mbps_to_odirect_write"), rt("consume_mbps_to_loopback_tcp"), rt("publish_p50_to_fdatasync_p50"))
	}
	fmt.Fprintf(w, "\nMB = 10^6 bytes of record values. Broker CPU s/GB is the broker process's utime+stime over the window per GB published (each published byte is also consumed once where the workload has consumers). The load generator shares the machine's CPUs with the broker.")
	if hostHead != "" {
		fmt.Fprintf(w, " Host took MiB is the guest memory the VM's free page reporting gave back to the host during the window: the page cache a run builds on such memory pays a host page fault per page, which can dominate the broker's CPU at high rates, so compare targets over several rounds.")
	}
	kinds := map[string]bool{}
	for _, r := range rep.Runs {
		kinds[r.Target.Kind] = true
	}
	if kinds["kfake"] {
		fmt.Fprintf(w, " kfake is franz-go's fake cluster in its own process, in memory unless sync-writes=true: the Kafka protocol path with no disk, an upper bound.")
	}
	if kinds["nats"] {
		fmt.Fprintf(w, " nats is nats-server with a JetStream file-store stream per topic (partitions are subjects), driven by natsbench with the NATS client: every publish waits for the server's ack; for acks=all the server fsyncs every write (sync_interval: always, as ringbroker fdatasyncs before acking acks=all), for acks=1 it keeps its 2-minute default; lz4 becomes S2 stream compression; linger has no analog.")
	}
	fmt.Fprintln(w)
	writeComparisons(w, rep)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
