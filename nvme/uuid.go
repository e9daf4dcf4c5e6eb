package nvme

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
)

// UUID is Kafka's Uuid: 16 bytes, most significant first, written as 22
// characters of unpadded base64url (Uuid.toString). Cluster ids, directory
// ids and topic ids are UUIDs.
type UUID [16]byte

// String is the 22-character base64url form of u.
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is Kafka's ZERO_UUID.
func (u UUID) IsZero() bool { return u == UUID{} }

// reservedLow reports whether u has zero as its high 64 bits and a low 64
// bits below n: Kafka reserves 0 (ZERO_UUID) and 1 (ONE_UUID, the metadata
// topic's id) for every Uuid, and the first 100 for directory ids
// (DirectoryId: UNASSIGNED 0, LOST 1, MIGRATING 2, the rest kept free).
func (u UUID) reservedLow(n uint64) bool {
	for _, b := range u[:8] {
		if b != 0 {
			return false
		}
	}
	var lo uint64
	for _, b := range u[8:] {
		lo = lo<<8 | uint64(b)
	}
	return lo < n
}

// ReservedDirectoryID reports whether u is one of the 100 directory ids
// Kafka reserves (DirectoryId.reserved), which no meta.properties may hold.
func (u UUID) ReservedDirectoryID() bool { return u.reservedLow(100) }

// ErrInvalidUUID is wrapped by ParseUUID's errors.
var ErrInvalidUUID = errors.New("invalid UUID")

// ParseUUID decodes the 22-character base64url form of a Kafka UUID, as
// Uuid.fromString does: at most 24 characters (padding is accepted), and
// exactly 16 bytes once decoded. The error wraps ErrInvalidUUID and names
// the string.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) > 24 {
		return u, fmt.Errorf("%w: input string with prefix %q is too long to be decoded as a base64 UUID", ErrInvalidUUID, s[:24])
	}
	enc := base64.RawURLEncoding
	if len(s) > 0 && s[len(s)-1] == '=' {
		enc = base64.URLEncoding
	}
	raw, err := enc.DecodeString(s)
	if err != nil {
		return u, fmt.Errorf("%w: input string %q is not base64url: %v", ErrInvalidUUID, s, err)
	}
	if len(raw) != len(u) {
		return u, fmt.Errorf("%w: input string %q decoded as %d bytes, which is not the 16 bytes of a base64-encoded UUID", ErrInvalidUUID, s, len(raw))
	}
	copy(u[:], raw)
	return u, nil
}

// RandomUUID returns a new random UUID as Kafka's Uuid.randomUuid does: a
// version 4, variant 2 UUID (java.util.UUID.randomUUID's bits) drawn again
// while it is ZERO_UUID or ONE_UUID or its string starts with '-' (which a
// command line would take for a flag). It fails only when crypto/rand does.
func RandomUUID() (UUID, error) { return randomUUID(rand.Reader, 2) }

// RandomDirectoryID returns a new random directory id as Kafka's
// DirectoryId.random does: RandomUUID, drawn again while it is one of the
// 100 reserved directory ids.
func RandomDirectoryID() (UUID, error) { return randomUUID(rand.Reader, 100) }

// randomUUID draws version 4 UUIDs from r until one is not below reserved
// (reservedLow) and does not start with '-'.
func randomUUID(r io.Reader, reserved uint64) (UUID, error) {
	for {
		var u UUID
		if _, err := io.ReadFull(r, u[:]); err != nil {
			return UUID{}, fmt.Errorf("cannot draw a random UUID: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // variant 2 (IETF)
		// The first character is the top 6 bits of byte 0; '-' is 62.
		if u.reservedLow(reserved) || u[0]>>2 == 62 {
			continue
		}
		return u, nil
	}
}
