package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Sentinel errors of Decode. Every decoding error wraps exactly one of them.
var (
	// ErrTruncated: the input ends inside a field.
	ErrTruncated = errors.New("metadata record truncated")
	// ErrMalformed: a field holds a value no encoder writes (a negative
	// length, a null where none is allowed, a varint over its width, a
	// tagged field that does not end where its size says).
	ErrMalformed = errors.New("malformed metadata record")
	// ErrTrailingBytes: bytes follow the record's last field.
	ErrTrailingBytes = errors.New("trailing bytes after metadata record")
	// ErrUnknownFrameVersion: the frame version is not FrameVersion.
	ErrUnknownFrameVersion = errors.New("unknown metadata record frame version")
	// ErrUnknownAPIKey: no record kind has the frame's api key.
	ErrUnknownAPIKey = errors.New("unknown metadata record api key")
	// ErrUnknownVersion: the record kind has no such version.
	ErrUnknownVersion = errors.New("unknown metadata record version")
)

// reader decodes Kafka's primitive types with a sticky error: the first
// failure is kept, every later read returns a zero value, and the caller
// checks err once at the end.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(ErrTruncated)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n == 0:
		r.fail(ErrTruncated)
		return 0
	case n < 0:
		r.fail(fmt.Errorf("%w: unsigned varint over 64 bits", ErrMalformed))
		return 0
	}
	r.b = r.b[n:]
	return v
}

// uvarint32 reads an unsigned varint that must fit 31 bits (lengths, tags,
// api keys, versions).
func (r *reader) uvarint32() int {
	v := r.uvarint()
	if v > math.MaxInt32 {
		r.fail(fmt.Errorf("%w: unsigned varint %d over 31 bits", ErrMalformed, v))
		return 0
	}
	return int(v)
}

func (r *reader) int8() int8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *reader) bool() bool {
	switch v := r.int8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(fmt.Errorf("%w: boolean %d", ErrMalformed, v))
		return false
	}
}

func (r *reader) int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) uint16() uint16 { return uint16(r.int16()) }

func (r *reader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *reader) float64() float64 { return math.Float64frombits(uint64(r.int64())) }

func (r *reader) uuid() UUID {
	var u UUID
	copy(u[:], r.take(16))
	return u
}

// compactLen reads a compact length (N+1, 0 for null); -1 means null.
func (r *reader) compactLen() int {
	n := r.uvarint32()
	if r.err != nil {
		return 0
	}
	n--
	if n > len(r.b) {
		r.fail(ErrTruncated)
		return 0
	}
	return n
}

func (r *reader) nullableString() *string {
	n := r.compactLen()
	if n < 0 || r.err != nil {
		return nil
	}
	s := string(r.take(n))
	return &s
}

func (r *reader) string() string {
	s := r.nullableString()
	if s == nil {
		if r.err == nil {
			r.fail(fmt.Errorf("%w: null string", ErrMalformed))
		}
		return ""
	}
	return *s
}

func (r *reader) bytes() []byte {
	n := r.compactLen()
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.fail(fmt.Errorf("%w: null bytes", ErrMalformed))
		return nil
	}
	return append([]byte{}, r.take(n)...)
}

// arrayLen reads a compact array length; each element takes at least
// minSize bytes, which bounds what a hostile length can allocate.
func (r *reader) arrayLen(minSize int) int {
	n := r.compactLen()
	if r.err != nil || n < 0 {
		return n
	}
	if n*minSize > len(r.b) {
		r.fail(ErrTruncated)
		return 0
	}
	return n
}

func (r *reader) nullableInt32s() []int32 {
	n := r.arrayLen(4)
	if r.err != nil || n < 0 {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out
}

func (r *reader) int32s() []int32 {
	n := r.arrayLen(4)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.fail(fmt.Errorf("%w: null array", ErrMalformed))
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out
}

func (r *reader) uuids() []UUID {
	n := r.arrayLen(16)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.fail(fmt.Errorf("%w: null array", ErrMalformed))
		return nil
	}
	out := make([]UUID, n)
	for i := range out {
		out[i] = r.uuid()
	}
	return out
}

// tags reads a tagged-field section: fn is called with each tag and a
// reader over exactly its bytes; it returns false for a tag it does not
// know (skipped, as Kafka does), and must consume a known field's bytes
// exactly. Tags must ascend, as Kafka writes them. A nil fn knows no tag.
func (r *reader) tags(fn func(tag int, f *reader) bool) {
	n := r.uvarint32()
	last := -1
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.uvarint32()
		size := r.uvarint32()
		data := r.take(size)
		if r.err != nil {
			return
		}
		if tag <= last {
			r.fail(fmt.Errorf("%w: tag %d after tag %d", ErrMalformed, tag, last))
			return
		}
		last = tag
		f := &reader{b: data}
		known := fn != nil && fn(tag, f)
		if !known {
			continue
		}
		if f.err == nil && len(f.b) != 0 {
			f.err = fmt.Errorf("%w: tagged field %d has %d bytes left", ErrMalformed, tag, len(f.b))
		}
		if f.err != nil {
			if errors.Is(f.err, ErrTruncated) {
				f.err = fmt.Errorf("%w: tagged field %d shorter than its value", ErrMalformed, tag)
			}
			r.fail(f.err)
		}
	}
}

// Append helpers: Kafka's flexible (compact) encodings.

func appendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

func appendInt8(dst []byte, v int8) []byte { return append(dst, byte(v)) }

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendInt16(dst []byte, v int16) []byte { return binary.BigEndian.AppendUint16(dst, uint16(v)) }

func appendInt32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

func appendInt64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

func appendFloat64(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

func appendUUID(dst []byte, u UUID) []byte { return append(dst, u[:]...) }

func appendString(dst []byte, s string) []byte {
	dst = appendUvarint(dst, uint64(len(s))+1)
	return append(dst, s...)
}

func appendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, 0)
	}
	return appendString(dst, *s)
}

func appendBytes(dst []byte, b []byte) []byte {
	dst = appendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...)
}

func appendInt32s(dst []byte, vs []int32) []byte {
	dst = appendUvarint(dst, uint64(len(vs))+1)
	for _, v := range vs {
		dst = appendInt32(dst, v)
	}
	return dst
}

// appendNullableInt32s writes nil as null and an empty slice as empty.
func appendNullableInt32s(dst []byte, vs []int32) []byte {
	if vs == nil {
		return append(dst, 0)
	}
	return appendInt32s(dst, vs)
}

func appendUUIDs(dst []byte, vs []UUID) []byte {
	dst = appendUvarint(dst, uint64(len(vs))+1)
	for _, v := range vs {
		dst = appendUUID(dst, v)
	}
	return dst
}

// tagWriter collects a tagged-field section: fields are added in
// ascending tag order, then flushed after their count.
type tagWriter struct {
	n    int
	body []byte
}

func (t *tagWriter) add(tag int, value []byte) {
	t.n++
	t.body = appendUvarint(t.body, uint64(tag))
	t.body = appendUvarint(t.body, uint64(len(value)))
	t.body = append(t.body, value...)
}

func (t *tagWriter) appendTo(dst []byte) []byte {
	dst = appendUvarint(dst, uint64(t.n))
	return append(dst, t.body...)
}
