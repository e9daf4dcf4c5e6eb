package appliance

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

func TestClientBatchViolation(t *testing.T) {
	plain := appendBatch(nil, 1, 0, -1, -1, -1, []kmsg.Record{{Value: []byte("v")}})
	control := appendBatch(nil, 1, 0x20|0x10, 5, 0, -1, []kmsg.Record{{Value: []byte("v")}})
	txnal := appendBatch(nil, 1, 0x10, 5, 0, 0, []kmsg.Record{{Value: []byte("v")}})
	for _, c := range []struct {
		name    string
		records []byte
		txn     bool
		bad     bool
	}{
		{"plain", plain, false, false},
		{"plain in a transaction request", plain, true, false}, // the coordinator check refuses it later
		{"control", control, false, true},
		{"control with a transactional id", control, true, true},
		{"transactional without an id", txnal, false, true},
		{"transactional with an id", txnal, true, false},
		{"second batch transactional", append(append([]byte(nil), plain...), txnal...), false, true},
		{"truncated header", plain[:10], false, false},
	} {
		if got := clientBatchViolation(c.records, c.txn) != ""; got != c.bad {
			t.Errorf("%s: violation %v, want %v", c.name, got, c.bad)
		}
	}
	// A lying batch length must not make the walk read out of bounds.
	lying := append([]byte(nil), plain...)
	binary.BigEndian.PutUint32(lying[8:], 1<<30)
	_ = clientBatchViolation(lying, false)
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
}
