package nvme

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRecordBatchRoundTrip: batches AppendBatch writes pass
// ValidateBatches and ReadBatches returns their records, with offsets
// from each batch's base.
func TestRecordBatchRoundTrip(t *testing.T) {
	var raw []byte
	for b := 0; b < 3; b++ {
		recs := make([]kmsg.Record, b+1)
		for i := range recs {
			recs[i] = kmsg.Record{Key: []byte(fmt.Sprintf("k%d-%d", b, i)), Value: []byte(fmt.Sprintf("v%d-%d", b, i))}
		}
		raw = AppendBatch(raw, 1700000000000, 0, -1, -1, -1, recs)
	}
	if n, recs, err := ValidateBatches(raw, AppendOptions{MaxMessageBytes: 1 << 20}); err != nil || n != 3 || recs != 6 {
		t.Fatalf("ValidateBatches = %d batches, %d records, %v; want 3, 6", n, recs, err)
	}
	var got []string
	err := ReadBatches(raw, func(b *kmsg.RecordBatch, off int64, r *kmsg.Record) error {
		got = append(got, fmt.Sprintf("%d:%s=%s", off, r.Key, r.Value))
		return nil
	})
	want := "0:k0-0=v0-0 0:k1-0=v1-0 1:k1-1=v1-1 0:k2-0=v2-0 1:k2-1=v2-1 2:k2-2=v2-2"
	if err != nil || fmt.Sprint(got) != "["+want+"]" {
		t.Fatalf("ReadBatches = %v, %v; want %s", got, err, want)
	}
}

// FuzzReadBatches: any bytes are read or refused, never a panic, and what
// is read encodes again to batches that read back the same records.
func FuzzReadBatches(f *testing.F) {
	f.Add(AppendBatch(nil, 1, 0, -1, -1, -1, []kmsg.Record{{Key: []byte("k"), Value: []byte("v")}, {Value: []byte("w")}}))
	f.Add(AppendBatch(nil, 1, 0x20, 7, 1, 0, []kmsg.Record{{Value: []byte{0, 0, 0, 1}}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var recs []kmsg.Record
		if err := ReadBatches(raw, func(_ *kmsg.RecordBatch, _ int64, r *kmsg.Record) error {
			recs = append(recs, kmsg.Record{Key: r.Key, Value: r.Value, Headers: r.Headers})
			return nil
		}); err != nil || len(recs) == 0 {
			return
		}
		again := AppendBatch(nil, 1, 0, -1, -1, -1, recs)
		i := 0
		if err := ReadBatches(again, func(_ *kmsg.RecordBatch, _ int64, r *kmsg.Record) error {
			if !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) || len(r.Headers) != len(recs[i].Headers) {
				return fmt.Errorf("record %d differs", i)
			}
			i++
			return nil
		}); err != nil || i != len(recs) {
			t.Fatalf("re-encoded records: %v (%d of %d)", err, i, len(recs))
		}
	})
}
