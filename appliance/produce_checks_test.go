package appliance

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClientBatchViolation(t *testing.T) {
	plain := appendBatch(nil, 1, 0, -1, -1, -1, []kmsg.Record{{Value: []byte("v")}})
	control := appendBatch(nil, 1, 0x20|0x10, 5, 0, -1, []kmsg.Record{{Value: []byte("v")}})
	txnal := appendBatch(nil, 1, 0x10, 5, 0, 0, []kmsg.Record{{Value: []byte("v")}})
	two := func(a, b []byte) []byte { return append(append([]byte(nil), a...), b...) }
	const (
		ok      = ""
		ctl     = "control batches"
		noID    = "transactional id"
		onlyOne = "exactly one record batch"
	)
	for _, c := range []struct {
		name    string
		records []byte
		txn     bool
		want    string // part of the reason, "" for none
	}{
		{"plain", plain, false, ok},
		{"plain in a transaction request", plain, true, ok}, // the coordinator check refuses it later
		{"control", control, false, ctl},
		{"control with a transactional id", control, true, ctl},
		{"transactional without an id", txnal, false, noID},
		{"transactional with an id", txnal, true, ok},
		{"two plain batches", two(plain, plain), false, onlyOne},
		{"second batch transactional", two(plain, txnal), false, onlyOne},
		{"two transactional batches with an id", two(txnal, txnal), true, onlyOne},
		{"trailing bytes short of a batch", two(plain, plain[:40]), false, ok},              // the log refuses them
		{"second batch length past the bytes", two(plain, plain[:len(plain)-1]), false, ok}, // likewise
		{"truncated header", plain[:10], false, ok},
	} {
		got := wire.ClientBatchViolation(c.records, c.txn)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: violation %q, want one naming %q", c.name, got, c.want)
		}
	}
	// A lying batch length must not make the walk read out of bounds.
	for _, at := range []int{8, len(plain) + 8} {
		lying := two(plain, plain)
		binary.BigEndian.PutUint32(lying[at:], 1<<30)
		_ = wire.ClientBatchViolation(lying, false)
	}
}
