package nvme

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEpochCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	l := mustOpen(t, dir, o)
	if err := l.AssignEpoch(0, 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 5, 2, 10, 1) // LEO 10
	l.AssignEpoch(2, 10)
	appendN(t, l, 5, 2, 10, 1) // LEO 20
	l.AssignEpoch(2, 15)       // same epoch, later offset: no change
	l.AssignEpoch(5, 20)
	want := []EpochEntry{{0, 0}, {2, 10}, {5, 20}}
	if got := l.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, EpochCheckpointFile))
	if err != nil || string(b) != "0\n3\n0 0\n2 10\n5 20\n" {
		t.Fatalf("checkpoint %q %v", b, err)
	}
	tests := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{5, 5, 20}, // latest: LEO
		{4, 2, 20},
		{2, 2, 20},
		{1, 0, 10},
		{0, 0, 10},
		{6, -1, -1},
		{-1, -1, -1},
	}
	for _, tt := range tests {
		if e, end := l.EndOffsetForEpoch(tt.epoch); e != tt.wantEpoch || end != tt.wantEnd {
			t.Errorf("EndOffsetForEpoch(%d) = %d %d, want %d %d", tt.epoch, e, end, tt.wantEpoch, tt.wantEnd)
		}
	}
	l.Close()
	l = mustOpen(t, dir, o)
	if got := l.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs after reopen %v", got)
	}
	// Log start offset moves: entries below it collapse (Kafka truncateFromStart).
	if err := l.SetLogStartOffset(12); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochs(); !slices.Equal(got, []EpochEntry{{2, 12}, {5, 20}}) {
		t.Fatalf("epochs after log start 12: %v", got)
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 12 {
		t.Errorf("below first epoch: %d %d", e, end)
	}
	// A conflicting lower epoch removes later entries.
	l.AssignEpoch(3, 18)
	if got := l.LeaderEpochs(); !slices.Equal(got, []EpochEntry{{2, 12}, {3, 18}}) {
		t.Fatalf("after conflicting assign: %v", got)
	}
	l.Close()
	// Entries beyond the recovered LEO are dropped on open.
	os.WriteFile(filepath.Join(dir, EpochCheckpointFile), []byte("0\n3\n2 12\n3 18\n9 500\n"), 0o644)
	l = mustOpen(t, dir, o)
	defer l.Close()
	if got := l.LeaderEpochs(); !slices.Equal(got, []EpochEntry{{2, 12}, {3, 18}}) {
		t.Fatalf("after reopen with stale entries: %v", got)
	}
}

func TestParseEpochCheckpointErrors(t *testing.T) {
	for _, in := range []string{"", "1\n0\n", "0\n2\n1 5\n", "0\n1\n1\n", "0\n2\n3 5\n2 6\n", "0\n1\n1 x\n", "0\n-1\n", "0\n1\n1 5\n7 7\n"} {
		if _, err := ParseEpochCheckpoint([]byte(in)); err == nil {
			t.Errorf("ParseEpochCheckpoint(%q) accepted", in)
		}
	}
	es, err := ParseEpochCheckpoint([]byte("0\n0\n"))
	if err != nil || len(es) != 0 {
		t.Fatalf("%v %v", es, err)
	}
}

func TestPartitionMetadata(t *testing.T) {
	dir := t.TempDir()
	var id [16]byte
	for i := range id {
		id[i] = byte(i*17 + 250)
	}
	if err := WritePartitionMetadata(dir, id); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, PartitionMetadataFile))
	enc := base64.RawURLEncoding.EncodeToString(id[:])
	if string(b) != "version: 0\ntopic_id: "+enc+"\n" || len(enc) != 22 || !bytes.ContainsAny([]byte(enc), "-_") {
		t.Fatalf("content %q", b)
	}
	got, err := ReadPartitionMetadata(dir)
	if err != nil || got != id {
		t.Fatalf("read back %v %v", got, err)
	}
	for _, bad := range []string{"version: 1\ntopic_id: " + enc, "version: 0\n", "topic_id: " + enc, "version: 0\ntopic_id: abc\n", "nonsense"} {
		if _, err := ParsePartitionMetadata([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := ReadPartitionMetadata(t.TempDir()); err == nil {
		t.Fatal("missing file accepted")
	}
}
