package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("20s", "1ms").
type Duration time.Duration

// UnmarshalJSON accepts "1.5s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var f float64
		if err2 := json.Unmarshal(b, &f); err2 != nil {
			return fmt.Errorf("cannot read duration %s: want \"10s\" or seconds", b)
		}
		*d = Duration(f * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("cannot read duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// SizeWeight is one entry of a message size distribution.
type SizeWeight struct {
	Size   int `json:"size"`
	Weight int `json:"weight"`
}

// Workload is one benchmark scenario, in the spirit of the OpenMessaging
// Benchmark's workload files. Rates are totals over all producers.
type Workload struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`

	Topics             int               `json:"topics"`
	PartitionsPerTopic int               `json:"partitions_per_topic"`
	TopicConfigs       map[string]string `json:"topic_configs,omitempty"`

	// MessageSize is the fixed value size in bytes, unless MessageSizes gives
	// a weighted distribution. Values are at least 16 bytes: the first 8 carry
	// the send time for end-to-end latency.
	MessageSize  int          `json:"message_size"`
	MessageSizes []SizeWeight `json:"message_sizes,omitempty"`

	// Keys: "none" (null keys, sticky partitioning), "random" (a fresh random
	// key per record) or "distinct" (KeyCount distinct keys, hashed).
	Keys     string `json:"keys"`
	KeyCount int    `json:"key_count,omitempty"`

	ProducersPerTopic int `json:"producers_per_topic"`
	ConsumersPerTopic int `json:"consumers_per_topic"`
	// ConsumerGroup makes each topic's consumers one consumer group instead
	// of direct partition consumers that split the partitions between them.
	ConsumerGroup bool `json:"consumer_group,omitempty"`

	// ProducerRate is the total target rate in records/s; 0 means as fast as
	// the producers go.
	ProducerRate float64 `json:"producer_rate"`
	// Acks: "all" (-1), "1" or "0".
	Acks string `json:"acks"`
	// Compression: none, gzip, snappy, lz4, zstd.
	Compression string   `json:"compression"`
	Linger      Duration `json:"linger"`
	// BatchMaxBytes caps a produce batch (franz-go ProducerBatchMaxBytes); 0
	// keeps franz-go's default (1 MB).
	BatchMaxBytes int `json:"batch_max_bytes,omitempty"`
	// MaxInflight is produce requests in flight per broker connection
	// (franz-go MaxProduceRequestsInflightPerBroker); 0 keeps franz-go's
	// default of 1.
	MaxInflight int `json:"max_inflight,omitempty"`
	// MaxBufferedRecords per producer client; 0 keeps franz-go's default.
	MaxBufferedRecords int `json:"max_buffered_records,omitempty"`

	Warmup   Duration `json:"warmup"`
	Duration Duration `json:"duration"`

	// BacklogBytes > 0 adds a catch-up phase: after warm-up the consumers are
	// held back until the producers have built a backlog of this many bytes,
	// then they drain it while the producers keep going. The result reports
	// the catch-up time and the consume rate while catching up.
	BacklogBytes int64 `json:"backlog_bytes,omitempty"`
	// StopProducersForCatchUp stops producing once the backlog is built, so
	// the catch-up phase reads only.
	StopProducersForCatchUp bool `json:"stop_producers_for_catch_up,omitempty"`
}

// Validate fills defaults and checks the workload.
func (w *Workload) Validate() error {
	if w.Name == "" {
		return fmt.Errorf("workload has no name")
	}
	if w.Topics <= 0 {
		w.Topics = 1
	}
	if w.PartitionsPerTopic <= 0 {
		w.PartitionsPerTopic = 1
	}
	if w.MessageSize == 0 && len(w.MessageSizes) == 0 {
		w.MessageSize = 1024
	}
	for _, s := range append([]SizeWeight{{Size: w.MessageSize, Weight: 1}}, w.MessageSizes...) {
		if s.Size != 0 && s.Size < 16 {
			return fmt.Errorf("workload %q: message size %d below the 16-byte minimum", w.Name, s.Size)
		}
		if s.Weight < 0 {
			return fmt.Errorf("workload %q: negative weight %d", w.Name, s.Weight)
		}
	}
	switch w.Keys {
	case "":
		w.Keys = "none"
	case "none", "random":
	case "distinct":
		if w.KeyCount <= 0 {
			return fmt.Errorf("workload %q: keys=distinct needs key_count > 0", w.Name)
		}
	default:
		return fmt.Errorf("workload %q: keys %q: want none, random or distinct", w.Name, w.Keys)
	}
	if w.ProducersPerTopic <= 0 {
		w.ProducersPerTopic = 1
	}
	if w.ConsumersPerTopic < 0 {
		return fmt.Errorf("workload %q: consumers_per_topic %d < 0", w.Name, w.ConsumersPerTopic)
	}
	switch w.Acks {
	case "":
		w.Acks = "all"
	case "all", "-1", "1", "0":
		if w.Acks == "-1" {
			w.Acks = "all"
		}
	default:
		return fmt.Errorf("workload %q: acks %q: want all, 1 or 0", w.Name, w.Acks)
	}
	switch w.Compression {
	case "":
		w.Compression = "none"
	case "none", "gzip", "snappy", "lz4", "zstd":
	default:
		return fmt.Errorf("workload %q: compression %q: want none, gzip, snappy, lz4 or zstd", w.Name, w.Compression)
	}
	if w.ProducerRate < 0 {
		return fmt.Errorf("workload %q: producer_rate %v < 0", w.Name, w.ProducerRate)
	}
	if w.Duration <= 0 {
		w.Duration = Duration(20 * time.Second)
	}
	if w.Warmup < 0 {
		return fmt.Errorf("workload %q: warmup %v < 0", w.Name, w.Warmup.D())
	}
	if w.BacklogBytes > 0 && w.ConsumersPerTopic == 0 {
		return fmt.Errorf("workload %q: backlog_bytes needs consumers", w.Name)
	}
	return nil
}

// AvgMessageSize is the expected value size in bytes.
func (w *Workload) AvgMessageSize() float64 {
	if len(w.MessageSizes) == 0 {
		return float64(w.MessageSize)
	}
	var sum, n float64
	for _, s := range w.MessageSizes {
		sum += float64(s.Size * s.Weight)
		n += float64(s.Weight)
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// LoadWorkload reads a workload file (JSON, comments not allowed) and
// applies the JSON object set on top of it (nil for none).
func LoadWorkload(path string, set json.RawMessage) (*Workload, error) {
	return loadWorkload(path, set, nil)
}

// loadWorkload is LoadWorkload with pre applied before set.
func loadWorkload(path string, set json.RawMessage, pre func(*Workload)) (*Workload, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read workload: %w", err)
	}
	var w Workload
	if err := strictUnmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("cannot parse workload %q: %w", path, err)
	}
	if w.Name == "" {
		w.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if pre != nil {
		pre(&w)
	}
	if len(set) > 0 {
		if err := strictUnmarshal(set, &w); err != nil {
			return nil, fmt.Errorf("cannot apply overrides %s to %q: %w", set, path, err)
		}
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// SuiteEntry is one run of a suite: a workload file, relative to the suite
// file, with field overrides (a JSON object in the workload's own schema).
type SuiteEntry struct {
	File string          `json:"file"`
	Name string          `json:"name,omitempty"`
	Set  json.RawMessage `json:"set,omitempty"`
}

// Suite is a list of workload runs with optional duration overrides.
type Suite struct {
	Name      string       `json:"name"`
	Warmup    *Duration    `json:"warmup,omitempty"`
	Duration  *Duration    `json:"duration,omitempty"`
	Workloads []SuiteEntry `json:"workloads"`
}

// LoadSuite reads a suite file and the workloads it names.
func LoadSuite(path string) (*Suite, []*Workload, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read suite: %w", err)
	}
	var s Suite
	if err := strictUnmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("cannot parse suite %q: %w", path, err)
	}
	var ws []*Workload
	for _, e := range s.Workloads {
		f := e.File
		if !filepath.IsAbs(f) {
			f = filepath.Join(filepath.Dir(path), f)
		}
		// Suite durations apply first, so an entry's set can still
		// override them.
		w, err := loadWorkload(f, e.Set, func(w *Workload) {
			if s.Warmup != nil {
				w.Warmup = *s.Warmup
			}
			if s.Duration != nil {
				w.Duration = *s.Duration
			}
		})
		if err != nil {
			return nil, nil, err
		}
		if e.Name != "" {
			w.Name = e.Name
		}
		ws = append(ws, w)
	}
	return &s, ws, nil
}
