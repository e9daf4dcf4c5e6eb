package membership

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const testCluster = "q1Sh-9_ISia_zwGINzRvyQ"

// sim is an active controller's loop in miniature: it decides with a
// Registry, applies every decided record (through the codec) to the
// registry and a MemTable at the next offset, and keeps the log.
type sim struct {
	t      testing.TB
	now    time.Time
	reg    *Registry
	table  *MemTable
	placer *Placer
	log    []records.Record
	topics int
}

func newSim(t testing.TB) *sim {
	s := &sim{t: t, now: time.UnixMilli(1_700_000_000_000), table: NewMemTable(), placer: NewSeededPlacer(3)}
	s.reg = s.newRegistry()
	s.commit([]records.Record{&records.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 21}})
	return s
}

func (s *sim) newRegistry() *Registry {
	cfg := DefaultConfig(testCluster)
	cfg.Now = func() time.Time { return s.now }
	r, err := NewRegistry(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

func (s *sim) commit(recs []records.Record) {
	for _, rec := range recs {
		dec, err := records.Decode(rec.AppendTo(nil))
		if err != nil {
			s.t.Fatalf("%s does not decode: %v", rec.APIKey(), err)
		}
		off := int64(len(s.log))
		s.log = append(s.log, dec)
		if err := s.reg.Apply(off, dec); err != nil {
			s.t.Fatalf("apply %s at %d: %v", rec.APIKey(), off, err)
		}
		if err := s.table.Apply(dec); err != nil {
			s.t.Fatalf("apply %s at %d: %v", rec.APIKey(), off, err)
		}
	}
}

func registration(id int32, inc byte, rack string) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = id, testCluster, [16]byte{inc}
	if rack != "" {
		req.Rack = &rack
	}
	f := kmsg.NewBrokerRegistrationRequestFeature()
	f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = "metadata.version", 1, 21
	req.Features = append(req.Features, f)
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "h", 9092
	req.Listeners = append(req.Listeners, l)
	return req
}

func (s *sim) register(id int32, inc byte, rack string) error {
	recs, err := s.reg.Register(registration(id, inc, rack), int64(len(s.log)), s.table)
	if err == nil {
		s.commit(recs)
	}
	return err
}

func (s *sim) heartbeat(id int32, offset int64, fence, shutdown bool) (HeartbeatReply, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID = id
	if b, ok := s.reg.Broker(id); ok {
		req.BrokerEpoch = b.Epoch
	}
	req.CurrentMetadataOffset, req.WantFence, req.WantShutdown = offset, fence, shutdown
	reply, recs, err := s.reg.Heartbeat(req, s.table)
	if err == nil {
		s.commit(recs)
	}
	return reply, err
}

func (s *sim) end() int64 { return int64(len(s.log)) - 1 }

func (s *sim) advance(d time.Duration) {
	s.now = s.now.Add(d)
	for range 1000 {
		recs := s.reg.FenceStale(s.table)
		if recs == nil {
			return
		}
		s.commit(recs)
	}
	s.t.Fatal("FenceStale did not settle")
}

func (s *sim) createTopic(parts, rf int) error {
	assign, err := s.placer.Place(parts, rf, s.reg.Usable())
	if err != nil {
		return err
	}
	s.topics++
	id := records.UUID{0: byte(s.topics), 1: byte(s.topics >> 8)}
	recs := []records.Record{&records.TopicRecord{Name: fmt.Sprintf("t%d", s.topics), TopicID: id}}
	for p, r := range assign {
		recs = append(recs, &records.PartitionRecord{PartitionID: int32(p), TopicID: id, Replicas: r, ISR: slices.Clone(r), Leader: r[0]})
	}
	s.commit(recs)
	return nil
}

// check verifies the invariants membership keeps: a partition's leader is
// none or a live (unfenced, not shutting down) registered broker in its
// ISR; an ISR is never empty.
func (s *sim) check() {
	for _, p := range s.table.Partitions() {
		if len(p.ISR) == 0 {
			s.t.Fatalf("partition %x-%d has an empty ISR", p.TopicID[:2], p.Partition)
		}
		if p.Leader == NoLeader {
			continue
		}
		b, ok := s.reg.Broker(p.Leader)
		if !ok || b.Fenced || b.InControlledShutdown || !slices.Contains(p.ISR, p.Leader) {
			s.t.Fatalf("partition %x-%d led by broker %d (registered %t, %+v), ISR %v", p.TopicID[:2], p.Partition, p.Leader, ok, b, p.ISR)
		}
	}
}

// replayEqual replays the log into a fresh registry and table and
// compares them with the live ones.
func (s *sim) replayEqual() {
	reg, table := s.newRegistry(), NewMemTable()
	for off, rec := range s.log {
		if err := reg.Apply(int64(off), rec); err != nil {
			s.t.Fatalf("replay at %d: %v", off, err)
		}
		if err := table.Apply(rec); err != nil {
			s.t.Fatalf("replay at %d: %v", off, err)
		}
	}
	if got, want := reg.Brokers(), s.reg.Brokers(); !reflect.DeepEqual(got, want) {
		s.t.Fatalf("replayed registry differs after %d records:\n got %+v\nwant %+v", len(s.log), got, want)
	}
	if got, want := reg.FinalizedFeatures(), s.reg.FinalizedFeatures(); !reflect.DeepEqual(got, want) {
		s.t.Fatalf("replayed features %v, want %v", got, want)
	}
	if got, want := table.Partitions(), s.table.Partitions(); !reflect.DeepEqual(got, want) {
		s.t.Fatalf("replayed partitions differ:\n got %+v\nwant %+v", got, want)
	}
}

// step runs one operation chosen by pick (which returns a number in
// [0, n)) on up to 5 brokers.
func (s *sim) step(pick func(n int) int) {
	id := int32(pick(5) + 1)
	switch op := pick(20); {
	case op < 3:
		_ = s.register(id, byte(pick(2)), []string{"", "a", "b"}[pick(3)])
	case op < 13:
		off := s.end()
		if pick(4) == 0 {
			off -= int64(pick(5))
		}
		_, _ = s.heartbeat(id, off, pick(10) == 0, pick(6) == 0)
	case op < 16:
		s.advance(time.Duration(pick(5000)) * time.Millisecond)
	case op < 18:
		_ = s.createTopic(pick(4)+1, pick(3)+1)
	case op < 19:
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		if recs, err := s.reg.Unregister(req, s.table); err == nil {
			s.commit(recs)
		}
	default:
		s.reg.Activate()
	}
	s.check()
}

// TestRegistryRandomRunReplays drives a registry through a seeded random
// run of registrations, heartbeats (caught up or behind, with fence and
// shutdown wishes), clock jumps, topic creations and unregistrations;
// after every step the leadership invariants hold, and replaying the log
// into a fresh registry and table rebuilds the same state.
func TestRegistryRandomRunReplays(t *testing.T) {
	states := map[State]int{}
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newSim(t)
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := range 400 {
				s.step(rng.IntN)
				for _, b := range s.reg.Brokers() {
					b := b
					states[currentState(&b)]++
				}
				if i%50 == 0 {
					s.replayEqual()
				}
			}
			s.replayEqual()
		})
	}
	// The runs reach every state (counted per broker and step).
	if states[Fenced] == 0 || states[Unfenced] == 0 || states[ControlledShutdown] == 0 {
		t.Fatalf("states seen: %v", states)
	}
	t.Logf("broker-steps per state: %v", states)
}

func TestMemTableApply(t *testing.T) {
	m := NewMemTable()
	topic := records.UUID{1}
	if err := m.Apply(records.NewPartitionChangeRecord(topic, 0)); err == nil {
		t.Fatal("a change of an unknown partition applied")
	}
	for p := int32(0); p < 2; p++ {
		if err := m.Apply(&records.PartitionRecord{TopicID: topic, PartitionID: p, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 6}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Apply(&records.PartitionRecord{TopicID: records.UUID{2}, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3}); err != nil {
		t.Fatal(err)
	}
	c := records.NewPartitionChangeRecord(topic, 1)
	c.Replicas, c.ISR = []int32{2, 3}, []int32{2}
	if err := m.Apply(c); err != nil {
		t.Fatal(err)
	}
	got := m.Partitions()
	if want := (Partition{TopicID: topic, Partition: 1, Replicas: []int32{2, 3}, ISR: []int32{2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}); !reflect.DeepEqual(got[1], want) {
		t.Fatalf("after a change without a leader: %+v, want %+v", got[1], want)
	}
	var of3 []int32
	m.PartitionsOf(3, func(p Partition) bool { of3 = append(of3, int32(p.TopicID[0])*10+p.Partition); return true })
	if !slices.Equal(of3, []int32{11, 20}) {
		t.Fatalf("partitions of broker 3: %v", of3)
	}
	if err := m.Apply(&records.RemoveTopicRecord{TopicID: topic}); err != nil {
		t.Fatal(err)
	}
	if got := m.Partitions(); len(got) != 1 || got[0].TopicID != (records.UUID{2}) {
		t.Fatalf("after RemoveTopicRecord: %+v", got)
	}
}

func FuzzRegistry(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 3, 1, 5, 0, 0, 0, 2, 3, 4, 1, 0, 9, 9, 9, 9, 0, 15, 200, 1})
	f.Add([]byte{1, 1, 0, 1, 1, 2, 1, 6, 2, 1, 0, 2, 4, 3, 16, 2, 1, 2, 5, 10, 1, 2, 1, 1, 1, 17, 0, 0, 2, 10, 0, 1, 1, 14, 99})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			return
		}
		s := newSim(t)
		pick := func(n int) int {
			if len(ops) == 0 {
				return 0
			}
			v := int(ops[0]) % n
			ops = ops[1:]
			return v
		}
		for steps := 0; len(ops) > 0 && steps < 500; steps++ {
			s.step(pick)
		}
		s.replayEqual()
	})
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig(testCluster)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if good.SessionTimeout != 9*time.Second {
		t.Fatalf("default session timeout %v, want Kafka's 9s", good.SessionTimeout)
	}
	for name, mut := range map[string]func(*Config){
		"no cluster": func(c *Config) { c.ClusterID = "" },
		"timeout 0":  func(c *Config) { c.SessionTimeout = 0 },
		"no clock":   func(c *Config) { c.Now = nil },
	} {
		c := good
		mut(&c)
		if _, err := NewRegistry(c); err == nil {
			t.Errorf("%s: NewRegistry accepted %+v", name, c)
		}
	}
}

func TestApplyRejectsMismatch(t *testing.T) {
	s := newSim(t)
	if err := s.register(1, 0, "a"); err != nil {
		t.Fatal(err)
	}
	before := s.reg.Brokers()
	for _, rec := range []records.Record{
		&records.FenceBrokerRecord{ID: 2, Epoch: 1},
		&records.UnfenceBrokerRecord{ID: 1, Epoch: 9},
		&records.BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 0, Fenced: -1},
		&records.BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 1, Fenced: 2},
		&records.BrokerRegistrationChangeRecord{RecordVersion: 1, BrokerID: 1, BrokerEpoch: 1, InControlledShutdown: 3},
		&records.UnregisterBrokerRecord{BrokerID: 1, BrokerEpoch: 5},
	} {
		if err := s.reg.Apply(10, rec); err == nil {
			t.Errorf("Apply(%+v) accepted", rec)
		}
	}
	if !reflect.DeepEqual(s.reg.Brokers(), before) {
		t.Fatalf("rejected records changed the registry: %+v, was %+v", s.reg.Brokers(), before)
	}
	// The legacy FenceBrokerRecord and UnfenceBrokerRecord work as
	// BrokerRegistrationChangeRecord does.
	if err := s.reg.Apply(11, &records.UnfenceBrokerRecord{ID: 1, Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.reg.Broker(1); b.Fenced {
		t.Fatal("UnfenceBrokerRecord left broker 1 fenced")
	}
	if err := s.reg.Apply(12, &records.FenceBrokerRecord{ID: 1, Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.reg.Broker(1); !b.Fenced {
		t.Fatal("FenceBrokerRecord left broker 1 unfenced")
	}
	// Other kinds are ignored.
	if err := s.reg.Apply(13, &records.TopicRecord{Name: "x"}); err != nil {
		t.Fatal(err)
	}
}

// TestRegisterRecords checks the registration record's fields and that
// the epoch is the offset the record is applied at.
func TestRegisterRecords(t *testing.T) {
	s := newSim(t)
	req := registration(4, 9, "r1")
	req.LogDirs = [][16]byte{{1}, {2}}
	recs, err := s.reg.Register(req, 77, s.table)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Register: %v, %v", recs, err)
	}
	rec := recs[0].(*records.RegisterBrokerRecord)
	if rec.BrokerID != 4 || rec.BrokerEpoch != 77 || !rec.Fenced || rec.InControlledShutdown || *rec.Rack != "r1" ||
		rec.IncarnationID != (records.UUID{9}) || len(rec.EndPoints) != 1 || rec.EndPoints[0].Port != 9092 ||
		len(rec.Features) != 1 || len(rec.LogDirs) != 2 || rec.RecordVersion != RegisterBrokerRecordVersion {
		t.Fatalf("record %+v", rec)
	}
	s.commit(recs)
	b, ok := s.reg.Broker(4)
	if !ok || b.Epoch != s.end() || !b.Fenced || *b.Rack != "r1" || b.ShutdownOffset != -1 {
		t.Fatalf("registration %+v (log end %d)", b, s.end())
	}
	// Broker returns a copy.
	*b.Rack = "changed"
	if b2, _ := s.reg.Broker(4); *b2.Rack != "r1" {
		t.Fatal("Broker shares its rack with the registry")
	}
}

func TestHeartbeatErrors(t *testing.T) {
	s := newSim(t)
	if _, err := s.heartbeat(1, 0, false, false); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("heartbeat of unregistered broker: %v", err)
	}
	if err := s.register(1, 0, ""); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch = 1, 99
	if _, recs, err := s.reg.Heartbeat(req, s.table); !errors.Is(err, kerr.StaleBrokerEpoch) || recs != nil {
		t.Fatalf("stale epoch: %v, %v", recs, err)
	}
	if err := s.register(1, 1, ""); err != nil {
		t.Fatalf("a fenced broker's id is free to a new incarnation: %v", err)
	}
	if _, err := s.heartbeat(1, s.end(), false, false); err != nil {
		t.Fatal(err)
	}
	if err := s.register(1, 2, ""); !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("live broker, other incarnation: %v", err)
	}
	// After the session timeout the old session is no longer valid (and
	// the broker is fenced).
	s.advance(DefaultSessionTimeout)
	if err := s.register(1, 2, ""); !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("at exactly the session timeout the session is still valid: %v", err)
	}
	s.advance(time.Millisecond)
	if b, _ := s.reg.Broker(1); !b.Fenced {
		t.Fatal("broker 1 not fenced after the session timeout")
	}
	if err := s.register(1, 2, ""); err != nil {
		t.Fatal(err)
	}
}

// TestRegisterLiveMovesLeadership: a live broker re-registering (the same
// incarnation) starts fenced, so its leadership moves first.
func TestRegisterLiveMovesLeadership(t *testing.T) {
	s := newSim(t)
	for id := int32(1); id <= 2; id++ {
		if err := s.register(id, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	for id := int32(1); id <= 2; id++ {
		if _, err := s.heartbeat(id, s.end(), false, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.createTopic(4, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.register(1, 0, ""); err != nil {
		t.Fatal(err)
	}
	s.check()
	for _, p := range s.table.Partitions() {
		if p.Leader != 2 {
			t.Fatalf("partition %d led by %d after broker 1 re-registered", p.Partition, p.Leader)
		}
	}
}

// TestActivateGivesFreshSessions: a standby that replayed the log and
// becomes active gives every broker a full session timeout from its
// activation, not from when it replayed the registration.
func TestActivateGivesFreshSessions(t *testing.T) {
	s := newSim(t)
	for id := int32(1); id <= 2; id++ {
		if err := s.register(id, 0, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.heartbeat(id, s.end(), false, false); err != nil {
			t.Fatal(err)
		}
	}
	standby := s.newRegistry()
	for off, rec := range s.log {
		if err := standby.Apply(int64(off), rec); err != nil {
			t.Fatal(err)
		}
	}
	s.now = s.now.Add(time.Minute)
	if recs := standby.FenceStale(s.table); recs == nil {
		t.Fatal("without Activate, a minute-old replay should look stale")
	}
	standby.Activate()
	if at, ok := standby.NextCheck(); !ok || !at.Equal(s.now.Add(DefaultSessionTimeout)) {
		t.Fatalf("NextCheck after Activate = %v, %t; want %v", at, ok, s.now.Add(DefaultSessionTimeout))
	}
	s.now = s.now.Add(DefaultSessionTimeout)
	if recs := standby.FenceStale(s.table); recs != nil {
		t.Fatalf("fenced within the session timeout of activation: %v", recs)
	}
	s.now = s.now.Add(time.Millisecond)
	if recs := standby.FenceStale(s.table); len(recs) != 1 {
		t.Fatalf("after the timeout: %v, want one fence record", recs)
	}
}

func TestNextCheckNoUnfenced(t *testing.T) {
	s := newSim(t)
	if _, ok := s.reg.NextCheck(); ok {
		t.Fatal("NextCheck with no brokers")
	}
	if err := s.register(1, 0, ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.reg.NextCheck(); ok {
		t.Fatal("NextCheck with only a fenced broker")
	}
}

// TestDecideChangesNothing: the decide methods return records and change
// no replicated state; only Apply does.
func TestDecideChangesNothing(t *testing.T) {
	s := newSim(t)
	for id := int32(1); id <= 3; id++ {
		if err := s.register(id, 0, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.heartbeat(id, s.end(), false, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.createTopic(6, 2); err != nil {
		t.Fatal(err)
	}
	brokers, parts := s.reg.Brokers(), s.table.Partitions()
	same := func(what string, recs []records.Record) {
		t.Helper()
		if len(recs) == 0 {
			t.Fatalf("%s decided no records", what)
		}
		if !reflect.DeepEqual(s.reg.Brokers(), brokers) || !reflect.DeepEqual(s.table.Partitions(), parts) {
			t.Fatalf("%s changed state before its records were applied", what)
		}
	}
	recs, err := s.reg.Register(registration(4, 0, ""), 99, s.table)
	if err != nil {
		t.Fatal(err)
	}
	same("Register", recs)
	recs, err = s.reg.Register(registration(1, 0, ""), 99, s.table)
	if err != nil {
		t.Fatal(err)
	}
	same("Register of a live broker", recs)
	for _, w := range []struct{ fence, shutdown bool }{{true, false}, {false, true}, {true, true}} {
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantFence, req.WantShutdown = 1, brokers[0].Epoch, s.end(), w.fence, w.shutdown
		_, recs, err := s.reg.Heartbeat(req, s.table)
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("Heartbeat %+v", w), recs)
	}
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 2
	recs, err = s.reg.Unregister(req, s.table)
	if err != nil {
		t.Fatal(err)
	}
	same("Unregister", recs)
	s.now = s.now.Add(time.Hour)
	same("FenceStale", s.reg.FenceStale(s.table))
}
