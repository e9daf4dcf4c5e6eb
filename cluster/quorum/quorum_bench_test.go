package quorum

import (
	"context"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func BenchmarkRecordEncodeDecode(b *testing.B) {
	e := ent(12345, 7, string(make([]byte, 512)))
	b.ReportAllocs()
	b.SetBytes(512)
	var buf []byte
	for b.Loop() {
		buf = appendEntryRecord(buf[:0], e)
		if _, _, err := decodeRecord(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFrameEncode(b *testing.B) {
	m := &raftpb.Message{Type: raftpb.MsgApp.Enum(), To: new(uint64(2)), From: new(uint64(1)), Term: new(uint64(3)),
		Entries: []*raftpb.Entry{ent(4, 3, string(make([]byte, 512)))}}
	b.ReportAllocs()
	b.SetBytes(512)
	var buf []byte
	for b.Loop() {
		var err error
		if buf, err = appendFrame(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPropose measures committed proposals of 256 bytes from 8
// concurrent proposers (the loop batches what waits), in-process.
func BenchmarkPropose(b *testing.B) {
	for _, voters := range []int{1, 3} {
		for _, disk := range []bool{false, true} {
			b.Run(fmt.Sprintf("voters=%d/disk=%v", voters, disk), func(b *testing.B) {
				c := newCluster(b, voters, disk, nil)
				lead := c.node(c.waitLeader(c.ids))
				payload := make([]byte, 256)
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := lead.Propose(context.Background(), payload); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
