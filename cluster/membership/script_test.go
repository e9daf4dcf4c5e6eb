package membership

// TestMembershipScripts runs the interaction scripts in testdata/ with
// internal/scripttest. Each script drives one Registry, one MemTable and a
// fake clock (starting at 1,700,000,000,000 ms); every record a command
// decides is applied at once at the next log offset (the log starts at
// offset 0), as the active controller does, and printed as
// "@offset Record fields". Commands:
//
//	features name=level ...                   apply FeatureLevelRecords
//	register id=<n> [inc=<n>] [rack=<r>] [cluster=<id>] [mv=<lo>-<hi>]
//	heartbeat id=<n> [epoch=<n>] [offset=<n>|end] [fence] [shutdown]
//	                                          epoch defaults to the registered one,
//	                                          offset to the log end (caught up)
//	unregister id=<n>
//	advance ms=<n>                            move the clock, then fence stale
//	                                          brokers until none is left
//	topic name=<t> partitions=<n> rf=<n>      place (seeded placer) and create
//	place partitions=<n> rf=<n> brokers=<id>[:rack][!],... [seed=<n>]
//	                                          placement only; ! is fenced
//	brokers | partitions | sessions           print state
//	activate                                  Registry.Activate
//	failover                                  a standby registry replays the log,
//	                                          activates and takes over
//	replay                                    replay the log into a fresh registry
//	                                          and table and compare
//
// Run with SCRIPTTEST_REWRITE=1 to regenerate the expected output.

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/cluster/records"
	"github.com/ringbroker/ringbroker/internal/scripttest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const scriptCluster = "MkU3OEVBNTcwNTJENDM2Qg"

type scriptEnv struct {
	t      *testing.T
	now    time.Time
	reg    *Registry
	table  *MemTable
	placer *Placer
	log    []records.Record // the record at offset i is log[i]
	names  map[records.UUID]string
	out    strings.Builder
}

func newScriptEnv(t *testing.T) *scriptEnv {
	e := &scriptEnv{t: t, now: time.UnixMilli(1_700_000_000_000), table: NewMemTable(),
		placer: NewSeededPlacer(1), names: map[records.UUID]string{}}
	e.reg = e.newRegistry()
	return e
}

func (e *scriptEnv) newRegistry() *Registry {
	cfg := DefaultConfig(scriptCluster)
	cfg.Now = func() time.Time { return e.now }
	r, err := NewRegistry(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *scriptEnv) Output() string {
	s := e.out.String()
	e.out.Reset()
	return s
}

func (e *scriptEnv) printf(format string, args ...any) { fmt.Fprintf(&e.out, format, args...) }

// commit applies recs at the next offsets and prints them.
func (e *scriptEnv) commit(recs []records.Record) {
	for _, rec := range recs {
		off := int64(len(e.log))
		// Records go through the codec, as they do through the log.
		dec, err := records.Decode(rec.AppendTo(nil))
		if err != nil {
			e.t.Fatalf("record %s does not decode: %v", rec.APIKey(), err)
		}
		e.log = append(e.log, dec)
		if err := e.reg.Apply(off, dec); err != nil {
			e.printf("apply error: %v\n", err)
		}
		if err := e.table.Apply(dec); err != nil {
			e.printf("apply error: %v\n", err)
		}
		e.printf("@%d %s\n", off, e.fmtRecord(dec))
	}
}

func (e *scriptEnv) logEnd() int64 { return int64(len(e.log)) - 1 }

func errText(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func (e *scriptEnv) Exec(t *testing.T, line string) {
	fields := strings.Fields(line)
	cmd, args := fields[0], parseArgs(fields[1:])
	switch cmd {
	case "features":
		var recs []records.Record
		for _, f := range fields[1:] {
			name, level, _ := strings.Cut(f, "=")
			recs = append(recs, &records.FeatureLevelRecord{Name: name, FeatureLevel: int16(atoi(t, level))})
		}
		e.commit(recs)
	case "register":
		id := int32(atoi(t, args["id"]))
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID = id
		req.ClusterID = scriptCluster
		if c, ok := args["cluster"]; ok {
			req.ClusterID = c
		}
		req.IncarnationID = [16]byte{15: byte(atoiOr(t, args["inc"], 1))}
		if rk, ok := args["rack"]; ok {
			req.Rack = &rk
		}
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port = "PLAINTEXT", fmt.Sprintf("127.0.0.%d", id), 9092
		req.Listeners = append(req.Listeners, l)
		lo, hi, _ := strings.Cut(orDefault(args["mv"], "1-21"), "-")
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = "metadata.version", int16(atoi(t, lo)), int16(atoi(t, hi))
		req.Features = append(req.Features, f)
		recs, err := e.reg.Register(req, int64(len(e.log)), e.table)
		if err != nil {
			e.printf("error: %s\n", errText(err))
			return
		}
		e.commit(recs)
		b, _ := e.reg.Broker(id)
		e.printf("registered broker %d epoch %d\n", id, b.Epoch)
	case "heartbeat":
		id := int32(atoi(t, args["id"]))
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID = id
		if b, ok := e.reg.Broker(id); ok {
			req.BrokerEpoch = b.Epoch
		}
		if ep, ok := args["epoch"]; ok {
			req.BrokerEpoch = int64(atoi(t, ep))
		}
		req.CurrentMetadataOffset = e.logEnd()
		if off, ok := args["offset"]; ok && off != "end" {
			req.CurrentMetadataOffset = int64(atoi(t, off))
		}
		_, req.WantFence = args["fence"]
		_, req.WantShutdown = args["shutdown"]
		reply, recs, err := e.reg.Heartbeat(req, e.table)
		if err != nil {
			e.printf("error: %s\n", errText(err))
			return
		}
		e.commit(recs)
		e.printf("reply caught-up=%t fenced=%t shutdown=%t state=%s\n", reply.IsCaughtUp, reply.IsFenced, reply.ShouldShutDown, reply.State)
	case "unregister":
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = int32(atoi(t, args["id"]))
		recs, err := e.reg.Unregister(req, e.table)
		if err != nil {
			e.printf("error: %s\n", errText(err))
			return
		}
		e.commit(recs)
	case "advance":
		e.now = e.now.Add(time.Duration(atoi(t, args["ms"])) * time.Millisecond)
		for range 100 {
			recs := e.reg.FenceStale(e.table)
			if recs == nil {
				break
			}
			e.commit(recs)
		}
	case "topic":
		name := args["name"]
		id := records.UUID{}
		copy(id[:], name)
		e.names[id] = name
		assign, err := e.placer.Place(atoi(t, args["partitions"]), atoi(t, args["rf"]), e.reg.Usable())
		if err != nil {
			e.printf("error: %s\n", errText(err))
			return
		}
		recs := []records.Record{&records.TopicRecord{Name: name, TopicID: id}}
		for p, replicas := range assign {
			recs = append(recs, &records.PartitionRecord{PartitionID: int32(p), TopicID: id, Replicas: replicas,
				ISR: slices.Clone(replicas), Leader: replicas[0]})
		}
		e.commit(recs)
	case "place":
		var brokers []BrokerInfo
		for _, s := range strings.Split(args["brokers"], ",") {
			var b BrokerInfo
			s, b.Fenced = strings.CutSuffix(s, "!")
			idText, rackName, _ := strings.Cut(s, ":")
			b.ID, b.Rack = int32(atoi(t, idText)), rackName
			brokers = append(brokers, b)
		}
		assign, err := NewSeededPlacer(uint64(atoiOr(t, args["seed"], 1))).Place(atoi(t, args["partitions"]), atoi(t, args["rf"]), brokers)
		if err != nil {
			e.printf("error: %s\n", errText(err))
			return
		}
		for p, replicas := range assign {
			e.printf("p%d %v\n", p, replicas)
		}
	case "brokers":
		for _, b := range e.reg.Brokers() {
			rk := "-"
			if b.Rack != nil {
				rk = *b.Rack
			}
			e.printf("broker %d epoch=%d rack=%s fenced=%t shutdown=%t\n", b.ID, b.Epoch, rk, b.Fenced, b.InControlledShutdown)
		}
	case "partitions":
		for _, p := range e.table.Partitions() {
			e.printf("%s-%d replicas=%v isr=%v leader=%d leader-epoch=%d partition-epoch=%d\n",
				e.names[p.TopicID], p.Partition, p.Replicas, p.ISR, p.Leader, p.LeaderEpoch, p.PartitionEpoch)
		}
	case "sessions":
		for _, s := range e.reg.Sessions() {
			e.printf("broker %d last-contact=+%dms offset=%d valid=%t\n", s.ID, s.LastContact.Sub(time.UnixMilli(1_700_000_000_000)).Milliseconds(), s.MetadataOffset, s.Valid)
		}
	case "activate":
		e.reg.Activate()
	case "failover":
		reg := e.newRegistry()
		for off, rec := range e.log {
			if err := reg.Apply(int64(off), rec); err != nil {
				t.Fatalf("standby replay at %d: %v", off, err)
			}
		}
		reg.Activate()
		e.reg = reg
		e.printf("standby replayed %d records and is active\n", len(e.log))
	case "replay":
		reg, table := e.newRegistry(), NewMemTable()
		for off, rec := range e.log {
			if err := reg.Apply(int64(off), rec); err != nil {
				t.Fatalf("replay at %d: %v", off, err)
			}
			if err := table.Apply(rec); err != nil {
				t.Fatalf("replay at %d: %v", off, err)
			}
		}
		if !reflect.DeepEqual(reg.Brokers(), e.reg.Brokers()) || !reflect.DeepEqual(reg.FinalizedFeatures(), e.reg.FinalizedFeatures()) {
			t.Fatalf("replayed registry differs:\n got %+v\nwant %+v", reg.Brokers(), e.reg.Brokers())
		}
		if !reflect.DeepEqual(table.Partitions(), e.table.Partitions()) {
			t.Fatalf("replayed partitions differ:\n got %+v\nwant %+v", table.Partitions(), e.table.Partitions())
		}
		e.printf("replayed %d records: registry and partitions equal\n", len(e.log))
	default:
		t.Fatalf("unknown command %q", line)
	}
}

func (e *scriptEnv) fmtRecord(rec records.Record) string {
	switch r := rec.(type) {
	case *records.RegisterBrokerRecord:
		rk := "-"
		if r.Rack != nil {
			rk = *r.Rack
		}
		return fmt.Sprintf("RegisterBrokerRecord broker=%d epoch=%d incarnation=%d rack=%s fenced=%t", r.BrokerID, r.BrokerEpoch, r.IncarnationID[15], rk, r.Fenced)
	case *records.UnregisterBrokerRecord:
		return fmt.Sprintf("UnregisterBrokerRecord broker=%d epoch=%d", r.BrokerID, r.BrokerEpoch)
	case *records.BrokerRegistrationChangeRecord:
		return fmt.Sprintf("BrokerRegistrationChangeRecord broker=%d epoch=%d fenced=%d controlled-shutdown=%d", r.BrokerID, r.BrokerEpoch, r.Fenced, r.InControlledShutdown)
	case *records.PartitionChangeRecord:
		s := fmt.Sprintf("PartitionChangeRecord %s-%d", e.names[r.TopicID], r.PartitionID)
		if r.Leader != records.NoLeaderChange {
			s += fmt.Sprintf(" leader=%d", r.Leader)
		}
		if r.ISR != nil {
			s += fmt.Sprintf(" isr=%v", r.ISR)
		}
		return s
	case *records.PartitionRecord:
		return fmt.Sprintf("PartitionRecord %s-%d replicas=%v leader=%d", e.names[r.TopicID], r.PartitionID, r.Replicas, r.Leader)
	case *records.TopicRecord:
		return fmt.Sprintf("TopicRecord %s", r.Name)
	case *records.FeatureLevelRecord:
		return fmt.Sprintf("FeatureLevelRecord %s=%d", r.Name, r.FeatureLevel)
	}
	return rec.APIKey().String()
}

func TestMembershipScripts(t *testing.T) {
	scripttest.Run(t, filepath.Join("testdata", "*.txt"), func(t *testing.T) scripttest.Env { return newScriptEnv(t) })
}

func parseArgs(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

func atoiOr(t *testing.T, s string, def int) int {
	t.Helper()
	if s == "" {
		return def
	}
	return atoi(t, s)
}
