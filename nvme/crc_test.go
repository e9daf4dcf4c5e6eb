package nvme

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRC32C(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 3*crc32cPiece+4*1344+17)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	check := func(p []byte) {
		t.Helper()
		if got, want := CRC32C(p), crc32.Checksum(p, tab); got != want {
			t.Fatalf("CRC32C of %d bytes = %#x, want %#x", len(p), got, want)
		}
	}
	// Every length around the piece size and its multiples, at every
	// alignment mod 8, and the whole buffer.
	for _, n := range []int{0, 1, 7, 8, 503, 504, 505, crc32cPiece - 1, crc32cPiece, crc32cPiece + 1,
		crc32cPiece + 7, crc32cPiece + 8, 2*crc32cPiece - 1, 2 * crc32cPiece, 2*crc32cPiece + 1,
		4031, 4032, 4033, len(buf) - 8} {
		for off := range 8 {
			check(buf[off : off+n])
		}
	}
	check(buf)
	for range 200 {
		off := rng.IntN(len(buf))
		check(buf[off : off+rng.IntN(len(buf)-off+1)])
	}
	// The known answer of RFC 3720 (iSCSI), B.4: 32 bytes of zeros.
	if got := CRC32C(make([]byte, 32)); got != 0x8a9136aa {
		t.Fatalf("CRC32C of 32 zero bytes = %#x, want 0x8a9136aa", got)
	}
}

// BenchmarkCRC32C compares CRC32C with one crc32.Checksum call over the same
// bytes, starting 21 bytes into a buffer as a batch's CRC range does:
// "cold" walks a 256 MiB buffer (past any CPU cache), "hot" repeats one
// slice.
func BenchmarkCRC32C(b *testing.B) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	big := make([]byte, 256<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	impls := []struct {
		name string
		fn   func([]byte) uint32
	}{
		{"pieces", CRC32C},
		{"stdlib", func(p []byte) uint32 { return crc32.Checksum(p, tab) }},
	}
	for _, size := range []int{1 << 10, 16000, 256 << 10} {
		for _, im := range impls {
			b.Run(fmt.Sprintf("cold/%dB/%s", size, im.name), func(b *testing.B) {
				b.SetBytes(int64(size))
				off := 21 // a batch's attributes field: unaligned
				for b.Loop() {
					if off+size > len(big) {
						off = 21
					}
					im.fn(big[off : off+size])
					off += size + 61
				}
			})
			b.Run(fmt.Sprintf("hot/%dB/%s", size, im.name), func(b *testing.B) {
				p := big[21 : 21+size]
				b.SetBytes(int64(size))
				for b.Loop() {
					im.fn(p)
				}
			})
		}
	}
}
