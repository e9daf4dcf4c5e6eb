package appliance

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A caught-up consumer's fetch of 1,000 idle partitions: sessionless (the
// request names and the answer carries all 1,000) against an incremental
// session fetch (names none, answers none). MaxWait 0: the cost of one
// round trip, request bytes and answer bytes reported per fetch.
func BenchmarkFetchIdle1000(b *testing.B) {
	for _, mode := range []string{"sessionless", "incremental"} {
		b.Run(mode, func(b *testing.B) {
			f := newAllocFixture(b)
			ct := kmsg.NewPtrCreateTopicsRequest()
			ctt := kmsg.NewCreateTopicsRequestTopic()
			ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "idle", 1000, 1
			ct.Topics, ct.TimeoutMillis = append(ct.Topics, ctt), 60000
			f.c.roundTrip(frameOf(ct, 7, 1), true)
			id := f.b.currentImage().Topics["idle"].ID
			full := kmsg.NewPtrFetchRequest()
			full.ReplicaID, full.MaxWaitMillis, full.MinBytes, full.MaxBytes = -1, 0, 0, 1<<20
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = "idle", id
			for p := range int32(1000) {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.PartitionMaxBytes = p, 1<<20
				ft.Partitions = append(ft.Partitions, fp)
			}
			full.Topics = append(full.Topics, ft)
			full.SessionEpoch = -1
			var frame []byte
			if mode == "incremental" {
				full.SessionEpoch = 0
				resp := kmsg.NewPtrFetchResponse()
				resp.SetVersion(13)
				if err := resp.ReadFrom(f.c.roundTrip(frameOf(full, 13, 2), true)); err != nil || resp.SessionID == 0 {
					b.Fatalf("no session: %v", err)
				}
				inc := kmsg.NewPtrFetchRequest()
				inc.ReplicaID, inc.MaxWaitMillis, inc.MinBytes, inc.MaxBytes = -1, 0, 0, 1<<20
				inc.SessionID = resp.SessionID
				epoch := int32(1)
				b.ReportAllocs()
				b.ResetTimer()
				var in, out int
				for range b.N {
					inc.SessionEpoch = epoch
					epoch++
					frame = frameOf(inc, 13, 3)
					in += len(frame)
					out += len(f.c.roundTrip(frame, true))
				}
				b.ReportMetric(float64(in)/float64(b.N), "req-bytes/op")
				b.ReportMetric(float64(out)/float64(b.N), "resp-bytes/op")
				return
			}
			frame = frameOf(full, 13, 3)
			b.ReportAllocs()
			b.ResetTimer()
			var out int
			for range b.N {
				out += len(f.c.roundTrip(frame, true))
			}
			b.ReportMetric(float64(len(frame)), "req-bytes/op")
			b.ReportMetric(float64(out)/float64(b.N), "resp-bytes/op")
		})
	}
}
