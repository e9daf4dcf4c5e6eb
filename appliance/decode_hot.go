package appliance

// Decoders of the Produce (v3-v11) and Fetch (v4-v16) request bodies into
// reused kmsg structs. kmsg's own ReadFrom reuses a struct's top-level
// slices but zeroes their elements, so every topic's partition slice is
// allocated again per request; these keep the capacity at every level and
// alias the frame (strings too, so the caller interns them before the
// frame is reused: internStrings). They accept what kmsg accepts for these
// versions and fill the same fields, which TestHotDecodersMatchKmsg checks
// against kmsg for every version; unknown tagged fields are skipped.

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var errShortBody = errors.New("request body truncated")

// wireReader reads Kafka's primitive types with a sticky error.
type wireReader struct {
	b   []byte
	bad bool
}

func (r *wireReader) take(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.bad = true
		r.b = nil
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *wireReader) i8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *wireReader) i16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *wireReader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *wireReader) i64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *wireReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// length reads a (compact) length: -1 is null.
func (r *wireReader) length(flex bool, int16Len bool) int {
	switch {
	case flex:
		v := r.uvarint()
		if v > 1<<31 {
			r.bad = true
			return -1
		}
		return int(v) - 1
	case int16Len:
		return int(r.i16())
	default:
		return int(r.i32())
	}
}

// arrayLen reads an array length and checks that n elements of at least
// minSize bytes fit; a null array reads as empty.
func (r *wireReader) arrayLen(flex bool, minSize int) int {
	n := r.length(flex, false)
	if n < 0 {
		return 0
	}
	if n*minSize > len(r.b) {
		r.bad = true
		r.b = nil
		return 0
	}
	return n
}

// str reads a string aliasing the input; null reads as "".
func (r *wireReader) str(flex bool) (string, bool) {
	n := r.length(flex, true)
	if n < 0 {
		return "", false
	}
	b := r.take(n)
	if len(b) == 0 {
		return "", !r.bad
	}
	return unsafe.String(&b[0], len(b)), true
}

func (r *wireReader) nullableBytes(flex bool) []byte {
	n := r.length(flex, false)
	if n < 0 {
		return nil
	}
	return r.take(n)
}

// tags calls fn for each tagged field with its bytes; fn may be nil.
func (r *wireReader) tags(fn func(tag uint64, b []byte)) {
	n := r.uvarint()
	for i := uint64(0); i < n && !r.bad; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		if size > uint64(len(r.b)) {
			r.bad = true
			r.b = nil
			return
		}
		b := r.take(int(size))
		if fn != nil && !r.bad {
			fn(tag, b)
		}
	}
}

// stringPtr returns a pointer to a copy of s (allocating only when called).
func stringPtr(s string) *string { return &s }

// resize returns s with length n, keeping the elements' own slices.
func resize[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}

// decodeProduce decodes a Produce request body of version 3-11 into req.
func decodeProduce(req *kmsg.ProduceRequest, version int16, body []byte) error {
	flex := version >= 9
	r := wireReader{b: body}
	topics := req.Topics
	*req = kmsg.ProduceRequest{Version: version}
	if s, ok := r.str(flex); ok {
		req.TransactionID = stringPtr(s)
	}
	req.Acks = r.i16()
	req.TimeoutMillis = r.i32()
	topics = resize(topics, r.arrayLen(flex, 2))
	for i := range topics {
		t := &topics[i]
		name, _ := r.str(flex)
		parts := t.Partitions
		parts = resize(parts, r.arrayLen(flex, 6))
		for j := range parts {
			p := &parts[j]
			*p = kmsg.ProduceRequestTopicPartition{Partition: r.i32()}
			p.Records = r.nullableBytes(flex)
			if flex {
				r.tags(nil)
			}
		}
		*t = kmsg.ProduceRequestTopic{Topic: name, Partitions: parts}
		if flex {
			r.tags(nil)
		}
	}
	req.Topics = topics
	if flex {
		r.tags(nil)
	}
	if r.bad {
		return errShortBody
	}
	return nil
}

// decodeFetch decodes a Fetch request body of version 4-16 into req.
func decodeFetch(req *kmsg.FetchRequest, version int16, body []byte) error {
	flex := version >= 12
	r := wireReader{b: body}
	topics, forgotten := req.Topics, req.ForgottenTopics
	*req = kmsg.FetchRequest{Version: version}
	req.Default()
	if version <= 14 {
		req.ReplicaID = r.i32()
	}
	req.MaxWaitMillis = r.i32()
	req.MinBytes = r.i32()
	req.MaxBytes = r.i32()
	req.IsolationLevel = r.i8()
	if version >= 7 {
		req.SessionID = r.i32()
		req.SessionEpoch = r.i32()
	}
	topics = resize(topics, r.arrayLen(flex, 2))
	for i := range topics {
		t := &topics[i]
		var name string
		var id [16]byte
		if version >= 13 {
			copy(id[:], r.take(16))
		} else {
			name, _ = r.str(flex)
		}
		parts := t.Partitions
		parts = resize(parts, r.arrayLen(flex, 4))
		for j := range parts {
			p := &parts[j]
			p.Default()
			*p = kmsg.FetchRequestTopicPartition{Partition: r.i32(), CurrentLeaderEpoch: -1, LastFetchedEpoch: -1,
				LogStartOffset: -1, HighWatermark: p.HighWatermark}
			if version >= 9 {
				p.CurrentLeaderEpoch = r.i32()
			}
			p.FetchOffset = r.i64()
			if version >= 12 {
				p.LastFetchedEpoch = r.i32()
			}
			if version >= 5 {
				p.LogStartOffset = r.i64()
			}
			p.PartitionMaxBytes = r.i32()
			if flex {
				n := r.uvarint()
				for k := uint64(0); k < n && !r.bad; k++ {
					tag, size := r.uvarint(), r.uvarint()
					if size > uint64(len(r.b)) {
						r.bad = true
						break
					}
					tb := wireReader{b: r.take(int(size))}
					switch tag {
					case 0:
						copy(p.ReplicaDirectoryID[:], tb.take(16))
					case 1:
						p.HighWatermark = tb.i64()
					}
					if tb.bad {
						r.bad = true
					}
				}
			}
		}
		*t = kmsg.FetchRequestTopic{Topic: name, TopicID: id, Partitions: parts}
		if flex {
			r.tags(nil)
		}
	}
	req.Topics = topics
	if version >= 7 {
		forgotten = resize(forgotten, r.arrayLen(flex, 2))
		for i := range forgotten {
			f := &forgotten[i]
			var name string
			var id [16]byte
			if version >= 13 {
				copy(id[:], r.take(16))
			} else {
				name, _ = r.str(flex)
			}
			ps := resize(f.Partitions, r.arrayLen(flex, 4))
			for j := range ps {
				ps[j] = r.i32()
			}
			*f = kmsg.FetchRequestForgottenTopic{Topic: name, TopicID: id, Partitions: ps}
			if flex {
				r.tags(nil)
			}
		}
		req.ForgottenTopics = forgotten
	} else {
		req.ForgottenTopics = forgotten[:0]
	}
	if version >= 11 {
		req.Rack, _ = r.str(flex)
	}
	if flex {
		n := r.uvarint()
		for k := uint64(0); k < n && !r.bad; k++ {
			tag, size := r.uvarint(), r.uvarint()
			if size > uint64(len(r.b)) {
				r.bad = true
				break
			}
			tb := wireReader{b: r.take(int(size))}
			switch tag {
			case 0:
				if s, ok := tb.str(true); ok {
					req.ClusterID = stringPtr(s)
				}
			case 1:
				req.ReplicaState.ID = tb.i32()
				req.ReplicaState.Epoch = tb.i64()
				tb.tags(nil)
			}
			if tb.bad {
				r.bad = true
			}
		}
	}
	if r.bad {
		return errShortBody
	}
	return nil
}
