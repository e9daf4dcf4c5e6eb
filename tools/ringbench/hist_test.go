package main

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestHistKnownInput records 1..100000 us once each: every percentile is
// known exactly (p = value/1000 %), and the histogram must be within its
// 1/1024 relative precision of it.
func TestHistKnownInput(t *testing.T) {
	h := NewHist()
	const n = 100000
	for v := int64(n); v >= 1; v-- { // reverse order: order must not matter
		h.Record(v)
	}
	if h.Count() != n {
		t.Fatalf("Count() = %d, want %d", h.Count(), n)
	}
	if h.Max() != n {
		t.Fatalf("Max() = %d, want %d", h.Max(), n)
	}
	if got, want := h.Mean(), float64(n+1)/2; got != want {
		t.Fatalf("Mean() = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		p    float64
		want int64
	}{{50, 50000}, {90, 90000}, {99, 99000}, {99.9, 99900}, {99.99, 99990}, {100, 100000}, {0.001, 1}} {
		got := h.Percentile(tc.p)
		if rel := math.Abs(float64(got-tc.want)) / float64(tc.want); rel > 1.0/1024 || got < tc.want {
			t.Errorf("Percentile(%v) = %d, want %d (at most 1/1024 above)", tc.p, got, tc.want)
		}
	}
}

// TestHistExactBelow2048 checks that small values (below 2^11) are exact.
func TestHistExactBelow2048(t *testing.T) {
	h := NewHist()
	for _, v := range []int64{5, 5, 5, 7, 1000, 2047} {
		h.Record(v)
	}
	for _, tc := range []struct {
		p    float64
		want int64
	}{{50, 5}, {60, 7}, {66.6, 7}, {66.7, 1000}, {83, 1000}, {99, 2047}} {
		if got := h.Percentile(tc.p); got != tc.want {
			t.Errorf("Percentile(%v) = %d, want %d", tc.p, got, tc.want)
		}
	}
}

// TestHistBuckets checks that bucket bounds tile the value range without
// gaps or overlaps and keep the promised precision.
func TestHistBuckets(t *testing.T) {
	prevHigh := int64(-1)
	for i := 0; i <= histIndex(histMaxValue); i++ {
		hi := histBucketHigh(i)
		lo := prevHigh + 1
		if histIndex(lo) != i || histIndex(hi) != i {
			t.Fatalf("bucket %d = [%d,%d]: index(lo)=%d index(hi)=%d", i, lo, hi, histIndex(lo), histIndex(hi))
		}
		if lo > 0 && float64(hi-lo)/float64(lo) > 1.0/1024 {
			t.Fatalf("bucket %d = [%d,%d] wider than 1/1024", i, lo, hi)
		}
		prevHigh = hi
	}
}

func TestHistMergeResetClamp(t *testing.T) {
	a, b := NewHist(), NewHist()
	for v := int64(1); v <= 100; v++ {
		a.Record(v)
		b.Record(v + 100)
	}
	a.Merge(b)
	if a.Count() != 200 || a.Percentile(50) != 100 || a.Max() != 200 {
		t.Fatalf("after merge: count %d p50 %d max %d, want 200 100 200", a.Count(), a.Percentile(50), a.Max())
	}
	a.Reset()
	if a.Count() != 0 || a.Percentile(50) != 0 || a.Max() != 0 {
		t.Fatalf("after reset: count %d p50 %d max %d", a.Count(), a.Percentile(50), a.Max())
	}
	a.Record(2 * histMaxValue) // clamped into the last bucket, but Max is exact
	a.Record(-5)               // counts as 0
	if a.Max() != 2*histMaxValue || a.Percentile(100) != 2*histMaxValue || a.Percentile(50) != 0 {
		t.Fatalf("clamp: max %d p100 %d p50 %d", a.Max(), a.Percentile(100), a.Percentile(50))
	}
}

func TestSyncHistSummary(t *testing.T) {
	s := NewSyncHist()
	for i := 1; i <= 1000; i++ {
		s.Record(time.Duration(i) * time.Millisecond / 10) // 100 us .. 100 ms
	}
	iv := s.TakeInterval()
	sum := s.Summary()
	if iv != sum {
		t.Fatalf("interval %+v != total %+v", iv, sum)
	}
	if sum.Count != 1000 || math.Abs(sum.P50Ms-50) > 0.05 || math.Abs(sum.P99Ms-99) > 0.1 || sum.MaxMs != 100 {
		t.Fatalf("summary %+v", sum)
	}
	if got := s.TakeInterval(); got.Count != 0 {
		t.Fatalf("interval not reset: %+v", got)
	}
}

func TestRate(t *testing.T) {
	// 250,000 records of 1,000 bytes in 2.5 s: 100,000 records/s, 100 MB/s.
	r := NewRate(250000, 250000*1000, 2500*time.Millisecond)
	if r.RecordsPS != 100000 || r.MBPS != 100 || r.Seconds != 2.5 {
		t.Fatalf("NewRate = %+v, want 100000 rec/s, 100 MB/s, 2.5 s", r)
	}
	if z := NewRate(5, 5, 0); z.RecordsPS != 0 || z.MBPS != 0 {
		t.Fatalf("zero duration: %+v", z)
	}
	if got := ratio(50, 200); got != 0.25 {
		t.Fatalf("ratio(50,200) = %v", got)
	}
	if got := ratio(50, 0); got != 0 {
		t.Fatalf("ratio(50,0) = %v", got)
	}
}

func TestParseTarget(t *testing.T) {
	tg, err := ParseTarget("ringbroker:log.io.mode=buffered, io.engine=netpoll")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Name != "ringbroker:io.engine=netpoll,log.io.mode=buffered" || tg.Overrides["io.engine"] != "netpoll" {
		t.Fatalf("ParseTarget = %+v", tg)
	}
	if _, err := ParseTarget("ringbroker:nokey"); err == nil {
		t.Fatal("want error for override without =")
	}
	ex, err := ParseTarget("external:127.0.0.1:9092")
	if err != nil || len(ex.Brokers) != 1 || ex.Brokers[0] != "127.0.0.1:9092" {
		t.Fatalf("external = %+v, %v", ex, err)
	}
}

func TestWorkloadFilesLoad(t *testing.T) {
	_, ws, err := LoadSuite("../../bench/suites/short.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) == 0 {
		t.Fatal("short suite has no workloads")
	}
	w, err := LoadWorkload("../../bench/workloads/keyed-1000.json", json.RawMessage(`{"acks":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if w.Acks != "1" || w.KeyCount != 1000 || math.Abs(w.AvgMessageSize()-(300+5120+4096)/9.0) > 1e-9 {
		t.Fatalf("keyed-1000 = %+v", w)
	}
	if _, err := LoadWorkload("../../bench/workloads/keyed-1000.json", json.RawMessage(`{"ack":"1"}`)); err == nil {
		t.Fatal("unknown override field accepted")
	}
}

func TestReadProcStatSelf(t *testing.T) {
	s, err := ReadProcStat(0)
	if err != nil {
		t.Fatal(err)
	}
	if s.HWMBytes <= 0 || s.RSSBytes <= 0 || s.CPUSeconds < 0 {
		t.Fatalf("ReadProcStat(self) = %+v", s)
	}
}
