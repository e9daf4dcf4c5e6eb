package appliance

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOnLoopAPI(t *testing.T) {
	hdr := func(key, version int16, flexible bool) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 7)
		b = binary.BigEndian.AppendUint16(b, 2)
		b = append(b, "id"...)
		if flexible {
			b = append(b, 0)
		}
		return b
	}
	produce := func(version int16, txn *string) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Version = version
		req.TransactionID = txn
		return req.AppendTo(hdr(0, version, version >= 9))
	}
	tid := "tx"
	for _, tc := range []struct {
		name string
		f    []byte
		want bool
	}{
		{"fetch", hdr(1, 12, true), true},
		{"apiversions", hdr(18, 3, true), true},
		{"metadata", hdr(3, 12, true), true},
		{"joingroup", hdr(11, 5, false), false},
		{"produce v7", produce(7, nil), true},
		{"produce v9", produce(9, nil), true},
		{"txn produce v7", produce(7, &tid), false},
		{"txn produce v11", produce(11, &tid), false},
		{"short", []byte{0, 0, 0}, false},
		{"bad client id", append(hdr(0, 9, true)[:8], 0x7f, 0x7f), false},
	} {
		if got := onLoopAPI(tc.f); got != tc.want {
			t.Errorf("%s: onLoopAPI = %v, want %v", tc.name, got, tc.want)
		}
	}
	f := produce(9, nil)
	if n := testing.AllocsPerRun(100, func() { onLoopAPI(f) }); n != 0 {
		t.Fatalf("onLoopAPI allocates %.0f", n)
	}
}

// TestAppendResponseAllocs: encoding a produce answer into the
// connection's reused buffer (what pump does) allocates nothing.
func TestAppendResponseAllocs(t *testing.T) {
	resp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, rt)
	s := &slot{key: 0, version: 9, corrID: 1, resp: resp}
	var buf []byte
	run := func() {
		out, _, ok, err := appendResponse(buf[:0], s)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		buf = out
	}
	run()
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Fatalf("appendResponse allocates %.1f times, want 0", n)
	}
}
