package txn

// Script tests of the transaction coordinator's state machine (Manager)
// with a fake clock, run by internal/scripttest: each file in testdata/ is
// a list of blocks
//
//	command arg=value ...
//	----
//	expected output
//
// Commands (transactional id "t" unless id= is given):
//
//	init [timeout=<ms>] [pid=<n> epoch=<n>] spare=<n>
//	add pid=<n> epoch=<n> parts=<topic>:<partition>,...
//	verify pid=<n> epoch=<n> part=<topic>:<partition>
//	end pid=<n> epoch=<n> commit=true|false
//	advance <ms>        move the clock, then run the timeout check
//	hold | release      hold marker writes / complete the held ones
//	fail-writes on|off  make __transaction_state writes fail
//	reload              replay the written records into a new manager (a restart)
//	state | list
//
// Run with SCRIPTTEST_REWRITE=1 to regenerate the expected output.

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringbroker/ringbroker/internal/scripttest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fakeTxnEnv struct {
	t       time.Time
	records []kmsg.Record
	out     *strings.Builder
	hold    bool
	held    []func()
	fail    bool
}

func (e *fakeTxnEnv) Now() time.Time { return e.t }

func (e *fakeTxnEnv) Persist(recs []kmsg.Record, done func(error)) {
	if e.fail {
		done(kerr.NotCoordinator)
		return
	}
	e.records = append(e.records, recs...)
	done(nil)
}

func (e *fakeTxnEnv) WriteMarkers(job MarkerJob, done func()) {
	var ps []string
	for _, p := range job.Parts {
		ps = append(ps, fmt.Sprintf("%s:%d", p.Topic, p.Partition))
	}
	kind := "ABORT"
	if job.Commit {
		kind = "COMMIT"
	}
	fmt.Fprintf(e.out, "markers %s pid=%d epoch=%d parts=%s\n", kind, job.PID, job.Epoch, strings.Join(ps, ","))
	if e.hold {
		e.held = append(e.held, done)
		return
	}
	done()
}

func parseTxnParts(s string) []TP {
	var out []TP
	for _, tp := range strings.Split(s, ",") {
		t, p, _ := strings.Cut(tp, ":")
		out = append(out, TP{t, int32(atoiOr(p, 0))})
	}
	return out
}

func runTxnCommand(e *fakeTxnEnv, m **Manager, line string) {
	fields := strings.Fields(line)
	cmd, a := fields[0], parseArgs(fields[1:])
	id := a["id"]
	if id == "" {
		id = "t"
	}
	pid, epoch := int64(atoiOr(a["pid"], -1)), int16(atoiOr(a["epoch"], -1))
	switch cmd {
	case "init":
		ia := InitArgs{ID: id, TimeoutMs: int32(atoiOr(a["timeout"], 60000)), PID: pid, Epoch: epoch, Spare: int64(atoiOr(a["spare"], 0))}
		(*m).InitProducer(ia, func(r InitResult) {
			fmt.Fprintf(e.out, "init %s: %s pid=%d epoch=%d\n", id, errName(r.Err), r.PID, r.Epoch)
		})
	case "add":
		(*m).AddPartitions(id, pid, epoch, parseTxnParts(a["parts"]), func(err *kerr.Error) {
			fmt.Fprintf(e.out, "add %s: %s\n", id, errName(err))
		})
	case "verify":
		err := (*m).Verify(id, pid, epoch, parseTxnParts(a["part"])[0])
		fmt.Fprintf(e.out, "verify %s: %s\n", id, errName(err))
	case "end":
		commit := a["commit"] == "true"
		(*m).EndTxn(id, pid, epoch, commit, func(err *kerr.Error) {
			fmt.Fprintf(e.out, "end %s commit=%v: %s\n", id, commit, errName(err))
		})
	case "advance":
		e.t = e.t.Add(msOr(fields[1], 0))
		(*m).CheckTimeouts()
	case "hold":
		e.hold = true
	case "release":
		e.hold = false
		held := e.held
		e.held = nil
		for _, done := range held {
			done()
		}
	case "fail-writes":
		e.fail = fields[1] == "on"
	case "reload":
		nm := NewManager(e, (*m).cfg, 0)
		for _, r := range e.records {
			if err := nm.LoadRecord(r.Key, r.Value); err != nil {
				fmt.Fprintf(e.out, "reload: %v\n", err)
			}
		}
		e.held = nil // the old manager's marker rounds die with it
		e.hold = false
		nm.FinishLoad()
		*m = nm
	case "state":
		t := (*m).txns[id]
		if t == nil {
			e.out.WriteString("no transactional id\n")
			return
		}
		var ps []string
		for _, p := range t.sortedParts() {
			ps = append(ps, fmt.Sprintf("%s:%d", p.Topic, p.Partition))
		}
		extra := ""
		if t.busy {
			extra = " busy"
		}
		fmt.Fprintf(e.out, "%s state=%s pid=%d epoch=%d timeout=%v parts=[%s]%s\n", id, t.state, t.pid, t.epoch, t.timeout, strings.Join(ps, " "), extra)
	case "list":
		for _, s := range (*m).List() {
			fmt.Fprintf(e.out, "%s %s pid=%d\n", s.ID, s.State, s.PID)
		}
	default:
		panic(fmt.Sprintf("unknown command %q", cmd))
	}
}

// scriptEnv runs one script file on a Manager (scripttest.Env).
type scriptEnv struct {
	e *fakeTxnEnv
	m *Manager
}

func (s *scriptEnv) Exec(t *testing.T, line string) { runTxnCommand(s.e, &s.m, line) }

func (s *scriptEnv) Output() string {
	out := s.e.out.String()
	s.e.out.Reset()
	return out
}

func TestTxnScripts(t *testing.T) {
	scripttest.Run(t, filepath.Join("testdata", "*.txt"), func(t *testing.T) scripttest.Env {
		env := &fakeTxnEnv{t: time.UnixMilli(1_700_000_000_000), out: &strings.Builder{}}
		cfg := DefaultConfig()
		cfg.IDExpiration = time.Hour
		return &scriptEnv{e: env, m: NewManager(env, cfg, 0)}
	})
}

// TestTxnRecordRoundTrip: a state written as a __transaction_state record
// reads back the same.
func TestTxnRecordRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	in := &txnMeta{id: "x", pid: 7, epoch: 3, timeout: 5 * time.Second, state: txnOngoing,
		parts: map[TP]bool{{"b", 1}: true, {"a", 0}: true, {"a", 2}: true}, start: now, updated: now.Add(time.Second)}
	r := txnRecord(in)
	m := NewManager(&fakeTxnEnv{}, DefaultConfig(), 0)
	if err := m.LoadRecord(r.Key, r.Value); err != nil {
		t.Fatal(err)
	}
	got := m.txns["x"]
	if got == nil || got.pid != 7 || got.epoch != 3 || got.timeout != 5*time.Second || got.state != txnOngoing ||
		!got.start.Equal(now) || !got.updated.Equal(now.Add(time.Second)) || len(got.parts) != 3 || !got.parts[TP{"a", 2}] {
		t.Fatalf("round trip: %+v", got)
	}
	ps := got.sortedParts()
	if !sort.SliceIsSorted(ps, func(i, j int) bool { return ps[i].Topic < ps[j].Topic }) {
		t.Fatalf("parts not sorted: %v", ps)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil || k.TransactionalID != "x" {
		t.Fatalf("key: %+v %v", k, err)
	}
	if err := m.LoadRecord(r.Key, nil); err != nil || m.txns["x"] != nil {
		t.Fatalf("tombstone did not remove the id: %v", err)
	}
}

// TestTxnEpochExhaustion: a re-init at the last usable epoch moves the
// transactional id to a new producer id with epoch 0.
func TestTxnEpochExhaustion(t *testing.T) {
	env := &fakeTxnEnv{t: time.UnixMilli(1_700_000_000_000), out: &strings.Builder{}}
	m := NewManager(env, DefaultConfig(), 0)
	var got InitResult
	m.InitProducer(InitArgs{ID: "x", TimeoutMs: 1000, PID: -1, Epoch: -1, Spare: 5}, func(r InitResult) { got = r })
	m.txns["x"].epoch = 32766
	m.InitProducer(InitArgs{ID: "x", TimeoutMs: 1000, PID: -1, Epoch: -1, Spare: 6}, func(r InitResult) { got = r })
	if got.Err != nil || got.PID != 6 || got.Epoch != 0 {
		t.Fatalf("re-init at epoch 32766: %+v", got)
	}
}

func errName(err *kerr.Error) string {
	if err == nil {
		return "NONE"
	}
	return err.Message
}

func parseArgs(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

func atoiOr(s string, def int) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("bad number %q", s))
	}
	return n
}

func msOr(s string, def int) time.Duration { return time.Duration(atoiOr(s, def)) * time.Millisecond }
