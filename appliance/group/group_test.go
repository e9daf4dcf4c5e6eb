package group

// Script tests of the group state machine (Manager) with a fake
// clock. Each file in testdata/ is a list of blocks:
//
//	command arg=value ...
//	----
//	expected output
//
// separated by blank lines. Commands (one group "g" unless group= is given):
//
//	config initial-delay=<ms> min-session=<ms> max-session=<ms>
//	join client=<id> [member=<id>] [instance=<id>] [session=<ms>] [rebalance=<ms>] [protocols=name:meta,...] [type=consumer] [v=<version>]
//	sync member=<id> gen=<n> [instance=<id>] [assign=<member>:<bytes>,...]
//	heartbeat member=<id> gen=<n> [instance=<id>]
//	leave member=<id> [instance=<id>]
//	commit [member=<id>] [gen=<n>] offsets=<topic>:<partition>:<offset>,...
//	fetch topics=<topic>:<partition>,...
//	advance <ms>
//	persist fail|ok (fail: every append fails until ok)
//	state
//
// The output of a command is every answer given while it ran (joins and
// syncs may be answered by a later command) and, for state, the group.
// Run with SCRIPTTEST_REWRITE=1 to regenerate the expected output
// (internal/scripttest).

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

type fakeTimer struct {
	when    time.Time
	seq     int
	fn      func()
	stopped bool
}

func (t *fakeTimer) Stop() { t.stopped = true }

// fakeGroupEnv is a Env with a manual clock and an in-memory log.
type fakeGroupEnv struct {
	t       time.Time
	timers  []*fakeTimer
	seq     int
	ids     map[string]int
	records []kmsg.Record
	out     *strings.Builder
	// queue makes post queue its work until drain (a shard with
	// requests waiting); otherwise post runs it at once.
	queue    bool
	posted   []func()
	warnings []string
	// persistErr, when set, fails every persist.
	persistErr error
}

func (e *fakeGroupEnv) Post(fn func()) {
	if !e.queue {
		fn()
		return
	}
	e.posted = append(e.posted, fn)
}

// drain runs the queued posts, and those they post, in order.
func (e *fakeGroupEnv) drain() {
	for len(e.posted) > 0 {
		fn := e.posted[0]
		e.posted = e.posted[1:]
		fn()
	}
}

func (e *fakeGroupEnv) Warn(msg string, args ...any) {
	e.warnings = append(e.warnings, fmt.Sprint(append([]any{msg}, args...)...))
}

func (e *fakeGroupEnv) Now() time.Time { return e.t }

func (e *fakeGroupEnv) AfterFunc(d time.Duration, fn func()) Timer {
	e.seq++
	t := &fakeTimer{when: e.t.Add(d), seq: e.seq, fn: fn}
	e.timers = append(e.timers, t)
	return t
}

func (e *fakeGroupEnv) NewMemberID(clientID string) string {
	e.ids[clientID]++
	return fmt.Sprintf("%s-%d", clientID, e.ids[clientID])
}

func (e *fakeGroupEnv) Persist(recs []kmsg.Record, done func(error)) {
	if e.persistErr != nil {
		done(e.persistErr)
		return
	}
	e.records = append(e.records, recs...)
	done(nil)
}

// advance moves the clock, firing due timers in order.
func (e *fakeGroupEnv) advance(d time.Duration) {
	end := e.t.Add(d)
	for {
		var next *fakeTimer
		for _, t := range e.timers {
			if !t.stopped && !t.when.After(end) && (next == nil || t.when.Before(next.when) || t.when.Equal(next.when) && t.seq < next.seq) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.stopped = true
		if next.when.After(e.t) {
			e.t = next.when
		}
		next.fn()
	}
	e.t = end
	live := e.timers[:0]
	for _, t := range e.timers {
		if !t.stopped {
			live = append(live, t)
		}
	}
	e.timers = live
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

func (e *fakeGroupEnv) joinDone(label string) func(joinResult) {
	return func(r joinResult) {
		fmt.Fprintf(e.out, "join %s: %s member=%s gen=%d", label, errName(r.err), r.memberID, r.generation)
		if r.err == nil {
			fmt.Fprintf(e.out, " proto=%s leader=%s", r.protocolName, r.leader)
			if r.skipAssignment {
				e.out.WriteString(" skip-assignment")
			}
			if len(r.members) > 0 {
				var ids []string
				for _, m := range r.members {
					ids = append(ids, m.id+":"+string(m.metadata))
				}
				fmt.Fprintf(e.out, " members=[%s]", strings.Join(ids, " "))
			}
		}
		e.out.WriteString("\n")
	}
}

func runGroupCommand(e *fakeGroupEnv, m **Manager, line string) {
	fields := strings.Fields(line)
	cmd, a := fields[0], parseArgs(fields[1:])
	groupID := a["group"]
	if groupID == "" {
		groupID = "g"
	}
	switch cmd {
	case "config":
		cfg := (*m).cfg
		if v, ok := a["initial-delay"]; ok {
			cfg.initialRebalanceDelay = msOr(v, 0)
		}
		if v, ok := a["min-session"]; ok {
			cfg.minSessionTimeout = msOr(v, 0)
		}
		if v, ok := a["max-session"]; ok {
			cfg.maxSessionTimeout = msOr(v, 0)
		}
		(*m).cfg = cfg
	case "join":
		ja := joinArgs{group: groupID, memberID: a["member"], instanceID: a["instance"], clientID: a["client"], clientHost: "/127.0.0.1",
			protocolType: "consumer", sessionTimeout: msOr(a["session"], 10000), rebalanceTimeout: msOr(a["rebalance"], 30000),
			requireKnownMemberID: atoiOr(a["v"], 9) >= 4, skipAssignment: atoiOr(a["v"], 9) >= 9}
		if t, ok := a["type"]; ok {
			ja.protocolType = t
		}
		protos := a["protocols"]
		if protos == "" {
			protos = "range:t"
		}
		for _, p := range strings.Split(protos, ",") {
			n, md, _ := strings.Cut(p, ":")
			ja.protocols = append(ja.protocols, groupProtocol{name: n, metadata: []byte(md)})
		}
		label := a["member"]
		if label == "" {
			label = a["client"] + "(new)"
		}
		(*m).join(ja, e.joinDone(label))
	case "sync":
		sa := syncArgs{group: groupID, memberID: a["member"], instanceID: a["instance"], generation: int32(atoiOr(a["gen"], 0)), assignments: map[string][]byte{}}
		if as := a["assign"]; as != "" {
			for _, p := range strings.Split(as, ",") {
				id, v, _ := strings.Cut(p, ":")
				sa.assignments[id] = []byte(v)
			}
		}
		label := a["member"]
		(*m).sync(sa, func(r syncResult) {
			fmt.Fprintf(e.out, "sync %s: %s", label, errName(r.err))
			if r.err == nil {
				fmt.Fprintf(e.out, " assignment=%q", r.assignment)
			}
			e.out.WriteString("\n")
		})
	case "heartbeat":
		err := (*m).heartbeat(groupID, a["member"], a["instance"], int32(atoiOr(a["gen"], 0)))
		fmt.Fprintf(e.out, "heartbeat %s: %s\n", a["member"], errName(err))
	case "leave":
		top, per := (*m).leave(groupID, []leaveMember{{memberID: a["member"], instanceID: a["instance"]}})
		if top != nil {
			fmt.Fprintf(e.out, "leave: %s\n", errName(top))
		} else {
			fmt.Fprintf(e.out, "leave %s: %s\n", a["member"], errName(per[0]))
		}
	case "commit":
		ca := offsetCommitArgs{group: groupID, memberID: a["member"], instanceID: a["instance"], generation: int32(atoiOr(a["gen"], -1))}
		for _, o := range strings.Split(a["offsets"], ",") {
			f := strings.Split(o, ":")
			ca.items = append(ca.items, offsetCommitItem{topic: f[0], partition: int32(atoiOr(f[1], 0)), offset: int64(atoiOr(f[2], 0)), leaderEpoch: -1, metadata: "m", expireTime: -1})
		}
		(*m).commitOffsets(ca, func(errs []*kerr.Error) {
			var s []string
			for _, err := range errs {
				s = append(s, errName(err))
			}
			fmt.Fprintf(e.out, "commit: %s\n", strings.Join(s, " "))
		})
	case "fetch":
		topics := map[string][]int32{}
		var order []string
		for _, tp := range strings.Split(a["topics"], ",") {
			t, p, _ := strings.Cut(tp, ":")
			if _, ok := topics[t]; !ok {
				order = append(order, t)
			}
			topics[t] = append(topics[t], int32(atoiOr(p, 0)))
		}
		for _, f := range (*m).fetchOffsets(groupID, topics, order) {
			fmt.Fprintf(e.out, "offset %s/%d: %d %q\n", f.topic, f.partition, f.offset, f.metadata)
		}
	case "advance":
		e.advance(msOr(fields[1], 0))
	case "persist":
		e.persistErr = nil
		if fields[1] == "fail" {
			e.persistErr = kerr.NotEnoughReplicas
		}
	case "expire":
		(*m).ExpireOffsets()
	case "reload":
		// Replay what was persisted into a fresh manager (a broker restart).
		nm := NewManager(e, (*m).cfg)
		for _, r := range e.records {
			if err := nm.LoadRecord(r.Key, r.Value); err != nil {
				fmt.Fprintf(e.out, "reload: %v\n", err)
			}
		}
		nm.FinishLoad()
		for _, t := range e.timers {
			t.stopped = true // the old manager's timers die with it
		}
		nm.FinishLoad()
		*m = nm
	case "state":
		g := (*m).groups[groupID]
		if g == nil {
			e.out.WriteString("no group\n")
			return
		}
		fmt.Fprintf(e.out, "state=%s gen=%d proto=%s leader=%s\n", g.state, g.generation, g.protocolName, g.leader)
		for _, mem := range g.sortedMembers() {
			extra := ""
			if mem.instanceID != "" {
				extra += " instance=" + mem.instanceID
			}
			if mem.joinDone != nil {
				extra += " awaiting-join"
			}
			if mem.syncDone != nil {
				extra += " awaiting-sync"
			}
			fmt.Fprintf(e.out, "  member %s assignment=%q%s\n", mem.id, mem.assignment, extra)
		}
		var pend []string
		for id := range g.pending {
			pend = append(pend, id)
		}
		sort.Strings(pend)
		if len(pend) > 0 {
			fmt.Fprintf(e.out, "  pending %s\n", strings.Join(pend, " "))
		}
	default:
		panic(fmt.Sprintf("unknown command %q", cmd))
	}
}

// groupScript is the scripttest.Env of one group script.
type groupScript struct {
	env *fakeGroupEnv
	m   *Manager
	out *strings.Builder
}

func (g *groupScript) Exec(_ *testing.T, line string) { runGroupCommand(g.env, &g.m, line) }

func (g *groupScript) Output() string { s := g.out.String(); g.out.Reset(); return s }

func TestGroupScripts(t *testing.T) {
	scripttest.Run(t, filepath.Join("testdata", "*.txt"), func(*testing.T) scripttest.Env {
		out := &strings.Builder{}
		env := &fakeGroupEnv{t: time.UnixMilli(1_700_000_000_000), ids: map[string]int{}, out: out}
		cfg := DefaultConfig()
		cfg.initialRebalanceDelay = 0
		return &groupScript{env: env, m: NewManager(env, cfg), out: out}
	})
}

func TestGroupPartition(t *testing.T) {
	// Values from Java: "".hashCode() == 0, "a".hashCode() == 97,
	// "group".hashCode() == 98629247, "polygenelubricants".hashCode() == Integer.MIN_VALUE.
	for _, tc := range []struct {
		id   string
		hash int32
		part int32
	}{
		{"", 0, 0},
		{"a", 97, 47},
		{"group", 98629247, 47},
		{"polygenelubricants", -1 << 31, 0},
	} {
		if h := javaStringHashCode(tc.id); h != tc.hash {
			t.Errorf("javaStringHashCode(%q) = %d, want %d", tc.id, h, tc.hash)
		}
		if p := PartitionFor(tc.id, 50); p != tc.part {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", tc.id, p, tc.part)
		}
	}
}
