package nvme

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestValidateBatches(t *testing.T) {
	keyed := []testRecord{{key: []byte("a"), value: []byte("1")}, {key: []byte("b"), value: nil, headers: [][2][]byte{{[]byte("h"), []byte("v")}}}}
	keyless := []testRecord{{key: []byte("a"), value: []byte("1")}, {key: nil, value: []byte("2")}}
	badDeltas := []testRecord{{key: []byte("a"), value: []byte("1"), offsetDelta: 5, badDelta: true}, {key: []byte("b"), value: []byte("2"), offsetDelta: 2, badDelta: true}}
	valid := buildBatch(t, batchSpec{baseTs: 1000}, keyed)
	mutate := func(f func(b []byte) []byte) []byte {
		b := append([]byte(nil), valid...)
		return f(b)
	}
	fixCRC := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[offCRC:], batchCRC(b))
		return b
	}
	type tc struct {
		name    string
		records []byte
		opts    AppendOptions
		want    error
		batches int
		recs    int
	}
	tests := []tc{
		{name: "valid", records: valid, batches: 1, recs: 2},
		{name: "two batches", records: append(append([]byte(nil), valid...), valid...), batches: 2, recs: 4},
		{name: "empty", records: nil, want: ErrInvalidRecord},
		{name: "short", records: valid[:10], want: ErrCorruptMessage},
		{name: "header only", records: valid[:40], want: ErrCorruptMessage},
		{name: "truncated", records: valid[:len(valid)-1], want: ErrCorruptMessage},
		{name: "trailing garbage", records: append(append([]byte(nil), valid...), 1, 2, 3), want: ErrCorruptMessage},
		{name: "magic 1", records: mutate(func(b []byte) []byte { b[offMagic] = 1; return b }), want: ErrUnsupportedMagic},
		{name: "magic 0 short", records: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0}, want: ErrUnsupportedMagic},
		{name: "bad crc", records: mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), want: ErrCorruptMessage},
		{name: "batchLength too small", records: mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[offBatchLength:], 10); return b }), want: ErrCorruptMessage},
		{name: "batchLength negative", records: mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[offBatchLength:], 0xffffffff); return b }), want: ErrCorruptMessage},
		{name: "count mismatch", records: mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offRecordCount:], 3)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 2)
			return fixCRC(b)
		}), want: ErrInvalidRecord},
		{name: "negative count", records: mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[offRecordCount:], 0xffffffff); return fixCRC(b) }), want: ErrInvalidRecord},
		{name: "lastOffsetDelta mismatch", records: mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 5); return fixCRC(b) }), want: ErrInvalidRecord},
		{name: "unknown codec", records: mutate(func(b []byte) []byte { b[offAttributes+1] |= 6; return fixCRC(b) }), want: ErrCorruptMessage},
		{name: "too large", records: valid, opts: AppendOptions{MaxMessageBytes: int32(len(valid) - 1)}, want: ErrMessageTooLarge},
		{name: "exactly max", records: valid, opts: AppendOptions{MaxMessageBytes: int32(len(valid))}, batches: 1, recs: 2},
		{name: "keyless allowed", records: buildBatch(t, batchSpec{}, keyless), batches: 1, recs: 2},
		{name: "keyless rejected", records: buildBatch(t, batchSpec{}, keyless), opts: AppendOptions{RequireKeys: true}, want: ErrInvalidRecord},
		{name: "keyed required", records: valid, opts: AppendOptions{RequireKeys: true}, batches: 1, recs: 2},
		{name: "offset deltas 5,2", records: buildBatch(t, batchSpec{}, badDeltas), want: ErrInvalidRecord},
	}
	for _, codec := range []int{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		for _, xerial := range []bool{false, true} {
			if xerial && codec != CompressionSnappy {
				continue
			}
			spec := batchSpec{codec: codec, xerial: xerial}
			name := map[int]string{1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}[codec]
			if xerial {
				name += "-xerial"
			}
			garbage := buildBatch(t, batchSpec{}, keyed)
			garbage[offAttributes+1] |= byte(codec)
			garbage = fixCRC(garbage)
			tests = append(tests,
				tc{name: name + " keyed", records: buildBatch(t, spec, keyed), opts: AppendOptions{RequireKeys: true}, batches: 1, recs: 2},
				tc{name: name + " keyless unchecked", records: buildBatch(t, spec, keyless), batches: 1, recs: 2},
				tc{name: name + " keyless", records: buildBatch(t, spec, keyless), opts: AppendOptions{RequireKeys: true}, want: ErrInvalidRecord},
				tc{name: name + " offset deltas 5,2", records: buildBatch(t, spec, badDeltas), want: ErrInvalidRecord},
				tc{name: name + " garbage without key checks", records: garbage, want: ErrCorruptMessage},
				tc{name: name + " garbage", records: garbage, opts: AppendOptions{RequireKeys: true}, want: ErrCorruptMessage},
			)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]byte(nil), tt.records...)
			nb, nr, err := ValidateBatches(tt.records, tt.opts)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err == nil && (nb != tt.batches || nr != tt.recs) {
				t.Fatalf("got %d batches %d records, want %d %d", nb, nr, tt.batches, tt.recs)
			}
			if string(before) != string(tt.records) {
				t.Fatal("ValidateBatches modified its input")
			}
		})
	}
}

func TestParseBatchHeader(t *testing.T) {
	b := simpleBatch(t, 3, 10, 5000)
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Size() != int64(len(b)) || h.RecordCount != 3 || h.LastOffsetDelta != 2 || h.BaseTimestamp != 5000 || h.MaxTimestamp != 5002 || h.Magic != 2 || h.ProducerID != -1 {
		t.Fatalf("unexpected header %+v", h)
	}
}

// FuzzValidateBatches: any input must not panic; accepted input must survive
// offset assignment (CRC still valid, offsets contiguous).
func FuzzValidateBatches(f *testing.F) {
	f.Add(simpleBatch(f, 3, 5, 100), false, false)
	f.Add(append(simpleBatch(f, 1, 0, 1), simpleBatch(f, 2, 1, 2)...), true, true)
	for _, c := range []int{1, 2, 3, 4} {
		f.Add(buildBatch(f, batchSpec{codec: c}, []testRecord{{key: []byte("k"), value: []byte("v")}}), true, false)
	}
	f.Add(buildBatch(f, batchSpec{codec: 2, xerial: true}, []testRecord{{key: nil, value: []byte("vvvvvvvvvvvvv")}}), false, true)
	f.Fuzz(func(t *testing.T, data []byte, requireKeys bool, lat bool) {
		o := AppendOptions{RequireKeys: requireKeys, LogAppendTime: lat, LeaderEpoch: 7}
		if requireKeys {
			// Let mutations reach the record and decompression code past the CRC.
			fixCRCs(data)
		}
		nb, nr, err := ValidateBatches(data, o)
		if err != nil {
			if !errors.Is(err, ErrCorruptMessage) && !errors.Is(err, ErrUnsupportedMagic) &&
				!errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		dir := t.TempDir()
		l, err := Open(dir, Options{Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		cp := append([]byte(nil), data...)
		info, err := l.Append(cp, o)
		if err != nil {
			// Append alone knows the idempotence rule: one batch per
			// partition from a producer with an id (KIP-98).
			if nb > 1 && int64(binary.BigEndian.Uint64(data[offProducerID:])) >= 0 && errors.Is(err, ErrInvalidRecord) {
				return
			}
			t.Fatalf("Append of validated input: %v", err)
		}
		if info.NumRecords != nr || info.LastOffset != int64(nr)-1 {
			t.Fatalf("info %+v, want %d records", info, nr)
		}
		res, err := l.Read(0, 1<<30, 1<<62, true)
		if err != nil {
			t.Fatal(err)
		}
		got := readChunks(t, res)
		if string(got) != string(cp) {
			t.Fatal("read bytes differ from stored bytes")
		}
		hs := batchesOf(t, got)
		if len(hs) != nb {
			t.Fatalf("%d batches back, want %d", len(hs), nb)
		}
		if _, _, err := ValidateBatches(got, o); err != nil {
			t.Fatalf("stored batches no longer validate: %v", err)
		}
	})
}

// fixCRCs recomputes the CRC of every batch whose framing is intact.
func fixCRCs(data []byte) {
	for len(data) >= BatchHeaderSize {
		size := int64(int32(binary.BigEndian.Uint32(data[offBatchLength:]))) + batchLengthBase
		if size < BatchHeaderSize || size > int64(len(data)) {
			return
		}
		binary.BigEndian.PutUint32(data[offCRC:], batchCRC(data[:size]))
		data = data[size:]
	}
}

// TestRecordVarintMatchesBinary: recordIter.varint's inline decoding of one-
// and two-byte encodings gives what binary.Varint gives, for every two-byte
// prefix, with and without a byte after it.
func TestRecordVarintMatchesBinary(t *testing.T) {
	for x := range 1 << 16 {
		for _, b := range [][]byte{{byte(x), byte(x >> 8)}, {byte(x), byte(x >> 8), 0x05}, {byte(x)}} {
			var it recordIter
			p := 0
			got, ok := it.varint(b, &p)
			want, n := binary.Varint(b)
			wantOK := n > 0 && want >= -1<<31 && want <= 1<<31-1
			if ok != wantOK || (ok && (int64(got) != want || p != n)) {
				t.Fatalf("% x: varint %d, %v, next %d; binary.Varint %d, %d", b, got, ok, p, want, n)
			}
		}
	}
}

// TestValidateBatchesRecordErrors: record-level refusals name the records
// (RecordsError, wrapping ErrInvalidRecord): every keyless record of a batch
// for a compacted topic, and the first misnumbered one.
func TestValidateBatchesRecordErrors(t *testing.T) {
	k := func(s string) []byte { return []byte(s) }
	keyless := []testRecord{{key: nil, value: k("1")}, {key: k("a"), value: k("2")}, {key: nil, value: k("3")}, {key: nil, value: k("4")}}
	badDeltas := []testRecord{{key: k("a"), value: k("1")}, {key: k("b"), value: k("2"), offsetDelta: 9, badDelta: true}}
	for _, c := range []struct {
		name    string
		records []byte
		keys    bool
		want    []int32
	}{
		{"keyless", buildBatch(t, batchSpec{baseTs: 1000}, keyless), true, []int32{0, 2, 3}},
		{"bad delta", buildBatch(t, batchSpec{baseTs: 1000}, badDeltas), false, []int32{1}},
	} {
		_, _, err := ValidateBatches(c.records, AppendOptions{RequireKeys: c.keys})
		var re *RecordsError
		if !errors.Is(err, ErrInvalidRecord) || !errors.As(err, &re) {
			t.Fatalf("%s: err = %v, want a RecordsError wrapping ErrInvalidRecord", c.name, err)
		}
		var got []int32
		for _, r := range re.Records {
			got = append(got, r.Index)
			if r.Message == "" {
				t.Errorf("%s: record %d without a message", c.name, r.Index)
			}
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: records %v, want %v", c.name, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: records %v, want %v", c.name, got, c.want)
			}
		}
	}
}
