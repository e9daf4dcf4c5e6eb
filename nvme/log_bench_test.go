package nvme

import (
	"testing"
)

func BenchmarkAppend(b *testing.B) {
	l := mustOpen(b, b.TempDir(), testOptions(b))
	defer l.Close()
	batch := simpleBatch(b, 16, 1000, 1)
	buf := make([]byte, len(batch))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, batch)
		if _, err := l.Append(buf, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	o := testOptions(b)
	o.SegmentBytes = 64 << 20
	l := mustOpen(b, b.TempDir(), o)
	defer l.Close()
	batch := simpleBatch(b, 16, 1000, 1)
	for i := 0; i < 4096; i++ {
		if _, err := l.Append(append([]byte(nil), batch...), AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		res, err := l.Read(int64(i*97)%leo, 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		n += int64(res.Bytes)
	}
	b.SetBytes(n / int64(b.N))
}

func BenchmarkValidateBatches(b *testing.B) {
	batch := simpleBatch(b, 16, 1000, 1)
	var d decompressor
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := validateBatches(batch, AppendOptions{}, &d, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckRecords walks the records of a produced batch as Append's
// validation does: 16 records of 1000-byte values, as ringbench sends.
func BenchmarkCheckRecords(b *testing.B) {
	batch := simpleBatch(b, 16, 1000, 1)
	h, err := ParseBatchHeader(batch)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if err := checkRecords(batch[BatchHeaderSize:], h, recordRules{}); err != nil {
			b.Fatal(err)
		}
	}
}
