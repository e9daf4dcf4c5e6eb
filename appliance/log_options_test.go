package appliance

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLogOptionsKafkaZero: retention.bytes=0 and file.delete.delay.ms=0
// mean what they mean in Kafka (keep no closed segment; delete its files at
// once), not "take the default" as a zero nvme.Options field does (which
// kept deleted segments' files 60 s and never applied the size limit).
func TestLogOptionsKafkaZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  topicConfig
	}{
		{"retention.bytes=0", topicConfig{SegmentBytes: 1024, SegmentMs: -1, SegmentIndexBytes: 1 << 20, RetentionMs: -1, RetentionBytes: 0, FileDeleteDelayMs: 0, DeletePolicy: true}},
		{"retention.ms=0", topicConfig{SegmentBytes: 1024, SegmentMs: -1, SegmentIndexBytes: 1 << 20, RetentionMs: 0, RetentionBytes: -1, FileDeleteDelayMs: 0, DeletePolicy: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.cfg.LogOptions(slog.New(slog.NewTextHandler(io.Discard, nil)), 0)
			if o.RetentionMs == 0 || o.RetentionBytes == 0 || o.FileDeleteDelay >= 0 || o.IndexIntervalBytes == 0 {
				t.Fatalf("options %+v: a Kafka 0 is still nvme's 'unset'", o)
			}
			dir := t.TempDir()
			l, err := nvme.Open(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			old := time.Now().Add(-time.Minute).UnixMilli()
			for i := 0; i < 12; i++ {
				b := appendBatch(nil, old, 0, -1, -1, -1, []kmsg.Record{{Value: make([]byte, 300)}})
				if _, err := l.Append(b, nvme.AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(l.Segments()); n < 3 {
				t.Fatalf("%d segments, want the log to have rolled", n)
			}
			deleted, err := l.ApplyRetention()
			if err != nil {
				t.Fatal(err)
			}
			if deleted == 0 || len(l.Segments()) != 1 {
				t.Fatalf("retention deleted %d segments, %d left; want all closed ones gone", deleted, len(l.Segments()))
			}
			left, _ := os.ReadDir(dir)
			for _, e := range left {
				if strings.HasSuffix(e.Name(), ".deleted") {
					t.Fatalf("%s still on disk: file.delete.delay.ms=0 should delete at once", filepath.Join(dir, e.Name()))
				}
			}
		})
	}
}
