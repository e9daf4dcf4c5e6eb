package metadata

import (
	"fmt"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EncodeBatch returns recs as one Kafka record batch (base offset 0), one cluster/records binary record per
// Kafka record: the payload of one metadata quorum entry, as Log
// appends a commit.
func EncodeBatch(recs []Record) ([]byte, error) {
	krecs := make([]kmsg.Record, len(recs))
	for i, r := range recs {
		br, err := ToBinary(r)
		if err != nil {
			return nil, err
		}
		krecs[i] = kmsg.Record{Value: br.AppendTo(nil)}
	}
	return nvme.AppendBatch(nil, time.Now().UnixMilli(), 0, -1, -1, -1, krecs), nil
}

// DecodeBatch decodes the record batches in b (EncodeBatch's bytes)
// into records that apply to im, in order.
func DecodeBatch(im *Image, b []byte) ([]Record, error) {
	pl := NewConverter(im)
	var recs []Record
	err := nvme.ReadBatches(b, func(_ *kmsg.RecordBatch, offset int64, r *kmsg.Record) error {
		rec, err := records.Decode(r.Value)
		if err != nil {
			return fmt.Errorf("cannot decode metadata record %d of the batch: %w", offset, err)
		}
		recs, err = pl.Convert(recs, rec)
		return err
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// EncodeSnapshot returns im as the bytes of a snapshot file
// (<offset>-<epoch>.checkpoint): the metadata quorum's snapshot data.
func EncodeSnapshot(im *Image) ([]byte, error) { return encodeSnapshot(im) }

// DecodeSnapshot decodes EncodeSnapshot's bytes into the image at
// offset (the offset of its last record) built with checks c.
func DecodeSnapshot(raw []byte, offset int64, c Checks) (*Image, error) {
	return decodeSnapshot(raw, offset+1, c)
}
