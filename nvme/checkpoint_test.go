package nvme

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	offs := map[TopicPartition]int64{{"b", 10}: 7, {"b", 2}: 3, {"a", 0}: -1}
	enc := AppendOffsetCheckpoint(nil, offs)
	if want := "0\n3\na 0 -1\nb 2 3\nb 10 7\n"; string(enc) != want {
		t.Fatalf("encoded %q, want %q", enc, want)
	}
	if got := ParseOffsetCheckpoint(bytes.NewReader(enc)); !maps.Equal(got, offs) {
		t.Fatalf("parsed %v, want %v", got, offs)
	}
	if got := string(AppendOffsetCheckpoint(nil, nil)); got != "0\n0\n" {
		t.Fatalf("empty file %q", got)
	}
	// Malformed lines are skipped; the header is not checked.
	got := ParseOffsetCheckpoint(strings.NewReader("x\ny\nt 1 5\nt x 5\nt 1\nt 99999999999 1\nu 0 9 9\nt 1 6\n"))
	if want := map[TopicPartition]int64{{"t", 1}: 6}; !maps.Equal(got, want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "log-start-offset-checkpoint")
	if got := ReadOffsetCheckpoint(path); len(got) != 0 {
		t.Fatalf("missing file read as %v", got)
	}
	if err := WriteOffsetCheckpoint(path, offs); err != nil {
		t.Fatal(err)
	}
	if got := ReadOffsetCheckpoint(path); !maps.Equal(got, offs) {
		t.Fatalf("read back %v, want %v", got, offs)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	if err := WriteOffsetCheckpoint(filepath.Join(dir, "no", "such"), offs); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}

func FuzzParseOffsetCheckpoint(f *testing.F) {
	f.Add(AppendOffsetCheckpoint(nil, map[TopicPartition]int64{{"t", 0}: 5, {"u", 3}: -1}))
	f.Add([]byte("0\n1\nt 0\n"))
	f.Add([]byte("0\n1\nt -1 9223372036854775807\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := ParseOffsetCheckpoint(bytes.NewReader(data))
		// Whatever parsed encodes and parses back to itself.
		if again := ParseOffsetCheckpoint(bytes.NewReader(AppendOffsetCheckpoint(nil, got))); !maps.Equal(got, again) {
			t.Fatalf("round trip: %v, then %v", got, again)
		}
	})
}
