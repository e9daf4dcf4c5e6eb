package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"go.etcd.io/raft/v3/raftpb"
)

// The log file of DiskStorage is a sequence of records, each
//
//	+--------+--------+------+----------------------+
//	| length | crc32c | kind | body                 |
//	| u32 BE | u32 BE | u8   | length-1 bytes       |
//	+--------+--------+------+----------------------+
//
// where length counts kind and body and the CRC (Castagnoli) covers
// them. The bodies by kind:
//
//	kind 1, an entry:      index u64 | term u64 | type u8 | data
//	kind 2, a hard state:  term u64 | vote u64 | commit u64
//
// (all big-endian). A record cut short or with a wrong CRC is a torn
// write when it is the file's tail.
const (
	recordHeader    = 8
	kindEntry       = 1
	kindHardState   = 2
	entryBodyFixed  = 17
	hardStateBody   = 24
	maxRecordLength = 256 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of decodeRecord.
var (
	// errShortRecord: the bytes end inside the record (a torn tail).
	errShortRecord = errors.New("record cut short")
	// errBadRecord: the record's length, CRC, kind or body is wrong.
	errBadRecord = errors.New("bad record")
)

// record is a decoded log record: an entry or a hard state.
type record struct {
	entry *raftpb.Entry
	hs    *raftpb.HardState
}

// appendEntryRecord appends e's record to dst.
func appendEntryRecord(dst []byte, e *raftpb.Entry) []byte {
	body := 1 + entryBodyFixed + len(e.GetData())
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(body))
	dst = append(dst, 0, 0, 0, 0, kindEntry)
	dst = binary.BigEndian.AppendUint64(dst, e.GetIndex())
	dst = binary.BigEndian.AppendUint64(dst, e.GetTerm())
	dst = append(dst, byte(e.GetType()))
	dst = append(dst, e.GetData()...)
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+recordHeader:], castagnoli))
	return dst
}

// appendHardStateRecord appends hs's record to dst.
func appendHardStateRecord(dst []byte, hs *raftpb.HardState) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, 1+hardStateBody)
	dst = append(dst, 0, 0, 0, 0, kindHardState)
	dst = binary.BigEndian.AppendUint64(dst, hs.GetTerm())
	dst = binary.BigEndian.AppendUint64(dst, hs.GetVote())
	dst = binary.BigEndian.AppendUint64(dst, hs.GetCommit())
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+recordHeader:], castagnoli))
	return dst
}

// decodeRecord decodes the record at the start of b and returns it with
// its size. The entry's data is a copy (b may be reused).
func decodeRecord(b []byte) (record, int, error) {
	if len(b) < recordHeader {
		return record{}, 0, errShortRecord
	}
	length := binary.BigEndian.Uint32(b)
	if length < 1 || length > maxRecordLength {
		return record{}, 0, fmt.Errorf("%w: length %d", errBadRecord, length)
	}
	end := recordHeader + int(length)
	if len(b) < end {
		return record{}, 0, errShortRecord
	}
	if got, want := crc32.Checksum(b[recordHeader:end], castagnoli), binary.BigEndian.Uint32(b[4:]); got != want {
		return record{}, 0, fmt.Errorf("%w: crc32c %08x, want %08x", errBadRecord, got, want)
	}
	body := b[recordHeader+1 : end]
	switch b[recordHeader] {
	case kindEntry:
		if len(body) < entryBodyFixed {
			return record{}, 0, fmt.Errorf("%w: entry body of %d bytes", errBadRecord, len(body))
		}
		t := raftpb.EntryType(body[16])
		if t != raftpb.EntryNormal && t != raftpb.EntryConfChange && t != raftpb.EntryConfChangeV2 {
			return record{}, 0, fmt.Errorf("%w: entry type %d", errBadRecord, body[16])
		}
		e := &raftpb.Entry{
			Index: new(binary.BigEndian.Uint64(body)),
			Term:  new(binary.BigEndian.Uint64(body[8:])),
			Type:  t.Enum(),
		}
		if data := body[entryBodyFixed:]; len(data) > 0 {
			e.Data = append([]byte(nil), data...)
		}
		return record{entry: e}, end, nil
	case kindHardState:
		if len(body) != hardStateBody {
			return record{}, 0, fmt.Errorf("%w: hard state body of %d bytes", errBadRecord, len(body))
		}
		return record{hs: &raftpb.HardState{
			Term:   new(binary.BigEndian.Uint64(body)),
			Vote:   new(binary.BigEndian.Uint64(body[8:])),
			Commit: new(binary.BigEndian.Uint64(body[16:])),
		}}, end, nil
	default:
		return record{}, 0, fmt.Errorf("%w: kind %d", errBadRecord, b[recordHeader])
	}
}
