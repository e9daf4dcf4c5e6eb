package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const (
	tBase  = "ringbroker:io.engine=netpoll"
	tUring = "ringbroker:io.engine=uring"
	tKfake = "kfake"
)

// m is one run's four compared metrics.
type m struct{ cpu, pub, e2e, mbps float64 }

func mkRun(workload, target string, round int, v m, errText string) *RunResult {
	r := &RunResult{
		Workload:       &Workload{Name: workload, Acks: "1", ConsumersPerTopic: 1},
		Target:         Target{Name: target},
		Round:          round,
		Publish:        Rate{MBPS: v.mbps},
		PublishLatency: LatencySummary{P50Ms: v.pub / 2, P99Ms: v.pub, P999Ms: v.pub * 2},
		E2ELatency:     LatencySummary{P50Ms: v.e2e / 2, P99Ms: v.e2e},
		Error:          errText,
	}
	if v.mbps > 0 && errText == "" {
		r.Publish.Records, r.Publish.RecordsPS = uint64(v.mbps*1e4), v.mbps*1e3
		r.Consume = r.Publish
	}
	if v.pub > 0 {
		r.PublishLatency.Count = 1
	}
	if v.e2e > 0 {
		r.E2ELatency.Count = 1
	}
	if v.cpu >= 0 {
		r.Broker = &ProcReport{CPUSecondsPerGB: v.cpu}
	}
	return r
}

// stats builds the expected RatioStats from (round, ratio) pairs.
func stats(median, lo, hi float64, pairs ...float64) RatioStats {
	s := RatioStats{Median: median, Min: lo, Max: hi, PerRound: []RoundRatio{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		s.PerRound = append(s.PerRound, RoundRatio{Round: int(pairs[i]), Ratio: pairs[i+1]})
	}
	return s
}

var none = stats(0, 0, 0)

func TestRoundOrder(t *testing.T) {
	for _, tc := range []struct {
		n, r int
		want []int
	}{
		{0, 0, []int{}},
		{1, 0, []int{0}},
		{1, 1, []int{0}},
		{2, 0, []int{0, 1}},
		{2, 1, []int{1, 0}},
		{2, 2, []int{0, 1}},
		{3, 1, []int{2, 1, 0}},
		{3, 3, []int{2, 1, 0}},
		{4, 4, []int{0, 1, 2, 3}},
	} {
		if got := RoundOrder(tc.n, tc.r); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("RoundOrder(%d, %d) = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []string
		runs    []*RunResult
		want    []Comparison
	}{
		{
			name:    "single target",
			targets: []string{tBase},
			runs: []*RunResult{
				mkRun("w", tBase, 0, m{10, 2, 4, 100}, ""),
				mkRun("w", tBase, 1, m{10, 2, 4, 100}, ""),
			},
			want: nil,
		},
		{
			// Runs in the order ringbench makes them: round 1 reversed.
			// Ratios 0.5, 0.8, 0.6: median 0.6, not the middle by position.
			name:    "odd count, reversed order in odd rounds",
			targets: []string{tBase, tUring},
			runs: []*RunResult{
				mkRun("w", tBase, 0, m{10, 2, 4, 100}, ""),
				mkRun("w", tUring, 0, m{5, 1, 2, 50}, ""),
				mkRun("w", tUring, 1, m{8, 4, 8, 200}, ""),
				mkRun("w", tBase, 1, m{10, 2, 4, 100}, ""),
				mkRun("w", tBase, 2, m{10, 2, 4, 100}, ""),
				mkRun("w", tUring, 2, m{6, 3, 6, 150}, ""),
			},
			want: []Comparison{{
				Workload: "w", Target: tUring, Baseline: tBase, Rounds: 3,
				CPUPerGB:    stats(0.6, 0.5, 0.8, 0, 0.5, 1, 0.8, 2, 0.6),
				PublishP99:  stats(1.5, 0.5, 2, 0, 0.5, 1, 2, 2, 1.5),
				E2EP99:      stats(1.5, 0.5, 2, 0, 0.5, 1, 2, 2, 1.5),
				PublishMBPS: stats(1.5, 0.5, 2, 0, 0.5, 1, 2, 2, 1.5),
			}},
		},
		{
			// The other target comes first in every round: only names
			// say which run is the baseline.
			name:    "even count, baseline never first",
			targets: []string{tBase, tUring},
			runs: []*RunResult{
				mkRun("w", tUring, 1, m{4, 1, 1, 100}, ""),
				mkRun("w", tBase, 1, m{8, 1, 1, 100}, ""),
				mkRun("w", tUring, 0, m{2, 1, 1, 100}, ""),
				mkRun("w", tBase, 0, m{8, 1, 1, 100}, ""),
				mkRun("w", tUring, 3, m{1, 1, 1, 100}, ""),
				mkRun("w", tBase, 3, m{8, 1, 1, 100}, ""),
				mkRun("w", tUring, 2, m{6, 1, 1, 100}, ""),
				mkRun("w", tBase, 2, m{8, 1, 1, 100}, ""),
			},
			want: []Comparison{{
				Workload: "w", Target: tUring, Baseline: tBase, Rounds: 4,
				CPUPerGB:    stats(0.375, 0.125, 0.75, 0, 0.25, 1, 0.5, 2, 0.75, 3, 0.125),
				PublishP99:  stats(1, 1, 1, 0, 1, 1, 1, 2, 1, 3, 1),
				E2EP99:      stats(1, 1, 1, 0, 1, 1, 1, 2, 1, 3, 1),
				PublishMBPS: stats(1, 1, 1, 0, 1, 1, 1, 2, 1, 3, 1),
			}},
		},
		{
			// Round 1's baseline and round 2's target failed: both rounds
			// are left out whatever they measured.
			name:    "a round with a failed run is skipped",
			targets: []string{tBase, tUring},
			runs: []*RunResult{
				mkRun("w", tBase, 0, m{10, 2, 4, 100}, ""),
				mkRun("w", tUring, 0, m{5, 1, 2, 50}, ""),
				mkRun("w", tUring, 1, m{5, 1, 2, 50}, ""),
				mkRun("w", tBase, 1, m{1, 1, 1, 1}, "broker exited during the run"),
				mkRun("w", tBase, 2, m{10, 2, 4, 100}, ""),
				mkRun("w", tUring, 2, m{0, 0, 0, 0}, "cannot start"),
				mkRun("w", tUring, 3, m{20, 4, 8, 200}, ""),
				mkRun("w", tBase, 3, m{10, 2, 4, 100}, ""),
			},
			want: []Comparison{{
				Workload: "w", Target: tUring, Baseline: tBase, Rounds: 2,
				CPUPerGB:    stats(1.25, 0.5, 2, 0, 0.5, 3, 2),
				PublishP99:  stats(1.25, 0.5, 2, 0, 0.5, 3, 2),
				E2EP99:      stats(1.25, 0.5, 2, 0, 0.5, 3, 2),
				PublishMBPS: stats(1.25, 0.5, 2, 0, 0.5, 3, 2),
			}},
		},
		{
			// No broker report (external), no e2e p99 on one side, no
			// publish p99 on either: those ratios skip the round.
			name:    "missing values are skipped",
			targets: []string{tBase, tUring},
			runs: []*RunResult{
				mkRun("w", tBase, 0, m{10, 0, 4, 100}, ""),
				mkRun("w", tUring, 0, m{-1, 0, 0, 50}, ""),
				mkRun("w", tUring, 1, m{5, 0, 2, 100}, ""),
				mkRun("w", tBase, 1, m{10, 0, 4, 100}, ""),
			},
			want: []Comparison{{
				Workload: "w", Target: tUring, Baseline: tBase, Rounds: 2,
				CPUPerGB:    stats(0.5, 0.5, 0.5, 1, 0.5),
				PublishP99:  none,
				E2EP99:      stats(0.5, 0.5, 0.5, 1, 0.5),
				PublishMBPS: stats(0.75, 0.5, 1, 0, 0.5, 1, 1),
			}},
		},
		{
			// Workloads in the order of their first run, targets in the
			// given order; a workload the baseline never ran (interrupted)
			// gets no comparison, one with only failures gets Rounds 0.
			name:    "several workloads and targets",
			targets: []string{tBase, tUring, tKfake},
			runs: []*RunResult{
				mkRun("b", tBase, 0, m{10, 2, 4, 100}, ""),
				mkRun("b", tUring, 0, m{5, 1, 2, 50}, ""),
				mkRun("b", tKfake, 0, m{-1, 4, 8, 200}, ""),
				mkRun("a", tBase, 0, m{10, 2, 4, 100}, "topics not ready"),
				mkRun("a", tUring, 0, m{5, 1, 2, 50}, ""),
				mkRun("a", tKfake, 0, m{-1, 4, 8, 200}, ""),
				mkRun("c", tUring, 0, m{5, 1, 2, 50}, ""),
			},
			want: []Comparison{
				{Workload: "b", Target: tUring, Baseline: tBase, Rounds: 1,
					CPUPerGB: stats(0.5, 0.5, 0.5, 0, 0.5), PublishP99: stats(0.5, 0.5, 0.5, 0, 0.5),
					E2EP99: stats(0.5, 0.5, 0.5, 0, 0.5), PublishMBPS: stats(0.5, 0.5, 0.5, 0, 0.5)},
				{Workload: "b", Target: tKfake, Baseline: tBase, Rounds: 1,
					CPUPerGB: none, PublishP99: stats(2, 2, 2, 0, 2),
					E2EP99: stats(2, 2, 2, 0, 2), PublishMBPS: stats(2, 2, 2, 0, 2)},
				{Workload: "a", Target: tUring, Baseline: tBase, Rounds: 0,
					CPUPerGB: none, PublishP99: none, E2EP99: none, PublishMBPS: none},
				{Workload: "a", Target: tKfake, Baseline: tBase, Rounds: 0,
					CPUPerGB: none, PublishP99: none, E2EP99: none, PublishMBPS: none},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(tc.targets, tc.runs)
			if !reflect.DeepEqual(got, tc.want) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(tc.want, "", "  ")
				t.Fatalf("Compare() =\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// TestWriteMarkdownRounds checks the round column and the comparison table.
func TestWriteMarkdownRounds(t *testing.T) {
	rep := &Report{Rounds: 3}
	for round := range 3 {
		for _, ti := range RoundOrder(2, round) {
			v := []m{{10, 2, 4, 100}, {5 + float64(round), 1, 3, 90}}[ti]
			errText := ""
			if ti == 1 && round == 2 {
				errText = "broker exited during the run"
			}
			rep.Runs = append(rep.Runs, mkRun("latency-10mbps-acks-1", []string{tBase, tUring}[ti], round, v, errText))
		}
	}
	rep.Comparisons = Compare([]string{tBase, tUring}, rep.Runs)
	var b bytes.Buffer
	WriteMarkdown(&b, rep)
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{
		"| workload | target | round | acks | publish MB/s |",
		"|---|---|---|---|---|",
		"| latency-10mbps-acks-1 | " + tUring + " | 1 | 1 | 90.0 | 90000 | 0.50 / 1.00 / 2.00 | 1.50 / 3.00 | 90.0 | 6.0 |",
		"| latency-10mbps-acks-1 | " + tUring + " | 2 | 1 | failed: broker exited during the run ||||||||||||",
		"| workload | target / baseline | rounds | CPU s/GB ratio median [min-max] | publish p99 ratio median [min-max] | e2e p99 ratio median [min-max] | publish MB/s ratio median [min-max] |",
		"| latency-10mbps-acks-1 | " + tUring + " / " + tBase + " | 2 of 3 | 0.55 [0.50-0.60] | 0.50 [0.50-0.50] | 0.75 [0.75-0.75] | 0.90 [0.90-0.90] |",
		"A ratio below 1 means",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}

	// One round: no round column, the table as before the flag.
	rep = &Report{Runs: []*RunResult{mkRun("w", tBase, 0, m{10, 2, 4, 100}, "")}}
	b.Reset()
	WriteMarkdown(&b, rep)
	if out := b.String(); !strings.Contains(out, "| workload | target | acks |") || strings.Contains(out, "target / baseline") {
		t.Errorf("single-round, single-target markdown:\n%s", out)
	}
}

// TestWriteMarkdownHostReported: the host-took column appears only when a
// run saw the VM give memory back to the host, with "-" where the counter
// was missing.
func TestWriteMarkdownHostReported(t *testing.T) {
	a := mkRun("w", tBase, 0, m{10, 2, 4, 100}, "")
	b := mkRun("w", tUring, 0, m{5, 1, 3, 90}, "")
	a.HostReportedMiB, b.HostReportedMiB = 768, -1
	var buf bytes.Buffer
	WriteMarkdown(&buf, &Report{Runs: []*RunResult{a, b}})
	out := buf.String()
	for _, want := range []string{"| loadgen cores | host took MiB | publish / disk write |", " | 768 | ", " | - | ", "free page reporting"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	a.HostReportedMiB, b.HostReportedMiB = 0, 0
	buf.Reset()
	WriteMarkdown(&buf, &Report{Runs: []*RunResult{a, b}})
	if strings.Contains(buf.String(), "host took") {
		t.Errorf("a host column without reported memory:\n%s", buf.String())
	}
}
