// Package bench holds end-to-end workloads and their reports. Benchmarks
// measure their own baseline (disk, loopback) in the same run and report
// ratios; peers live in their own Go module so the broker's go.mod stays
// clean.
package bench
