package appliance

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEncodeFetchResponseDecodesWithKmsg checks our zero-copy encoder
// against franz-go's decoder for every version we serve.
func TestEncodeFetchResponseDecodesWithKmsg(t *testing.T) {
	dir := t.TempDir()
	recs := appendBatch(nil, 1700000000000, 0, -1, -1, -1, []kmsg.Record{{Key: []byte("k"), Value: []byte("hello")}, {Value: []byte("world")}})
	path := filepath.Join(dir, "seg")
	// Surround the batch with junk to check that Pos/Len are honoured.
	if err := os.WriteFile(path, append(append([]byte("junkjunk"), recs...), "tail"...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := TopicID{1, 2, 3}
	topics := []fetchTopicOut{{name: "orders", id: id, parts: []fetchPartOut{
		{partition: 0, hw: 2, lso: 2, logStart: 0, hasRecords: true, bytes: int32(len(recs)), chunks: []nvme.Chunk{{File: f, Pos: 8, Len: int32(len(recs))}}},
		{partition: 1, errCode: 1, hw: 5, lso: 5, logStart: 3},
		{partition: 2, hw: 0, lso: 0, logStart: 0, hasRecords: true, readCommitted: true},
	}}}
	for v := int16(4); v <= 16; v++ {
		raw := encodeFetchResponse(v, 0, 0, topics)
		var body bytes.Buffer
		for _, p := range raw.parts {
			if p.chunk.File != nil {
				buf := make([]byte, p.chunk.Len)
				if _, err := p.chunk.File.ReadAt(buf, p.chunk.Pos); err != nil {
					t.Fatal(err)
				}
				body.Write(buf)
			} else {
				body.Write(p.b)
			}
		}
		if body.Len() != raw.size() {
			t.Fatalf("v%d: size() %d, wrote %d", v, raw.size(), body.Len())
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		if err := resp.ReadFrom(body.Bytes()); err != nil {
			t.Fatalf("v%d: kmsg cannot decode: %v", v, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("v%d: got %+v", v, resp)
		}
		rt := resp.Topics[0]
		if v >= 13 && rt.TopicID != id {
			t.Fatalf("v%d: topic id %v", v, rt.TopicID)
		}
		if v < 13 && rt.Topic != "orders" {
			t.Fatalf("v%d: topic %q", v, rt.Topic)
		}
		p0, p1, p2 := rt.Partitions[0], rt.Partitions[1], rt.Partitions[2]
		if !bytes.Equal(p0.RecordBatches, recs) || p0.HighWatermark != 2 || p0.LastStableOffset != 2 {
			t.Fatalf("v%d: partition 0 = %+v", v, p0)
		}
		if p1.ErrorCode != 1 || p1.HighWatermark != 5 || p1.RecordBatches == nil || len(p1.RecordBatches) != 0 {
			t.Fatalf("v%d: partition 1 = %+v", v, p1)
		}
		if v >= 5 && p1.LogStartOffset != 3 {
			t.Fatalf("v%d: partition 1 log start %d", v, p1.LogStartOffset)
		}
		if p2.AbortedTransactions == nil || len(p2.AbortedTransactions) != 0 || p1.AbortedTransactions != nil {
			t.Fatalf("v%d: aborted transactions %v / %v", v, p2.AbortedTransactions, p1.AbortedTransactions)
		}
		if v >= 11 && p0.PreferredReadReplica != -1 {
			t.Fatalf("v%d: preferred read replica %d", v, p0.PreferredReadReplica)
		}
	}
}

func TestAppendBatchIsValidV2(t *testing.T) {
	b := appendBatch(nil, 42, 0, -1, -1, -1, []kmsg.Record{{Key: []byte("a"), Value: []byte("1")}, {Value: []byte("2")}, {Value: nil}})
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.NumRecords != 3 || rb.LastOffsetDelta != 2 || int(rb.Length)+12 != len(b) {
		t.Fatalf("batch header %+v", rb)
	}
	if binary.BigEndian.Uint32(b[17:]) != uint32(rb.CRC) {
		t.Fatal("crc field mismatch")
	}
	var got []string
	err := readBatches(b, func(_ *kmsg.RecordBatch, off int64, r *kmsg.Record) error {
		got = append(got, string(r.Value))
		if off != int64(len(got)-1) {
			t.Fatalf("offset %d for record %d", off, len(got)-1)
		}
		return nil
	})
	if err != nil || len(got) != 3 || got[0] != "1" || got[1] != "2" || got[2] != "" {
		t.Fatalf("readBatches = %v, %v", got, err)
	}
}
