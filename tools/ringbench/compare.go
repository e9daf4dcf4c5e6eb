package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// RoundOrder returns the indexes of n targets in the order round r runs
// them: the given order in even rounds, reversed in odd ones, so a drift
// over the run (page cache, thermal, a noisy neighbour) favours neither
// side of a comparison once rounds are paired.
func RoundOrder(n, r int) []int {
	order := make([]int, n)
	for i := range order {
		if r%2 == 0 {
			order[i] = i
		} else {
			order[i] = n - 1 - i
		}
	}
	return order
}

// RoundRatio is one round's ratio target/baseline.
type RoundRatio struct {
	Round int     `json:"round"`
	Ratio float64 `json:"ratio"`
}

// RatioStats summarizes one metric's ratio target/baseline over the rounds
// that have it: Median (the mean of the two middle values for an even
// count), Min and Max, and the per-round values in round order. All are 0
// and PerRound is empty when no round has the metric on both sides.
type RatioStats struct {
	Median   float64      `json:"median"`
	Min      float64      `json:"min"`
	Max      float64      `json:"max"`
	PerRound []RoundRatio `json:"per_round"`
}

// Comparison is one workload's runs of Target set against the same
// workload's runs of Baseline (the first target given), round by round.
// Rounds counts the rounds in which both runs exist and neither reported
// an error; a metric's ratio is formed in such a round only when both
// sides measured it (> 0). A ratio below 1 means Target used less broker
// CPU per GB, had a lower p99, or published fewer MB/s than Baseline.
type Comparison struct {
	Workload string `json:"workload"`
	Target   string `json:"target"`
	Baseline string `json:"baseline"`
	Rounds   int    `json:"rounds"`
	// CPUPerGB is the ratio of broker CPU seconds per GB published
	// (RunResult.Broker.CPUSecondsPerGB).
	CPUPerGB RatioStats `json:"cpu_seconds_per_gb"`
	// PublishP99 is the ratio of publish (send to ack) p99 latencies.
	PublishP99 RatioStats `json:"publish_p99"`
	// E2EP99 is the ratio of end-to-end (send to consume) p99 latencies.
	E2EP99 RatioStats `json:"end_to_end_p99"`
	// PublishMBPS is the ratio of publish throughputs in MB/s.
	PublishMBPS RatioStats `json:"publish_mbps"`
}

// Compare pairs runs by workload name, target name and round and returns,
// for each workload (in the order of its first run) and each of targets[1:]
// (in the given order), its Comparison against targets[0], the baseline.
// Runs are matched by target name, never by position, so the reversed
// order of odd rounds does not matter. It returns nil for fewer than two
// targets; a workload without runs of both sides gets no Comparison.
func Compare(targets []string, runs []*RunResult) []Comparison {
	if len(targets) < 2 {
		return nil
	}
	base := targets[0]
	type key struct {
		workload, target string
		round            int
	}
	byKey := map[key]*RunResult{}
	var workloads []string
	seen := map[string]bool{}
	maxRound := 0
	for _, r := range runs {
		if r == nil || r.Workload == nil {
			continue
		}
		w := r.Workload.Name
		if !seen[w] {
			seen[w] = true
			workloads = append(workloads, w)
		}
		k := key{w, r.Target.Name, r.Round}
		if _, dup := byKey[k]; !dup {
			byKey[k] = r
		}
		maxRound = max(maxRound, r.Round)
	}
	var out []Comparison
	for _, w := range workloads {
		done := map[string]bool{base: true}
		for _, t := range targets[1:] {
			if done[t] {
				continue // the baseline itself or a repeated name
			}
			done[t] = true
			c := Comparison{Workload: w, Target: t, Baseline: base}
			var cpu, pub, e2e, mbps []RoundRatio
			paired := false
			for round := 0; round <= maxRound; round++ {
				b, o := byKey[key{w, base, round}], byKey[key{w, t, round}]
				if b == nil || o == nil {
					continue
				}
				paired = true
				if b.Error != "" || o.Error != "" {
					continue
				}
				c.Rounds++
				add := func(dst *[]RoundRatio, ov, bv float64) {
					if ov > 0 && bv > 0 {
						*dst = append(*dst, RoundRatio{Round: round, Ratio: ov / bv})
					}
				}
				if b.Broker != nil && o.Broker != nil {
					add(&cpu, o.Broker.CPUSecondsPerGB, b.Broker.CPUSecondsPerGB)
				}
				add(&pub, o.PublishLatency.P99Ms, b.PublishLatency.P99Ms)
				add(&e2e, o.E2ELatency.P99Ms, b.E2ELatency.P99Ms)
				add(&mbps, o.Publish.MBPS, b.Publish.MBPS)
			}
			if !paired {
				continue
			}
			c.CPUPerGB, c.PublishP99, c.E2EP99, c.PublishMBPS = newRatioStats(cpu), newRatioStats(pub), newRatioStats(e2e), newRatioStats(mbps)
			out = append(out, c)
		}
	}
	return out
}

func newRatioStats(rs []RoundRatio) RatioStats {
	s := RatioStats{PerRound: rs}
	if len(rs) == 0 {
		s.PerRound = []RoundRatio{}
		return s
	}
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = r.Ratio
	}
	slices.Sort(v)
	s.Min, s.Max = v[0], v[len(v)-1]
	if n := len(v); n%2 == 1 {
		s.Median = v[n/2]
	} else {
		s.Median = (v[n/2-1] + v[n/2]) / 2
	}
	return s
}

// cell renders s as "median [min-max]", just the value for one round, "-"
// for none, and adds "(n of m rounds)" when fewer than the comparison's
// rounds had the metric on both sides.
func (s RatioStats) cell(rounds int) string {
	var out string
	switch n := len(s.PerRound); {
	case n == 0:
		return "-"
	case n == 1:
		out = fmt.Sprintf("%.2f", s.Median)
	default:
		out = fmt.Sprintf("%.2f [%.2f-%.2f]", s.Median, s.Min, s.Max)
	}
	if n := len(s.PerRound); n < rounds {
		out += fmt.Sprintf(" (%d of %d rounds)", n, rounds)
	}
	return out
}

// writeComparisons writes rep.Comparisons as a markdown table with a line
// on how to read it; nothing when there are none.
func writeComparisons(w io.Writer, rep *Report) {
	if len(rep.Comparisons) == 0 {
		return
	}
	rounds := max(rep.Rounds, 1)
	fmt.Fprintf(w, "\nEach target against the baseline (the first target given), ratio target / baseline per round:\n\n")
	fmt.Fprintf(w, "| workload | target / baseline | rounds | CPU s/GB ratio median [min-max] | publish p99 ratio median [min-max] | e2e p99 ratio median [min-max] | publish MB/s ratio median [min-max] |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|\n")
	for _, c := range rep.Comparisons {
		used := fmt.Sprintf("%d", c.Rounds)
		if c.Rounds < rounds {
			used = fmt.Sprintf("%d of %d", c.Rounds, rounds)
		}
		fmt.Fprintf(w, "| %s | %s / %s | %s | %s | %s | %s | %s |\n", c.Workload,
			strings.ReplaceAll(c.Target, "|", "/"), strings.ReplaceAll(c.Baseline, "|", "/"), used,
			c.CPUPerGB.cell(c.Rounds), c.PublishP99.cell(c.Rounds), c.E2EP99.cell(c.Rounds), c.PublishMBPS.cell(c.Rounds))
	}
	fmt.Fprintf(w, "\nA ratio below 1 means the target used less broker CPU per GB, had a lower p99 or published fewer MB/s than the baseline; each is the median over the rounds in which both runs finished without error (min-max in brackets), and rounds alternate the target order (given, reversed, given, ...) so drift during the run favours neither side.\n")
}
