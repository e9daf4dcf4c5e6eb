package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The types below are the JSON shapes of ringbench's RunResult (its
// Sample, CatchUp, ProcReport, Rate and LatencySummary, in package main of
// tools/ringbench); ringbench reads natsbench's output into its own
// RunResult, so the field names must stay the same.

// Sample is one progress interval (about a second) of a run.
type Sample struct {
	T            float64 `json:"t_s"`
	PubRPS       float64 `json:"pub_records_per_s"`
	PubMBPS      float64 `json:"pub_mb_per_s"`
	ConsRPS      float64 `json:"cons_records_per_s"`
	ConsMBPS     float64 `json:"cons_mb_per_s"`
	BacklogBytes int64   `json:"backlog_bytes"`
	PubP50Ms     float64 `json:"pub_p50_ms"`
	PubP99Ms     float64 `json:"pub_p99_ms"`
	E2EP99Ms     float64 `json:"e2e_p99_ms"`
	BrokerCPU    float64 `json:"broker_cpu_cores"`
}

// CatchUp reports the catch-up phase of a workload with a backlog.
type CatchUp struct {
	BacklogBytes int64   `json:"backlog_bytes"`
	Seconds      float64 `json:"seconds"`
	MBPS         float64 `json:"mb_per_s"`
	Completed    bool    `json:"completed"`
}

// ProcReport is a process's resource use over the measurement window.
type ProcReport struct {
	Pid             int     `json:"pid,omitempty"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	CPUCores        float64 `json:"cpu_cores"`
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb"`
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
}

// Rate is a throughput over a window (MB = 10^6 bytes).
type Rate struct {
	Records   uint64  `json:"records"`
	Bytes     uint64  `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	RecordsPS float64 `json:"records_per_s"`
	MBPS      float64 `json:"mb_per_s"`
}

// NewRate computes the rate of records and bytes over d.
func NewRate(records, bytes uint64, d time.Duration) Rate {
	r := Rate{Records: records, Bytes: bytes, Seconds: d.Seconds()}
	if d > 0 {
		r.RecordsPS = float64(records) / d.Seconds()
		r.MBPS = float64(bytes) / 1e6 / d.Seconds()
	}
	return r
}

// LatencySummary is a histogram's report in milliseconds.
type LatencySummary struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p99_9_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Result is the JSON natsbench writes: ringbench's RunResult without the
// workload and target, which ringbench fills in.
type Result struct {
	Started        time.Time      `json:"started"`
	Publish        Rate           `json:"publish"`
	PublishErrors  uint64         `json:"publish_errors"`
	FirstError     string         `json:"first_error,omitempty"`
	Consume        Rate           `json:"consume"`
	PublishLatency LatencySummary `json:"publish_latency"`
	E2ELatency     LatencySummary `json:"end_to_end_latency"`
	MaxBacklog     int64          `json:"max_backlog_bytes"`
	FinalBacklog   int64          `json:"final_backlog_records"`
	CatchUp        *CatchUp       `json:"catch_up,omitempty"`
	Broker         *ProcReport    `json:"broker,omitempty"`
	Loadgen        ProcReport     `json:"loadgen"`
	Series         []Sample       `json:"series"`
	Error          string         `json:"error,omitempty"`
}

// histMaxUs is the largest latency tracked, in microseconds (one hour); three
// significant digits as ringbench's own histogram.
const histMaxUs = int64(time.Hour / time.Microsecond)

// syncHist is an HDR histogram of microseconds behind a mutex, with an
// interval histogram beside the cumulative one.
type syncHist struct {
	mu              sync.Mutex
	total, interval *hdrhistogram.Histogram
}

func newSyncHist() *syncHist {
	return &syncHist{total: hdrhistogram.New(0, histMaxUs, 3), interval: hdrhistogram.New(0, histMaxUs, 3)}
}

func (s *syncHist) Record(d time.Duration) {
	us := max(int64(d/time.Microsecond), 0)
	us = min(us, histMaxUs)
	s.mu.Lock()
	_ = s.total.RecordValue(us)
	_ = s.interval.RecordValue(us)
	s.mu.Unlock()
}

func summary(h *hdrhistogram.Histogram) LatencySummary {
	if h.TotalCount() == 0 {
		return LatencySummary{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencySummary{
		Count:  uint64(h.TotalCount()),
		MeanMs: h.Mean() / 1000,
		P50Ms:  ms(h.ValueAtQuantile(50)),
		P99Ms:  ms(h.ValueAtQuantile(99)),
		P999Ms: ms(h.ValueAtQuantile(99.9)),
		MaxMs:  ms(h.Max()),
	}
}

func (s *syncHist) TakeInterval() LatencySummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := summary(s.interval)
	s.interval.Reset()
	return r
}

func (s *syncHist) ResetAll() {
	s.mu.Lock()
	s.total.Reset()
	s.interval.Reset()
	s.mu.Unlock()
}

func (s *syncHist) Summary() LatencySummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return summary(s.total)
}

// procStat is a process's CPU time and peak RSS from /proc, as ringbench
// reads them (utime+stime, VmHWM).
type procStat struct {
	CPUSeconds float64
	HWMBytes   int64
}

const clkTck = 100

// readProcStat reads /proc/<pid>; pid 0 means this process.
func readProcStat(pid int) (procStat, error) {
	p := "self"
	if pid > 0 {
		p = strconv.Itoa(pid)
	}
	var s procStat
	data, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return s, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return s, fmt.Errorf("cannot parse /proc/%s/stat", p)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("cannot parse /proc/%s/stat: %d fields", p, len(f))
	}
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	s.CPUSeconds = float64(ut+st) / clkTck
	status, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if fs := strings.Fields(v); len(fs) > 0 {
				n, _ := strconv.ParseInt(fs[0], 10, 64)
				s.HWMBytes = n << 10
			}
		}
	}
	return s, nil
}
