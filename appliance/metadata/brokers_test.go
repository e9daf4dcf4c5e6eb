package metadata

import (
	"reflect"
	"testing"

	"github.com/ringbroker/ringbroker/cluster/records"
)

// replayBinary converts and applies recs as one batch ending at last.
func replayBinary(t *testing.T, im *Image, last int64, recs ...records.Record) (*Image, error) {
	t.Helper()
	pl := NewConverter(im)
	var out []Record
	for _, r := range recs {
		var err error
		if out, err = pl.Convert(out, r); err != nil {
			return nil, err
		}
	}
	return im.Apply(last, out)
}

func registerRec(id int32, epoch int64, rack *string, host string) *records.RegisterBrokerRecord {
	return &records.RegisterBrokerRecord{RecordVersion: 3, BrokerID: id, BrokerEpoch: epoch, IncarnationID: records.UUID{byte(id), 9},
		EndPoints: []records.BrokerEndpoint{{Name: "PLAINTEXT", Host: host, Port: 9092, SecurityProtocol: 0}},
		Features:  []records.BrokerFeature{{Name: "metadata.version", MinSupportedVersion: 1, MaxSupportedVersion: 25}},
		Rack:      rack, Fenced: true}
}

// TestImageBrokerTable: registration, fencing, unfencing, controlled
// shutdown and unregistration records build the broker table; a record
// naming another epoch is refused; earlier images are unchanged.
func TestImageBrokerTable(t *testing.T) {
	im0 := NewImage(testChecks{})
	if im0.LiveBrokers() != nil || im0.Registered != nil {
		t.Fatal("empty image has brokers")
	}
	im1, err := replayBinary(t, im0, 1, registerRec(1, 0, strp("r1"), "h1"), registerRec(2, 1, nil, "h2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(im1.Registered) != 2 || len(im1.LiveBrokers()) != 0 {
		t.Fatalf("registered %v, live %v", im1.Registered, im1.LiveBrokers())
	}
	b1 := im1.Registered[1]
	if b1.Epoch != 0 || *b1.Rack != "r1" || !b1.Fenced || b1.Endpoints[0].Host != "h1" || im1.Registered[2].Rack != nil {
		t.Fatalf("broker 1 %+v", b1)
	}
	im2, err := replayBinary(t, im1, 3, &records.UnfenceBrokerRecord{ID: 1, Epoch: 0},
		&records.BrokerRegistrationChangeRecord{RecordVersion: 1, BrokerID: 2, BrokerEpoch: 1, Fenced: -1})
	if err != nil {
		t.Fatal(err)
	}
	if live := im2.LiveBrokers(); len(live) != 2 || live[0].ID != 1 || live[1].ID != 2 {
		t.Fatalf("live %v", live)
	}
	if !im1.Registered[1].Fenced || im1.LiveBrokers() != nil {
		t.Fatal("applying changed the earlier image")
	}
	im3, err := replayBinary(t, im2, 5, &records.BrokerRegistrationChangeRecord{RecordVersion: 1, BrokerID: 2, BrokerEpoch: 1, InControlledShutdown: 1},
		&records.FenceBrokerRecord{ID: 1, Epoch: 0})
	if err != nil {
		t.Fatal(err)
	}
	if b := im3.Registered[2]; b.Fenced || !b.InControlledShutdown {
		t.Fatalf("broker 2 after shutdown %+v", b)
	}
	if live := im3.LiveBrokers(); len(live) != 1 || live[0].ID != 2 {
		t.Fatalf("live after fencing 1: %v", live)
	}
	if _, err := replayBinary(t, im3, 6, &records.FenceBrokerRecord{ID: 2, Epoch: 7}); err == nil {
		t.Fatal("fencing with a wrong epoch applied")
	}
	if _, err := replayBinary(t, im3, 6, &records.UnregisterBrokerRecord{BrokerID: 3, BrokerEpoch: 0}); err == nil {
		t.Fatal("unregistering an unknown broker applied")
	}
	im4, err := replayBinary(t, im3, 7, &records.UnregisterBrokerRecord{BrokerID: 1, BrokerEpoch: 0},
		&records.UnregisterBrokerRecord{BrokerID: 2, BrokerEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if im4.Registered != nil || len(im3.Registered) != 2 {
		t.Fatalf("after unregistering all: %v (before %v)", im4.Registered, im3.Registered)
	}
}

// TestImagePartitionEpochs: PartitionChangeRecords bump the partition
// epoch on every change and the leader epoch on leader changes; a
// partition led by a fenced broker has no leader for clients.
func TestImagePartitionEpochs(t *testing.T) {
	id := TopicID{3}
	tid := records.UUID(id)
	im, err := replayBinary(t, NewImage(testChecks{}), 3, registerRec(1, 0, nil, "h1"), registerRec(2, 1, nil, "h2"),
		&records.TopicRecord{Name: "t", TopicID: tid},
		&records.PartitionRecord{TopicID: tid, PartitionID: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	if err != nil {
		t.Fatal(err)
	}
	isr := records.NewPartitionChangeRecord(tid, 0)
	isr.ISR = []int32{1}
	lead := records.NewPartitionChangeRecord(tid, 0)
	lead.Leader = 2
	im, err = replayBinary(t, im, 5, isr, lead)
	if err != nil {
		t.Fatal(err)
	}
	p := im.Topics["t"].Partitions[0]
	if p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 2 || !reflect.DeepEqual(p.ISR, []int32{1}) {
		t.Fatalf("partition %+v", p)
	}
	if got := im.LeaderOf(&p); got != -1 {
		t.Fatalf("leader of a partition led by fenced broker 2: %d", got)
	}
	im, err = replayBinary(t, im, 6, &records.UnfenceBrokerRecord{ID: 2, Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := im.LeaderOf(&p); got != 2 {
		t.Fatalf("leader after unfencing: %d", got)
	}
	if got := NewImage(testChecks{}).LeaderOf(&PartitionImage{Leader: 4}); got != 4 {
		t.Fatalf("single node: leader %d", got)
	}
}

// TestSnapshotBrokersRoundTrip: a snapshot holds the broker table and the
// partition epochs; decoding it gives the same image.
func TestSnapshotBrokersRoundTrip(t *testing.T) {
	id := TopicID{5}
	tid := records.UUID(id)
	im, err := replayBinary(t, NewImage(testChecks{}), 4, registerRec(1, 0, strp("east"), "h1"), registerRec(2, 1, nil, "h2"),
		&records.TopicRecord{Name: "t", TopicID: tid},
		&records.PartitionRecord{TopicID: tid, PartitionID: 0, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
		&records.UnfenceBrokerRecord{ID: 2, Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	ch := records.NewPartitionChangeRecord(tid, 0)
	ch.Leader = 1
	if im, err = replayBinary(t, im, 6, ch, &records.BrokerRegistrationChangeRecord{RecordVersion: 1, BrokerID: 2, BrokerEpoch: 1, InControlledShutdown: 1}); err != nil {
		t.Fatal(err)
	}
	raw, err := encodeSnapshot(im)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSnapshot(raw, im.Offset+1, testChecks{})
	if err != nil {
		t.Fatal(err)
	}
	sameImage(t, "snapshot", got, im)
	if !reflect.DeepEqual(got.Registered, im.Registered) {
		t.Fatalf("brokers after the snapshot:\n%+v\nwant\n%+v", got.Registered[2], im.Registered[2])
	}
	if p := got.Topics["t"].Partitions[0]; p.Leader != 1 || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("partition after the snapshot %+v", p)
	}
}

// TestDiffReleadered: a leadership change of an existing partition is in
// the delta's Releadered; a config change alone is not.
func TestDiffReleadered(t *testing.T) {
	tid := records.UUID{9}
	im, err := replayBinary(t, NewImage(testChecks{}), 1, &records.TopicRecord{Name: "t", TopicID: tid},
		&records.PartitionRecord{TopicID: tid, PartitionID: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	if err != nil {
		t.Fatal(err)
	}
	v := "1"
	cfg, err := im.Apply(2, []Record{{Config: &ConfigRecord{ResourceType: 2, Name: "t", Key: "retention.ms", Value: &v}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffImages(im, cfg); len(d.Releadered) != 0 || len(d.Reconfigured) != 1 {
		t.Fatalf("config change: %+v", d)
	}
	ch := records.NewPartitionChangeRecord(tid, 0)
	ch.Leader = -1
	next, err := replayBinary(t, cfg, 3, ch)
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffImages(cfg, next); len(d.Releadered) != 1 || d.Releadered[0].Partitions[0].Leader != -1 || d.Empty() {
		t.Fatalf("leader change: %+v", d)
	}
}
