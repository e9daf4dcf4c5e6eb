package appliance

import (
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// appendBatch is nvme.AppendBatch: one uncompressed record batch v2
// holding recs.
func appendBatch(dst []byte, ts int64, attrs int16, producerID int64, producerEpoch int16, baseSeq int32, recs []kmsg.Record) []byte {
	return nvme.AppendBatch(dst, ts, attrs, producerID, producerEpoch, baseSeq, recs)
}

// readBatches is nvme.ReadBatches: the records of uncompressed batches.
func readBatches(raw []byte, fn func(b *kmsg.RecordBatch, offset int64, r *kmsg.Record) error) error {
	return nvme.ReadBatches(raw, fn)
}
