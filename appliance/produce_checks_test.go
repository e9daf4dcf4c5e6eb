package appliance

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
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
		got := clientBatchViolation(c.records, c.txn)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: violation %q, want one naming %q", c.name, got, c.want)
		}
	}
	// A lying batch length must not make the walk read out of bounds.
	for _, at := range []int{8, len(plain) + 8} {
		lying := two(plain, plain)
		binary.BigEndian.PutUint32(lying[at:], 1<<30)
		_ = clientBatchViolation(lying, false)
	}
}

func TestCheckPartitionBudget(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	if old.Cur < 4096 {
		t.Skipf("RLIMIT_NOFILE %d too low to test", old.Cur)
	}
	lowered := old
	lowered.Cur = 4096
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lowered); err != nil {
		t.Skip(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	b := &Broker{}
	im := emptyImage()
	if err := b.checkPartitionBudget(im, 900); err != nil { // 900*3+1024 = 3724 <= 4096
		t.Fatalf("900 partitions refused: %v", err)
	}
	err := b.checkPartitionBudget(im, 1100) // 4324 > 4096
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("1100 partitions: %v, want POLICY_VIOLATION", err)
	}
	// Descriptors held now (closed segments' .log files, connections)
	// count: with 400 more open, the 900 no longer fit.
	var held []int
	defer func() {
		for _, fd := range held {
			unix.Close(fd)
		}
	}()
	for range 400 {
		fd, err := unix.Dup(0)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, fd)
	}
	if err := b.checkPartitionBudget(im, 900); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("900 partitions with 400 more descriptors open: %v, want POLICY_VIOLATION", err)
	}
}
