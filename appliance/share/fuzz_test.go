package share

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/nvme"
)

// FuzzShareRecord feeds arbitrary keys and values to the share record
// loader (key versions 100 and 101): errors are fine, panics are not, and
// a record that loads encodes back to the same key.
func FuzzShareRecord(f *testing.F) {
	tp := shareTP{TopicID{1, 2, 3}, 7}
	f.Add(shareGroupKey("g"), shareGroupRecord(&shareGroup{id: "g", epoch: 3}).Value)
	f.Add(sharePartitionKey("g", tp), sharePartitionRecord("g", tp, shareStart{42, 1}).Value)
	f.Add(sharePartitionKey("g", tp), []byte(nil))
	f.Add([]byte{0, 101, 0, 9, 'g'}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		env := &fakeEnv{t: time.Unix(0, 0)}
		sm := newManager(env, fakeClassicGroups{})
		if !IsShareKey(key) {
			return
		}
		if err := sm.LoadRecord(key, value); err != nil || value == nil {
			return
		}
		for id, g := range sm.groups {
			if len(g.parts) == 0 {
				if string(shareGroupKey(id)) != string(key) {
					t.Fatalf("group key %x loaded as group %q", key, id)
				}
			}
			for tp := range g.parts {
				if string(sharePartitionKey(id, tp)) != string(key) {
					t.Fatalf("share-partition key %x loaded as %q %v", key, id, tp)
				}
			}
		}
	})
}

// FuzzParseISODuration checks the duration parser never panics and never
// returns a negative duration.
func FuzzParseISODuration(f *testing.F) {
	for _, s := range []string{"PT1H", "P1DT2H3M4.5S", "P", "PT", "-PT1S", "P99999999999999999999D"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseISODuration(s); err == nil && d < 0 {
			t.Fatalf("parseISODuration(%q) = %v", s, d)
		}
	})
}

// FuzzBatchHeaders walks arbitrary bytes as record batches the way the
// read_committed pass does (forEachBatchHeader, batchesEnd): it never
// panics, reports only batches raw holds whole, in order, and batchesEnd
// agrees with the last one.
func FuzzBatchHeaders(f *testing.F) {
	batch := func(base int64, lastDelta int32, attrs int16, pid int64) []byte {
		b := make([]byte, nvme.BatchHeaderSize)
		binary.BigEndian.PutUint64(b, uint64(base))
		binary.BigEndian.PutUint32(b[8:], uint32(nvme.BatchHeaderSize-12))
		b[16] = 2
		binary.BigEndian.PutUint16(b[21:], uint16(attrs))
		binary.BigEndian.PutUint32(b[23:], uint32(lastDelta))
		binary.BigEndian.PutUint64(b[43:], uint64(pid))
		return b
	}
	f.Add(batch(0, 4, 0x10, 7))
	f.Add(append(batch(0, 4, 0, -1), batch(5, 0, 0x30, 7)...))
	f.Add(append(batch(3, 1, 0x10, 9), 0, 1, 2))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		seen := 0
		last := int64(-1)
		forEachBatchHeader(raw, func(h nvme.BatchHeader) {
			if h.Size() < nvme.BatchHeaderSize || int64(seen)+h.Size() > int64(len(raw)) {
				t.Fatalf("batch of %d bytes at %d of %d", h.Size(), seen, len(raw))
			}
			if h.BaseOffset != int64(binary.BigEndian.Uint64(raw[seen:])) {
				t.Fatalf("base offset %d at %d", h.BaseOffset, seen)
			}
			seen += int(h.Size())
			last = h.LastOffset() + 1
		})
		if end := batchesEnd(raw); end != last {
			t.Fatalf("batchesEnd %d, last batch ends at %d", end, last)
		}
	})
}
