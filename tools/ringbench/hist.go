package main

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// histSubBits sets the histogram's precision: each power-of-two range is cut
// into 2^(histSubBits-1) linear buckets, so a recorded value is known to
// within 1/1024 (~0.1%, three significant digits, as HdrHistogram with
// numberOfSignificantValueDigits=3).
const histSubBits = 11

// histMaxValue is the largest value a Hist tracks exactly; larger values are
// clamped to it (and still counted in Max). In microseconds: one hour.
const histMaxValue = int64(time.Hour / time.Microsecond)

// Hist is a log-linear (HDR-style) histogram of non-negative int64 values,
// here latencies in microseconds. The zero value is not usable: use NewHist.
// Hist is not safe for concurrent use; SyncHist is.
type Hist struct {
	counts []uint64
	total  uint64
	min    int64
	max    int64
	sum    float64
}

// NewHist returns an empty histogram for values in [0, histMaxValue].
func NewHist() *Hist {
	return &Hist{counts: make([]uint64, histIndex(histMaxValue)+1), min: math.MaxInt64}
}

// histIndex maps v >= 0 to its bucket. Values below 2^histSubBits have a
// bucket each; above, bucket width doubles with each power of two.
func histIndex(v int64) int {
	if v < 1<<histSubBits {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - histSubBits
	return e<<(histSubBits-1) + int(v>>e)
}

// histBucketHigh is the largest value that maps to bucket i (HdrHistogram's
// highest equivalent value).
func histBucketHigh(i int) int64 {
	if i < 1<<histSubBits {
		return int64(i)
	}
	e := i>>(histSubBits-1) - 1
	m := int64(i - e<<(histSubBits-1))
	return (m+1)<<e - 1
}

// Record adds one value; negative values count as 0.
func (h *Hist) Record(v int64) {
	if v < 0 {
		v = 0
	}
	if v > h.max {
		h.max = v
	}
	if v < h.min {
		h.min = v
	}
	h.sum += float64(v)
	if v > histMaxValue {
		v = histMaxValue
	}
	h.counts[histIndex(v)]++
	h.total++
}

// Count is the number of recorded values.
func (h *Hist) Count() uint64 { return h.total }

// Max is the largest recorded value, 0 when empty.
func (h *Hist) Max() int64 {
	if h.total == 0 {
		return 0
	}
	return h.max
}

// Mean is the arithmetic mean of recorded values, 0 when empty.
func (h *Hist) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return h.sum / float64(h.total)
}

// Percentile returns the value at percentile p (0 < p <= 100): the smallest
// bucket bound at or below which at least p% of the values lie, capped at
// Max. An empty histogram returns 0.
func (h *Hist) Percentile(p float64) int64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.total {
		rank = h.total
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := histBucketHigh(i)
			if v > h.max || v >= histMaxValue { // clamped values report Max
				v = h.max
			}
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return v
		}
	}
	return h.max
}

// Merge adds every value of o to h.
func (h *Hist) Merge(o *Hist) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	if o.max > h.max {
		h.max = o.max
	}
	if o.min < h.min {
		h.min = o.min
	}
}

// Reset empties h.
func (h *Hist) Reset() {
	clear(h.counts)
	h.total, h.sum, h.max, h.min = 0, 0, 0, math.MaxInt64
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

// Summary reports h, whose values are microseconds, in milliseconds.
func (h *Hist) Summary() LatencySummary {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencySummary{
		Count:  h.total,
		MeanMs: h.Mean() / 1000,
		P50Ms:  ms(h.Percentile(50)),
		P99Ms:  ms(h.Percentile(99)),
		P999Ms: ms(h.Percentile(99.9)),
		MaxMs:  ms(h.Max()),
	}
}

// SyncHist is a Hist behind a mutex with an interval histogram beside the
// cumulative one, so a sampler can take per-second percentiles.
type SyncHist struct {
	mu       sync.Mutex
	total    *Hist
	interval *Hist
}

// NewSyncHist returns an empty SyncHist.
func NewSyncHist() *SyncHist { return &SyncHist{total: NewHist(), interval: NewHist()} }

// Record adds a duration, in microseconds, to both histograms.
func (s *SyncHist) Record(d time.Duration) {
	us := int64(d / time.Microsecond)
	s.mu.Lock()
	s.total.Record(us)
	s.interval.Record(us)
	s.mu.Unlock()
}

// TakeInterval returns the interval summary and starts a new interval.
func (s *SyncHist) TakeInterval() LatencySummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.interval.Summary()
	s.interval.Reset()
	return sum
}

// ResetAll empties both histograms (end of warm-up).
func (s *SyncHist) ResetAll() {
	s.mu.Lock()
	s.total.Reset()
	s.interval.Reset()
	s.mu.Unlock()
}

// Summary reports the cumulative histogram.
func (s *SyncHist) Summary() LatencySummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total.Summary()
}

// Rate is a throughput over a window: records/s and MB/s (MB = 10^6 bytes,
// as fio reports).
type Rate struct {
	Records   uint64  `json:"records"`
	Bytes     uint64  `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	RecordsPS float64 `json:"records_per_s"`
	MBPS      float64 `json:"mb_per_s"`
}

// NewRate computes the rate of records and bytes over d; a non-positive d
// gives zero rates.
func NewRate(records, bytes uint64, d time.Duration) Rate {
	r := Rate{Records: records, Bytes: bytes, Seconds: d.Seconds()}
	if d > 0 {
		r.RecordsPS = float64(records) / d.Seconds()
		r.MBPS = float64(bytes) / 1e6 / d.Seconds()
	}
	return r
}
