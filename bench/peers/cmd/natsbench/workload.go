package main

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration reads and writes JSON as a Go duration string, as ringbench's.
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

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// SizeWeight is one entry of a message size distribution.
type SizeWeight struct {
	Size   int `json:"size"`
	Weight int `json:"weight"`
}

// Workload is the subset of ringbench's Workload (package main of
// tools/ringbench) that the NATS driver reads. ringbench validates the
// workload and fills its defaults before handing it over, so no checks are
// repeated here. Fields without a JetStream analog (linger,
// batch_max_bytes, max_inflight, topic_configs) are ignored; see the
// package doc.
type Workload struct {
	Name                    string       `json:"name"`
	Topics                  int          `json:"topics"`
	PartitionsPerTopic      int          `json:"partitions_per_topic"`
	MessageSize             int          `json:"message_size"`
	MessageSizes            []SizeWeight `json:"message_sizes"`
	Keys                    string       `json:"keys"`
	KeyCount                int          `json:"key_count"`
	ProducersPerTopic       int          `json:"producers_per_topic"`
	ConsumersPerTopic       int          `json:"consumers_per_topic"`
	ConsumerGroup           bool         `json:"consumer_group"`
	ProducerRate            float64      `json:"producer_rate"`
	Acks                    string       `json:"acks"`
	Compression             string       `json:"compression"`
	MaxBufferedRecords      int          `json:"max_buffered_records"`
	Warmup                  Duration     `json:"warmup"`
	Duration                Duration     `json:"duration"`
	BacklogBytes            int64        `json:"backlog_bytes"`
	StopProducersForCatchUp bool         `json:"stop_producers_for_catch_up"`
}
