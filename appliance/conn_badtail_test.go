package appliance

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// A frame followed by bytes that cannot start a frame (a size outside
// [8, socket.request.max.bytes]) is answered before the connection closes,
// as Kafka, which reads no further until it has answered, does: a produce
// in the same write as the garbage is acknowledged, not written and left
// unanswered (a client would retry it and duplicate its records).
func TestFrameBeforeBadSizeIsAnswered(t *testing.T) {
	tails := map[string][]byte{
		"negative size": {0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"huge size":     {0x7f, 0xff, 0xff, 0xff},
		"short frame":   {0, 0, 0, 3, 1, 2, 3},
	}
	onEngines(t, nil, func(t *testing.T, f *allocFixture) {
		for name, tail := range tails {
			nc, err := net.Dial("tcp", f.b.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			out := append(append(append([]byte{}, produceFrame(0, 1, 77)...), f.fetch...), tail...)
			if _, err := nc.Write(out); err != nil {
				t.Fatal(err)
			}
			corr, _ := readAnswerErr(nc)
			if corr != 77 {
				t.Errorf("%s: first answer correlation id %d, want the produce's 77", name, corr)
			}
			corr, _ = readAnswerErr(nc)
			if corr != 4 {
				t.Errorf("%s: second answer correlation id %d, want the fetch's 4", name, corr)
			}
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
				t.Errorf("%s: after the answers read %d, %v; want the connection closed", name, n, err)
			}
			nc.Close()
		}
	})
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// readAnswerErr is readAnswer that reports a failed read as id -1.
func readAnswerErr(nc net.Conn) (int32, int) {
	corr, n, err := readAnswerHead(nc)
	if err != nil {
		return -1, 0
	}
	return corr, n
}
