package appliance

// INVALID_TIMESTAMP (32): CreateTime records outside a topic's
// message.timestamp.before.max.ms / message.timestamp.after.max.ms (KIP-937;
// Kafka 4's default refuses records over an hour in the future) or the
// deprecated message.timestamp.difference.max.ms are refused with their
// record errors; LogAppendTime topics take any timestamp and stamp the
// batch (issue 43).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceInvalidTimestamp(t *testing.T) {
	b, k := startCompressionBroker(t, map[string]map[string]string{
		"bounded": {"message.timestamp.before.max.ms": "3600000", "compression.type": "zstd"},
		"dflt":    nil,
		"legacy":  {"message.timestamp.difference.max.ms": "60000"},
		"lat":     {"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "1000"},
	})
	now := time.Now()
	at := func(d time.Duration, codec int) []byte {
		plain := nvme.AppendBatch(nil, now.Add(d).UnixMilli(), 0, -1, -1, -1, testRecords(3))
		if codec == nvme.CompressionNone {
			return plain
		}
		var r nvme.Recompressor
		defer r.Close()
		out, _, err := r.Recompress(plain, codec, nvme.Levels{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		topic string
		d     time.Duration
		codec int
		bad   bool
	}{
		{"bounded", -2 * time.Hour, nvme.CompressionNone, true},
		{"bounded", -2 * time.Hour, nvme.CompressionSnappy, true},
		{"bounded", -30 * time.Minute, nvme.CompressionSnappy, false},
		{"dflt", 2 * time.Hour, nvme.CompressionNone, true},
		{"dflt", 30 * time.Minute, nvme.CompressionGzip, false},
		{"dflt", -30 * 24 * time.Hour, nvme.CompressionNone, false},
		{"legacy", -2 * time.Minute, nvme.CompressionNone, true},
		{"legacy", 2 * time.Minute, nvme.CompressionLZ4, true},
		{"legacy", 0, nvme.CompressionNone, false},
		{"lat", -2 * time.Hour, nvme.CompressionNone, false},
	} {
		hwBefore := kFetch(k, c.topic, 0, 12).HighWatermark
		for _, v := range []int16{8, 11} {
			got := kProduce(k, c.topic, at(c.d, c.codec), v)
			if !c.bad {
				if got.ErrorCode != 0 {
					t.Errorf("%s at now%+v (%s), v%d: error %d %v", c.topic, c.d, codecNames[c.codec], v, got.ErrorCode, got.ErrorMessage)
				}
				continue
			}
			if got.ErrorCode != kerr.InvalidTimestamp.Code || got.ErrorMessage == nil || len(got.ErrorRecords) != 3 {
				t.Errorf("%s at now%+v (%s), v%d: error %d, message %v, %d record errors; want %d and all 3 records named",
					c.topic, c.d, codecNames[c.codec], v, got.ErrorCode, got.ErrorMessage, len(got.ErrorRecords), kerr.InvalidTimestamp.Code)
				continue
			}
			for i, e := range got.ErrorRecords {
				if e.RelativeOffset != int32(i) || e.ErrorMessage == nil || *e.ErrorMessage == "" {
					t.Errorf("%s: record error %d: %+v", c.topic, i, e)
				}
			}
		}
		if hw := kFetch(k, c.topic, 0, 12).HighWatermark; c.bad && hw != hwBefore {
			t.Errorf("%s at now%+v: a refused batch moved the high watermark from %d to %d", c.topic, c.d, hwBefore, hw)
		}
	}
	// The LogAppendTime topic stamped the old batches with the append time.
	hs := fetchedBatches(t, kFetch(k, "lat", 1, 12).RecordBatches)
	if len(hs) != 2 {
		t.Fatalf("lat holds %d batches after offset 0, want 2", len(hs))
	}
	for _, h := range hs {
		if !h.IsLogAppendTime() || h.MaxTimestamp < now.UnixMilli() || h.BaseTimestamp != now.Add(-2*time.Hour).UnixMilli() {
			t.Errorf("LogAppendTime batch at %d: attrs %#x, max timestamp %d, base %d", h.BaseOffset, h.Attributes, h.MaxTimestamp, h.BaseTimestamp)
		}
	}

	// A real client sees the error as Kafka's.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "dflt", Value: []byte("future"), Timestamp: time.Now().Add(3 * time.Hour)}).FirstErr()
	if !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("franz-go producing a record 3 h ahead: %v, want INVALID_TIMESTAMP", err)
	}
}
