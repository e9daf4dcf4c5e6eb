package appliance

import (
	"encoding/binary"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/ringbroker/ringbroker/nvme"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchPartOut is one partition of a fetch response.
type fetchPartOut struct {
	partition             int32
	errCode               int16
	hw                    int64
	lso                   int64
	logStart              int64
	readCommitted         bool // aborted transactions: an array (maybe empty) instead of null
	aborted               []nvme.AbortedTxn
	chunks                []nvme.Chunk
	ends                  []int32 // where each batch of chunks ends (nvme.Log.ReadBatchesInto), for trimToMaxBytes
	bytes                 int32
	maxBytes              int32 // the request's partition_max_bytes
	limited               bool  // the read stopped at its byte limit with more readable (nvme.ReadResult.Limited)
	hasRecords            bool  // false: no records (sent as empty, never null)
	diverging             bool  // DivergingEpoch tag with divergingEpoch and hw as its end offset
	divergingEpoch        int32
	leaderHint            bool // CurrentLeader tag (KIP-951) with leaderID and leaderEpoch
	leaderID, leaderEpoch int32
	read                  bool  // read from its log (not refused): a full fetch's new session holds it
	sessIdx               int32 // its index in the fetch session, -1: not a session partition
	skip                  bool  // an incremental answer leaves it out (fetchState.sessionAnswer)
}

// fetchTopicOut is one topic of a fetch response.
type fetchTopicOut struct {
	name  string
	id    TopicID
	parts []fetchPartOut
}

// encodeFetchResponse builds the body of a FetchResponse v4-v16 as byte
// parts and file chunks, so record bytes go from the segment file to the
// socket without passing through the Go heap. Field order and types follow
// the FetchResponse schema; flexible encoding (compact arrays, uvarint
// lengths, tagged fields) from v12.
func encodeFetchResponse(version int16, errCode int16, sessionID int32, topics []fetchTopicOut) *rawResponse {
	var e fetchEncoder
	return e.encode(version, errCode, sessionID, topics)
}

// fetchEncoder encodes fetch responses into storage it keeps: the returned
// rawResponse and the bytes its parts point into are valid until the next
// encode (or until detachBuf, after which encode starts a new buffer).
type fetchEncoder struct {
	raw   rawResponse
	buf   []byte
	spans []int // per byte part: its index in raw.parts, then its end in buf
	// brokers are the leaders' endpoints for NOT_LEADER_OR_FOLLOWER hints.
	brokers []kmsg.FetchResponseBroker
}

// detachBuf gives the current buffer away (a transport sends it in place).
func (e *fetchEncoder) detachBuf() { e.buf = nil }

// encode is encodeFetchResponse into e's storage. The header bytes of all
// parts go into one buffer; parts point into it once it stops growing.
func (e *fetchEncoder) encode(version int16, errCode int16, sessionID int32, topics []fetchTopicOut) *rawResponse {
	flex := version >= 12
	out := &e.raw
	out.flexible = flex
	out.parts = out.parts[:0]
	e.spans = e.spans[:0]
	buf := e.buf[:0]
	buf = binary.BigEndian.AppendUint32(buf, 0) // throttle_time_ms (v1+)
	if version >= 7 {
		buf = binary.BigEndian.AppendUint16(buf, uint16(errCode))
		buf = binary.BigEndian.AppendUint32(buf, uint32(sessionID))
	}
	nt := 0
	for i := range topics {
		if sentParts(topics[i].parts) > 0 || len(topics[i].parts) == 0 {
			nt++
		}
	}
	buf = appendArrayLen(buf, flex, nt)
	for _, t := range topics {
		np := sentParts(t.parts)
		if np == 0 && len(t.parts) > 0 {
			continue // an incremental answer with nothing to say of this topic
		}
		if version >= 13 {
			buf = append(buf, t.id[:]...)
		} else {
			buf = appendString(buf, flex, t.name)
		}
		buf = appendArrayLen(buf, flex, np)
		for _, p := range t.parts {
			if p.skip {
				continue
			}
			buf = binary.BigEndian.AppendUint32(buf, uint32(p.partition))
			buf = binary.BigEndian.AppendUint16(buf, uint16(p.errCode))
			buf = binary.BigEndian.AppendUint64(buf, uint64(p.hw))
			buf = binary.BigEndian.AppendUint64(buf, uint64(p.lso)) // v4+
			if version >= 5 {
				buf = binary.BigEndian.AppendUint64(buf, uint64(p.logStart))
			}
			// aborted_transactions: null, or the list for read_committed.
			if p.readCommitted {
				buf = appendArrayLen(buf, flex, len(p.aborted))
				for _, a := range p.aborted {
					buf = binary.BigEndian.AppendUint64(buf, uint64(a.ProducerID))
					buf = binary.BigEndian.AppendUint64(buf, uint64(a.FirstOffset))
					if flex {
						buf = append(buf, 0)
					}
				}
			} else {
				buf = appendArrayLen(buf, flex, -1)
			}
			if version >= 11 {
				buf = binary.BigEndian.AppendUint32(buf, 0xffffffff) // preferred_read_replica -1
			}
			// records: nullable bytes, but never null: an errored partition
			// carries empty records as Kafka sends them (librdkafka treats a
			// null MessageSet as a parse failure and refetches in a loop).
			switch {
			case !p.hasRecords:
				if flex {
					buf = binary.AppendUvarint(buf, 1)
				} else {
					buf = binary.BigEndian.AppendUint32(buf, 0)
				}
			case flex:
				buf = binary.AppendUvarint(buf, uint64(p.bytes)+1)
			default:
				buf = binary.BigEndian.AppendUint32(buf, uint32(p.bytes))
			}
			if p.hasRecords && p.bytes > 0 {
				e.spans = append(e.spans, len(out.parts), len(buf))
				out.parts = append(out.parts, respPart{})
				for _, c := range p.chunks {
					out.parts = append(out.parts, respPart{chunk: c})
				}
			}
			if flex {
				buf = wire.AppendFetchPartitionTags(buf, p.diverging, p.divergingEpoch, p.hw, p.leaderHint, p.leaderID, p.leaderEpoch)
			}
		}
		if flex {
			buf = append(buf, 0) // topic tags
		}
	}
	if flex {
		buf = wire.AppendFetchResponseTags(buf, version, e.brokers) // NodeEndpoints (v16+)
	}
	e.spans = append(e.spans, len(out.parts), len(buf))
	out.parts = append(out.parts, respPart{})
	lo := 0
	for i := 0; i < len(e.spans); i += 2 {
		hi := e.spans[i+1]
		out.parts[e.spans[i]].b = buf[lo:hi:hi]
		lo = hi
	}
	e.buf = buf
	return out
}

// sentParts counts the partitions of a response topic that are sent.
func sentParts(parts []fetchPartOut) int {
	n := 0
	for i := range parts {
		if !parts[i].skip {
			n++
		}
	}
	return n
}

func appendArrayLen(buf []byte, flex bool, n int) []byte {
	if flex {
		return binary.AppendUvarint(buf, uint64(n+1))
	}
	return binary.BigEndian.AppendUint32(buf, uint32(int32(n)))
}

func appendString(buf []byte, flex bool, s string) []byte {
	if flex {
		buf = binary.AppendUvarint(buf, uint64(len(s)+1))
	} else {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(s)))
	}
	return append(buf, s...)
}
