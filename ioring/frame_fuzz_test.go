package ioring

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// cutRecorder collects the frames a RingConn cuts, through both paths.
type cutRecorder struct {
	frames [][]byte
	big    []byte
	closed bool
}

func (r *cutRecorder) OnFrame(f []byte) FrameAction {
	r.frames = append(r.frames, bytes.Clone(f))
	return FrameContinue
}
func (r *cutRecorder) OnClose(error) { r.closed = true }
func (r *cutRecorder) FrameBuffer(n int) []byte {
	r.big = make([]byte, n)
	return r.big
}
func (r *cutRecorder) OnOwnedFrame(f []byte) FrameAction {
	r.frames = append(r.frames, f)
	return FrameContinue
}

// errRecorder is a cutRecorder that takes bad sizes (FrameErrorSink).
type errRecorder struct {
	cutRecorder
	errs int
}

func (r *errRecorder) OnFrameError(error) { r.errs++ }

// FuzzFrameCut feeds a byte stream in arbitrary pieces to a connection's
// frame cutter (feed/cut, with large frames assembled through FrameSink)
// and checks it yields exactly the frames a plain sequential parse does,
// and closes on an out-of-range size prefix.
func FuzzFrameCut(f *testing.F) {
	frame := func(n int, b byte) []byte {
		out := binary.BigEndian.AppendUint32(nil, uint32(n))
		return append(out, bytes.Repeat([]byte{b}, n)...)
	}
	f.Add(append(frame(5, 1), frame(3, 2)...), []byte{1, 2, 3})
	f.Add(append(frame(40000, 3), frame(10, 4)...), []byte{200, 7, 255})
	f.Add(append(frame(20000, 5), 0xff, 0xff, 0xff, 0xff), []byte{9})
	f.Add([]byte{0, 0, 0, 0}, []byte{})
	f.Fuzz(runCut)
}

func runCut(t *testing.T, stream, cuts []byte) {
	{
		const maxFrame = 64 << 10
		var want [][]byte
		bad := false
		for rest := stream; len(rest) >= 4; {
			n := int(binary.BigEndian.Uint32(rest))
			if n < 1 || n > maxFrame {
				bad = true
				break
			}
			if len(rest)-4 < n {
				break
			}
			want = append(want, rest[4:4+n])
			rest = rest[4+n:]
		}
		for _, sink := range []bool{false, true} {
			var rec *cutRecorder
			var cb RingConnCallbacks
			var er *errRecorder
			if sink {
				er = &errRecorder{}
				rec, cb = &er.cutRecorder, er
			} else {
				rec = &cutRecorder{}
				cb = rec
			}
			c := &RingConn{us: &uringShard{e: &uring{o: UringOptions{MaxFrame: maxFrame, MinFrame: 1}}},
				fd: -1, pipe: [2]int{-1, -1}, cb: cb, sink: rec}
			for i, rest := 0, stream; len(rest) > 0 && !c.closing; i++ {
				n := len(rest)
				if len(cuts) > 0 {
					n = min(n, 1+int(cuts[i%len(cuts)])*97)
				}
				c.feed(rest[:n])
				rest = rest[n:]
			}
			if sink {
				// A FrameErrorSink gets the bad size once, and the
				// connection stays open for its answers.
				if c.closing || (er.errs == 1) != bad || er.errs > 1 {
					t.Fatalf("sink: closing %v, %d errors reported; a bad size prefix: %v", c.closing, er.errs, bad)
				}
			} else if bad != c.closing {
				t.Fatalf("closing %v, want %v (a size prefix out of range)", c.closing, bad)
			}
			if len(rec.frames) != len(want) {
				t.Fatalf("sink %v: %d frames cut, want %d", sink, len(rec.frames), len(want))
			}
			for i := range want {
				if !bytes.Equal(rec.frames[i], want[i]) {
					t.Fatalf("frame %d: %d bytes differ from the %d expected", i, len(rec.frames[i]), len(want[i]))
				}
			}
		}
	}
}
