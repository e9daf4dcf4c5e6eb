package txn

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeTarget records what Produce did with one item.
type fakeTarget struct {
	done   chan struct{}
	err    error
	posted bool
}

func newFakeTarget() *fakeTarget { return &fakeTarget{done: make(chan struct{}, 1)} }

func (f *fakeTarget) Fail(err error) { f.err = err; f.done <- struct{}{} }
func (f *fakeTarget) Post()          { f.posted = true; f.done <- struct{}{} }

// batch is a one-record batch of pid/epoch with the given attributes.
func batch(pid int64, epoch int16, attrs int16) []byte {
	b := kmsg.RecordBatch{FirstOffset: 0, Magic: 2, Attributes: attrs, ProducerID: pid, ProducerEpoch: epoch,
		FirstSequence: 0, NumRecords: 1, Records: []byte{0}}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12)) // batchLength
	return raw
}

// TestProduce: batches that are not transactional (or are control
// batches, or not batches) fail at once; the others are checked on the
// coordinator shard: in the open transaction they are posted, outside it
// INVALID_TXN_STATE; without a coordinator COORDINATOR_NOT_AVAILABLE.
func TestProduce(t *testing.T) {
	b := &fakeBroker{closing: make(chan struct{}), markers: make(chan MarkerJob, 4)}
	defer close(b.closing)
	b.logs = []Log{newFakeLog(t, nil)}
	var c *Coordinator
	nilTarget := newFakeTarget()
	c.Produce("tx", []ProduceItem{{TP: TP{Topic: "t"}, Records: batch(1, 0, 0x10), Target: nilTarget}})
	if wait(t, nilTarget.done, "the nil coordinator's answer"); nilTarget.err != kerr.CoordinatorNotAvailable {
		t.Fatalf("without a coordinator: %v", nilTarget.err)
	}
	c, err := Start(b, withPartitions(1), discard())
	if err != nil {
		t.Fatal(err)
	}
	init := make(chan InitResult, 1)
	added := make(chan *kerr.Error, 1)
	Ask(c, "tx", func(m *Manager, _ func(struct{})) {
		m.InitProducer(InitArgs{ID: "tx", TimeoutMs: 60000, PID: -1, Epoch: -1, Spare: 9}, func(r InitResult) {
			init <- r
			m.AddPartitions("tx", r.PID, r.Epoch, []TP{{Topic: "t", Partition: 0}}, func(err *kerr.Error) { added <- err })
		})
	})
	if r := wait(t, init, "the init"); r.Err != nil || r.PID != 9 {
		t.Fatalf("init: %+v", r)
	}
	if err := wait(t, added, "the add"); err != nil {
		t.Fatalf("add: %v", err)
	}
	targets := make([]*fakeTarget, 5)
	for i := range targets {
		targets[i] = newFakeTarget()
	}
	c.Produce("tx", []ProduceItem{
		{TP: TP{Topic: "t", Partition: 0}, Records: []byte{1, 2}, Target: targets[0]},
		{TP: TP{Topic: "t", Partition: 0}, Records: batch(9, 0, 0), Target: targets[1]},
		{TP: TP{Topic: "t", Partition: 0}, Records: batch(9, 0, 0x30), Target: targets[2]},
		{TP: TP{Topic: "t", Partition: 1}, Records: batch(9, 0, 0x10), Target: targets[3]},
		{TP: TP{Topic: "t", Partition: 0}, Records: batch(9, 0, 0x10), Target: targets[4]},
	})
	for i, f := range targets {
		wait(t, f.done, "an item's answer")
		switch i {
		case 0:
			if f.err == nil || f.posted {
				t.Errorf("item 0 (not a batch): %v posted=%v", f.err, f.posted)
			}
		case 1, 2:
			if f.err != kerr.InvalidRecord {
				t.Errorf("item %d: %v, want INVALID_RECORD", i, f.err)
			}
		case 3:
			if f.err != kerr.InvalidTxnState {
				t.Errorf("item 3 (partition not in the transaction): %v", f.err)
			}
		case 4:
			if !f.posted || f.err != nil {
				t.Errorf("item 4: not posted (%v)", f.err)
			}
		}
	}
}
