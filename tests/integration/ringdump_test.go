package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRingdumpBrokerSegments has the broker write segments (several, with
// index entries), stops it, dumps the partition directory with ringdump,
// then corrupts a copy and expects the CRC failure to be reported.
func TestRingdumpBrokerSegments(t *testing.T) {
	bin := toolBinary(t, "ringdump")
	b := startBroker(t, "")
	ctx := t.Context()
	adm := newAdmin(t, b)
	segBytes := "16384"
	resp, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"segment.bytes": &segBytes, "index.interval.bytes": ptr("1024")}, "dumped")
	if err != nil || resp["dumped"].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp["dumped"].Err)
	}
	cl := newClient(t, b, kgo.DefaultProduceTopic("dumped"), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.GzipCompression(), kgo.NoCompression()))
	const n = 600
	for i := 0; i < n; i += 20 {
		recs := make([]*kgo.Record, 20)
		for j := range recs {
			recs[j] = genRecord(3, "", 0, i+j)
			recs[j].Topic = ""
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
			cancel()
			t.Fatalf("produce: %v", err)
		}
		cancel()
	}
	b.Stop()

	dir := filepath.Join(b.DataDir, "dumped-0")
	r := runCLI(t, bin, "", dir)
	if r.code != 0 {
		t.Fatalf("ringdump %s: exit %d\nstdout (tail): %s\nstderr: %s", dir, r.code, tailString(r.stdout, 3000), r.stderr)
	}
	segs := strings.Count(r.stdout, "\nSegment ")
	if segs < 2 {
		t.Errorf("ringdump found %d segments, want several (segment.bytes=%s)", segs, segBytes)
	}
	if !strings.Contains(r.stdout, "records, 0 problems") || !strings.Contains(r.stdout, " 600 records") {
		t.Errorf("summary: %s", tailString(r.stdout, 300))
	}
	if !strings.Contains(r.stdout, "-> position ") || !strings.Contains(r.stdout, "leader-epoch-checkpoint") {
		t.Errorf("no index entries or epoch checkpoint in the dump:\n%s", tailString(r.stdout, 3000))
	}
	if r2 := runCLI(t, bin, "", dir, "--records"); r2.code != 0 || !strings.Contains(r2.stdout, `key "key-000000599"`) {
		t.Errorf("--records: exit %d, last record missing", r2.code)
	}

	// A corrupted copy: flip one byte inside the first batch's records (the
	// 61-byte header is not all CRC-covered; the records are).
	bad := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "00000000000000000000.log" {
			data[61+5] ^= 0x5a
		}
		if err := os.WriteFile(filepath.Join(bad, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = runCLI(t, bin, "", bad)
	if r.code != 1 {
		t.Fatalf("ringdump of a corrupted copy: exit %d, want 1\nstderr: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "1 problems") || !strings.Contains(r.stderr, "(offsets 0-") || !strings.Contains(r.stderr, "CRC32C mismatch") {
		t.Errorf("stderr does not report the corruption:\n%s", r.stderr)
	}
	// The original is still clean.
	if r := runCLI(t, bin, "", dir); r.code != 0 {
		t.Errorf("original after copying: exit %d", r.code)
	}
}

func ptr(s string) *string { return &s }

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
