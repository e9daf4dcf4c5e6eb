package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendFetchPartitionTags appends the tagged fields of one FetchResponse
// partition (flexible versions, v12+), in tag order: DivergingEpoch (tag
// 0: epoch int32, end_offset int64) when diverging, and CurrentLeader
// (tag 1: leader_id int32, leader_epoch int32; KIP-951) when hint. With
// neither it appends the empty tag section, one zero byte.
func AppendFetchPartitionTags(buf []byte, diverging bool, divEpoch int32, divEnd int64, hint bool, leaderID, leaderEpoch int32) []byte {
	n := byte(0)
	if diverging {
		n++
	}
	if hint {
		n++
	}
	buf = append(buf, n)
	if diverging {
		buf = append(buf, 0, 13)
		buf = binary.BigEndian.AppendUint32(buf, uint32(divEpoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(divEnd))
		buf = append(buf, 0)
	}
	if hint {
		buf = append(buf, 1, 9)
		buf = binary.BigEndian.AppendUint32(buf, uint32(leaderID))
		buf = binary.BigEndian.AppendUint32(buf, uint32(leaderEpoch))
		buf = append(buf, 0)
	}
	return buf
}

// AppendFetchResponseTags appends the tagged fields of a FetchResponse
// (flexible versions): NodeEndpoints (tag 0, kmsg's Brokers; KIP-951, v16+)
// when version is 16 or more and brokers is not empty, each as node_id
// int32, host compact string, port int32, rack compact nullable string.
// Otherwise the empty tag section.
func AppendFetchResponseTags(buf []byte, version int16, brokers []kmsg.FetchResponseBroker) []byte {
	if version < 16 || len(brokers) == 0 {
		return append(buf, 0)
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(brokers)+1))
	for _, b := range brokers {
		body = binary.BigEndian.AppendUint32(body, uint32(b.NodeID))
		body = binary.AppendUvarint(body, uint64(len(b.Host)+1))
		body = append(body, b.Host...)
		body = binary.BigEndian.AppendUint32(body, uint32(b.Port))
		if b.Rack == nil {
			body = append(body, 0)
		} else {
			body = binary.AppendUvarint(body, uint64(len(*b.Rack)+1))
			body = append(body, *b.Rack...)
		}
		body = append(body, 0)
	}
	buf = append(buf, 1, 0)
	buf = binary.AppendUvarint(buf, uint64(len(body)))
	return append(buf, body...)
}
