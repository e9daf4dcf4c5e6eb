package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"flag"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

var update = flag.Bool("update", false, "rewrite testdata/kafka-orders-0 from the generator")

// The testdata partition directory is generated here, by our own encoder,
// in Apache Kafka's layout as a Kafka 3.x broker leaves an active segment:
// preallocated (zero-padded) indexes, a producer snapshot, the leader-epoch
// checkpoint and partition.metadata. It holds a plain batch, a gzip batch
// with headers, a transactional batch and its COMMIT marker.
const kafkaDir = "testdata/kafka-orders-0"

type testRecord struct {
	key, value []byte
	headers    [][2]string
}

func appendVarint(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

func appendBytesField(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	return append(appendVarint(dst, int64(len(b))), b...)
}

func encodeRecords(recs []testRecord) []byte {
	var out []byte
	for i, r := range recs {
		var body []byte
		body = append(body, 0)                 // attributes
		body = appendVarint(body, int64(i)*10) // timestamp delta
		body = appendVarint(body, int64(i))    // offset delta
		body = appendBytesField(body, r.key)
		body = appendBytesField(body, r.value)
		body = appendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = appendBytesField(body, []byte(h[0]))
			body = appendBytesField(body, []byte(h[1]))
		}
		out = appendVarint(out, int64(len(body)))
		out = append(out, body...)
	}
	return out
}

type testBatch struct {
	base       int64
	attrs      int16
	ts         int64
	pid        int64
	pepoch     int16
	seq        int32
	records    []testRecord
	compressed bool
}

func encodeBatch(b testBatch) []byte {
	recs := encodeRecords(b.records)
	if b.compressed {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(recs)
		w.Close()
		recs = buf.Bytes()
		b.attrs |= 1
	}
	be := binary.BigEndian
	n := int32(len(b.records))
	var out []byte
	out = be.AppendUint64(out, uint64(b.base))
	out = be.AppendUint32(out, uint32(61-12+len(recs)))
	out = be.AppendUint32(out, 0) // leader epoch
	out = append(out, 2)          // magic
	out = be.AppendUint32(out, 0) // crc, below
	out = be.AppendUint16(out, uint16(b.attrs))
	out = be.AppendUint32(out, uint32(n-1))
	out = be.AppendUint64(out, uint64(b.ts))
	out = be.AppendUint64(out, uint64(b.ts+int64(n-1)*10))
	out = be.AppendUint64(out, uint64(b.pid))
	out = be.AppendUint16(out, uint16(b.pepoch))
	out = be.AppendUint32(out, uint32(b.seq))
	out = be.AppendUint32(out, uint32(n))
	out = append(out, recs...)
	be.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// kafkaPartitionFiles returns the generated directory's files.
func kafkaPartitionFiles() map[string][]byte {
	const ts = 1700000000000
	commitKey := []byte{0, 0, 0, 1}       // version 0, type 1 (COMMIT)
	commitVal := []byte{0, 0, 0, 0, 0, 7} // version 0, coordinator epoch 7
	batches := []testBatch{
		{base: 0, ts: ts, pid: -1, pepoch: -1, seq: -1, records: []testRecord{{[]byte("k0"), []byte("alpha"), nil}, {nil, []byte("beta"), nil}, {[]byte("k2"), nil, nil}}},
		{base: 3, ts: ts + 100, pid: -1, pepoch: -1, seq: -1, compressed: true, records: []testRecord{
			{[]byte("k3"), []byte("gamma"), [][2]string{{"trace", "abc"}}}, {[]byte("k4"), []byte("delta"), nil}}},
		{base: 5, ts: ts + 200, attrs: 0x10, pid: 1000, pepoch: 0, seq: 0, records: []testRecord{{nil, []byte("txn-1"), nil}, {nil, []byte("txn-2"), nil}}},
		{base: 7, ts: ts + 300, attrs: 0x30, pid: 1000, pepoch: 0, seq: -1, records: []testRecord{{commitKey, commitVal, nil}}},
	}
	var log []byte
	var positions []int
	for _, b := range batches {
		positions = append(positions, len(log))
		log = append(log, encodeBatch(b)...)
	}
	be := binary.BigEndian
	// One index entry (batch 2: last offset 4 at its position), then
	// preallocated zero entries as Kafka leaves an active segment.
	var idx []byte
	idx = be.AppendUint32(idx, 4)
	idx = be.AppendUint32(idx, uint32(positions[1]))
	idx = append(idx, make([]byte, 10*8)...)
	var tidx []byte
	tidx = be.AppendUint64(tidx, ts+110)
	tidx = be.AppendUint32(tidx, 4)
	tidx = append(tidx, make([]byte, 5*12)...)
	// Producer snapshot at offset 8: producer 1000, epoch 0, last sequence
	// 1, last offset 6, offset delta 1.
	var snap []byte
	snap = be.AppendUint16(snap, 1)
	snap = be.AppendUint32(snap, 0)
	snap = be.AppendUint32(snap, 1)
	snap = be.AppendUint64(snap, 1000)
	snap = be.AppendUint16(snap, 0)
	snap = be.AppendUint32(snap, 1)
	snap = be.AppendUint64(snap, 6)
	snap = be.AppendUint32(snap, 1)
	snap = be.AppendUint64(snap, ts+210)
	snap = be.AppendUint32(snap, 7)
	snap = be.AppendUint64(snap, ^uint64(0)) // -1: no open transaction
	be.PutUint32(snap[2:], crc32.Checksum(snap[6:], crc32.MakeTable(crc32.Castagnoli)))
	id := [16]byte{0x6f, 0x72, 0x64, 0x65, 0x72, 0x73, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	return map[string][]byte{
		"00000000000000000000.log":       log,
		"00000000000000000000.index":     idx,
		"00000000000000000000.timeindex": tidx,
		"00000000000000000008.snapshot":  snap,
		"leader-epoch-checkpoint":        []byte("0\n1\n0 0\n"),
		"partition.metadata":             []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n"),
	}
}

func TestKafkaTestdataIsGenerated(t *testing.T) {
	files := kafkaPartitionFiles()
	if *update {
		if err := os.MkdirAll(kafkaDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(kafkaDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(kafkaDir, name))
		if err != nil {
			t.Fatalf("%v (regenerate with go test ./tools/ringdump -run TestKafkaTestdataIsGenerated -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator; regenerate with -update", name)
		}
	}
}

func dump(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestDumpKafkaSegment(t *testing.T) {
	code, out, errOut := dump(t, kafkaDir, "--records")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"partition.metadata: topic_id b3JkZXJzAQIDBAUGBwgJCg",
		"epoch 0 from offset 0",
		"batch base 0 last 2 count 3",
		"batch base 3 last 4 count 2",
		"| gzip  | crc ok",
		"producer 1000 epoch 0 seq 0 | none transactional | crc ok",
		"none transactional,control | crc ok",
		"offset 7: COMMIT (coordinator epoch 7)",
		`offset 3 ts 2023-11-14T22:13:20.100Z key "k3" value "gamma" header "trace"="abc"`,
		`offset 2 ts 2023-11-14T22:13:20.020Z key "k2" value null`,
		"Offset index 00000000000000000000.index: 1 entries (+10 preallocated)",
		"offset 4 -> position ",
		"Time index 00000000000000000000.timeindex: 1 entries (+5 preallocated)",
		"Producer snapshot 00000000000000000008.snapshot: 1 producers, 1 entries (one per retained batch), crc ok",
		"producer 1000 epoch 0 last sequence 1 last offset 6 offset delta 1",
		"Summary: 1 segments, 4 batches, 8 records, 0 problems",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Without --records only control markers are decoded.
	_, out, _ = dump(t, kafkaDir)
	if strings.Contains(out, "gamma") || !strings.Contains(out, "COMMIT") {
		t.Errorf("without --records: %s", out)
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestDumpReportsCorruption(t *testing.T) {
	files := kafkaPartitionFiles()
	log := files["00000000000000000000.log"]

	t.Run("crc", func(t *testing.T) {
		dir := copyDir(t, kafkaDir)
		bad := bytes.Clone(log)
		bad[70] ^= 0xff // inside the first batch's records
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), bad, 0o644)
		code, out, errOut := dump(t, dir)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, out)
		}
		if !strings.Contains(errOut, "1 problems") || !strings.Contains(errOut, "offsets 0-2): CRC32C mismatch") {
			t.Errorf("stderr:\n%s", errOut)
		}
		if !strings.Contains(out, "CRC MISMATCH") || !strings.Contains(out, "batch base 3") {
			t.Errorf("the bad batch must be flagged and the scan go on:\n%s", out)
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		dir := copyDir(t, kafkaDir)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), log[:len(log)-5], 0o644)
		code, _, errOut := dump(t, dir)
		if code != 1 || !strings.Contains(errOut, "torn tail: batch at position") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})
	t.Run("index", func(t *testing.T) {
		dir := copyDir(t, kafkaDir)
		idx := bytes.Clone(files["00000000000000000000.index"])
		binary.BigEndian.PutUint32(idx[4:], 5) // no batch starts at 5
		os.WriteFile(filepath.Join(dir, "00000000000000000000.index"), idx, 0o644)
		code, _, errOut := dump(t, dir)
		if code != 1 || !strings.Contains(errOut, "where no batch starts") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		dir := copyDir(t, kafkaDir)
		snap := bytes.Clone(files["00000000000000000008.snapshot"])
		snap[len(snap)-1] ^= 1
		os.WriteFile(filepath.Join(dir, "00000000000000000008.snapshot"), snap, 0o644)
		code, _, errOut := dump(t, dir)
		if code != 1 || !strings.Contains(errOut, "producer snapshot CRC32C mismatch") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})
	t.Run("usage", func(t *testing.T) {
		if code, _, _ := dump(t); code != 2 {
			t.Errorf("no arguments: exit %d, want 2", code)
		}
		if code, _, _ := dump(t, filepath.Join(t.TempDir(), "missing")); code != 2 {
			t.Errorf("missing path: exit %d, want 2", code)
		}
	})
	t.Run("single segment file", func(t *testing.T) {
		code, out, errOut := dump(t, filepath.Join(kafkaDir, "00000000000000000000.log"))
		if code != 0 || !strings.Contains(out, "4 batches") {
			t.Errorf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
}

func FuzzParseRecords(f *testing.F) {
	f.Add(encodeRecords([]testRecord{{[]byte("k"), []byte("v"), [][2]string{{"h", "x"}}}}), int32(1))
	f.Fuzz(func(t *testing.T, b []byte, n int32) {
		if n > 1000 {
			n = 1000
		}
		_, _ = parseRecords(b, n)
	})
}
