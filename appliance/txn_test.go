package appliance

// Script tests of the transaction coordinator's state machine
// (txn_state.go) with a fake clock, in the format of group_test.go: each
// file in testdata/txn/ is a list of blocks
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
// Run with -rewrite to regenerate the expected output.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

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

func (e *fakeTxnEnv) now() time.Time { return e.t }

func (e *fakeTxnEnv) persist(recs []kmsg.Record, done func(error)) {
	if e.fail {
		done(kerr.NotCoordinator)
		return
	}
	e.records = append(e.records, recs...)
	done(nil)
}

func (e *fakeTxnEnv) writeMarkers(job markerJob, done func()) {
	var ps []string
	for _, p := range job.parts {
		ps = append(ps, fmt.Sprintf("%s:%d", p.topic, p.partition))
	}
	kind := "ABORT"
	if job.commit {
		kind = "COMMIT"
	}
	fmt.Fprintf(e.out, "markers %s pid=%d epoch=%d parts=%s\n", kind, job.pid, job.epoch, strings.Join(ps, ","))
	if e.hold {
		e.held = append(e.held, done)
		return
	}
	done()
}

func parseTxnParts(s string) []txnTP {
	var out []txnTP
	for _, tp := range strings.Split(s, ",") {
		t, p, _ := strings.Cut(tp, ":")
		out = append(out, txnTP{t, int32(atoiOr(p, 0))})
	}
	return out
}

func runTxnCommand(e *fakeTxnEnv, m **txnManager, line string) {
	fields := strings.Fields(line)
	cmd, a := fields[0], parseArgs(fields[1:])
	id := a["id"]
	if id == "" {
		id = "t"
	}
	pid, epoch := int64(atoiOr(a["pid"], -1)), int16(atoiOr(a["epoch"], -1))
	switch cmd {
	case "init":
		ia := initArgs{id: id, timeoutMs: int32(atoiOr(a["timeout"], 60000)), pid: pid, epoch: epoch, spare: int64(atoiOr(a["spare"], 0))}
		(*m).initProducer(ia, func(r initResult) {
			fmt.Fprintf(e.out, "init %s: %s pid=%d epoch=%d\n", id, errName(r.err), r.pid, r.epoch)
		})
	case "add":
		(*m).addPartitions(id, pid, epoch, parseTxnParts(a["parts"]), func(err *kerr.Error) {
			fmt.Fprintf(e.out, "add %s: %s\n", id, errName(err))
		})
	case "verify":
		err := (*m).verify(id, pid, epoch, parseTxnParts(a["part"])[0])
		fmt.Fprintf(e.out, "verify %s: %s\n", id, errName(err))
	case "end":
		commit := a["commit"] == "true"
		(*m).endTxn(id, pid, epoch, commit, func(err *kerr.Error) {
			fmt.Fprintf(e.out, "end %s commit=%v: %s\n", id, commit, errName(err))
		})
	case "advance":
		e.t = e.t.Add(msOr(fields[1], 0))
		(*m).checkTimeouts()
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
		nm := newTxnManager(e, (*m).cfg, 0)
		for _, r := range e.records {
			if err := nm.loadRecord(r.Key, r.Value); err != nil {
				fmt.Fprintf(e.out, "reload: %v\n", err)
			}
		}
		e.held = nil // the old manager's marker rounds die with it
		e.hold = false
		nm.finishLoad()
		*m = nm
	case "state":
		t := (*m).txns[id]
		if t == nil {
			e.out.WriteString("no transactional id\n")
			return
		}
		var ps []string
		for _, p := range t.sortedParts() {
			ps = append(ps, fmt.Sprintf("%s:%d", p.topic, p.partition))
		}
		extra := ""
		if t.busy {
			extra = " busy"
		}
		fmt.Fprintf(e.out, "%s state=%s pid=%d epoch=%d timeout=%v parts=[%s]%s\n", id, t.state, t.pid, t.epoch, t.timeout, strings.Join(ps, " "), extra)
	case "list":
		for _, s := range (*m).list() {
			fmt.Fprintf(e.out, "%s %s pid=%d\n", s.id, s.state, s.pid)
		}
	default:
		panic(fmt.Sprintf("unknown command %q", cmd))
	}
}

func TestTxnScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "txn", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/txn: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out := &strings.Builder{}
			env := &fakeTxnEnv{t: time.UnixMilli(1_700_000_000_000), out: out}
			cfg := defaultTxnConfig()
			cfg.idExpiration = time.Hour
			m := newTxnManager(env, cfg, 0)
			var rewritten strings.Builder
			for _, blk := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
				lines := strings.Split(blk, "\n")
				var cmd []string
				i := 0
				for ; i < len(lines) && lines[i] != "----"; i++ {
					cmd = append(cmd, lines[i])
				}
				want := ""
				if i < len(lines) {
					want = strings.Join(lines[i+1:], "\n")
				}
				out.Reset()
				for _, c := range cmd {
					if c == "" || strings.HasPrefix(c, "#") {
						continue
					}
					runTxnCommand(env, &m, c)
				}
				got := strings.TrimSpace(out.String())
				rewritten.WriteString(strings.Join(cmd, "\n") + "\n----\n")
				if got != "" {
					rewritten.WriteString(got + "\n")
				}
				rewritten.WriteString("\n")
				if !*rewrite && got != strings.TrimSpace(want) {
					t.Errorf("%s:\n%s\ngot:\n%s\nwant:\n%s", path, strings.Join(cmd, "\n"), got, want)
				}
			}
			if *rewrite {
				if err := os.WriteFile(path, []byte(strings.TrimSpace(rewritten.String())+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestTxnRecordRoundTrip: a state written as a __transaction_state record
// reads back the same.
func TestTxnRecordRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	in := &txnMeta{id: "x", pid: 7, epoch: 3, timeout: 5 * time.Second, state: txnOngoing,
		parts: map[txnTP]bool{{"b", 1}: true, {"a", 0}: true, {"a", 2}: true}, start: now, updated: now.Add(time.Second)}
	r := txnRecord(in)
	m := newTxnManager(&fakeTxnEnv{}, defaultTxnConfig(), 0)
	if err := m.loadRecord(r.Key, r.Value); err != nil {
		t.Fatal(err)
	}
	got := m.txns["x"]
	if got == nil || got.pid != 7 || got.epoch != 3 || got.timeout != 5*time.Second || got.state != txnOngoing ||
		!got.start.Equal(now) || !got.updated.Equal(now.Add(time.Second)) || len(got.parts) != 3 || !got.parts[txnTP{"a", 2}] {
		t.Fatalf("round trip: %+v", got)
	}
	ps := got.sortedParts()
	if !sort.SliceIsSorted(ps, func(i, j int) bool { return ps[i].topic < ps[j].topic }) {
		t.Fatalf("parts not sorted: %v", ps)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil || k.TransactionalID != "x" {
		t.Fatalf("key: %+v %v", k, err)
	}
	if err := m.loadRecord(r.Key, nil); err != nil || m.txns["x"] != nil {
		t.Fatalf("tombstone did not remove the id: %v", err)
	}
}

// TestTxnEpochExhaustion: a re-init at the last usable epoch moves the
// transactional id to a new producer id with epoch 0.
func TestTxnEpochExhaustion(t *testing.T) {
	env := &fakeTxnEnv{t: time.UnixMilli(1_700_000_000_000), out: &strings.Builder{}}
	m := newTxnManager(env, defaultTxnConfig(), 0)
	var got initResult
	m.initProducer(initArgs{id: "x", timeoutMs: 1000, pid: -1, epoch: -1, spare: 5}, func(r initResult) { got = r })
	m.txns["x"].epoch = 32766
	m.initProducer(initArgs{id: "x", timeoutMs: 1000, pid: -1, epoch: -1, spare: 6}, func(r initResult) { got = r })
	if got.err != nil || got.pid != 6 || got.epoch != 0 {
		t.Fatalf("re-init at epoch 32766: %+v", got)
	}
}
