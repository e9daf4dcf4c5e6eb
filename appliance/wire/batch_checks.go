package wire

import "encoding/binary"

// ClientBatchViolation reports why a client's records may not be appended,
// or "": a partition's records are exactly one record batch (Kafka's
// ProduceRequest.validateRecords for produce v3+, the versions served
// here: a second whole batch is refused, whatever the producer), clients
// may not write control batches (transaction markers are the
// coordinator's), and transactional batches need a transactional id in the
// request. Malformed framing, trailing bytes short of a second batch
// included, is left to the log's validation.
func ClientBatchViolation(records []byte, txn bool) string {
	if len(records) < 23 {
		return ""
	}
	attrs := binary.BigEndian.Uint16(records[21:])
	if attrs&0x20 != 0 {
		return "clients may not write control batches"
	}
	if attrs&0x10 != 0 && !txn {
		return "transactional batches need a transactional id in the produce request"
	}
	n := int64(int32(binary.BigEndian.Uint32(records[8:]))) + 12
	if n < 23 || n > int64(len(records)) {
		return ""
	}
	if rest := records[n:]; len(rest) >= 12 {
		if m := int64(int32(binary.BigEndian.Uint32(rest[8:]))) + 12; m >= 61 && m <= int64(len(rest)) {
			return "produce requests of version 3 and above carry exactly one record batch per partition"
		}
	}
	return ""
}
