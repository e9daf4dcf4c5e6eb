package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// toolBuilds holds the tools built once per test binary run (ringctl,
// ringdump), next to the broker binary.
var toolBuilds struct {
	mu   sync.Mutex
	bins map[string]string
}

// toolBinary builds ./tools/<name> once and returns its path.
func toolBinary(t testing.TB, name string) string {
	t.Helper()
	_, root := brokerBinary(t)
	toolBuilds.mu.Lock()
	defer toolBuilds.mu.Unlock()
	if p, ok := toolBuilds.bins[name]; ok {
		return p
	}
	dir := buildState.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "ringbroker-it-tools-"); err != nil {
			t.Fatalf("cannot create build directory: %v", err)
		}
		buildState.dir = dir
	}
	bin := filepath.Join(dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./tools/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build ./tools/%s: %v\n%s", name, err, out)
	}
	if toolBuilds.bins == nil {
		toolBuilds.bins = map[string]string{}
	}
	toolBuilds.bins[name] = bin
	return bin
}

// cliResult is one run of a command-line tool.
type cliResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runTool runs bin with args (and stdin) and returns its exit status and
// output; it fails the test only if the tool cannot be run or hangs.
func runCLI(t testing.TB, bin, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "RINGCTL_BROKERS=")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Stdin = strings.NewReader(stdin)
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: so.String(), stderr: se.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v (after %v)\nstdout: %s\nstderr: %s", filepath.Base(bin), args, err, r.took, r.stdout, r.stderr)
	}
	return r
}

// ringctl runs ringctl against b and checks the exit status.
func ringctl(t *testing.T, b *Broker, wantCode int, stdin string, args ...string) cliResult {
	t.Helper()
	bin := toolBinary(t, "ringctl")
	r := runCLI(t, bin, stdin, append([]string{"-b", b.Addr}, args...)...)
	if r.code != wantCode {
		t.Fatalf("ringctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, wantCode, r.stdout, r.stderr)
	}
	return r
}

func ringctlJSON(t *testing.T, b *Broker, v any, args ...string) {
	t.Helper()
	r := ringctl(t, b, 0, "", append(args, "--json")...)
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("ringctl %s --json: cannot decode %q: %v", strings.Join(args, " "), r.stdout, err)
	}
}

func TestRingctlTopics(t *testing.T) {
	b := startBroker(t, "")

	r := ringctl(t, b, 0, "", "topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=3600000")
	if !strings.Contains(r.stdout, "created topic orders") {
		t.Errorf("topic create printed %q", r.stdout)
	}
	// The id is printed as Kafka prints it, the form in partition.metadata
	// and the broker's log (URL-safe base64 without padding).
	if pm, err := os.ReadFile(filepath.Join(b.DataDir, "orders-0", "partition.metadata")); err != nil {
		t.Errorf("read partition.metadata: %v", err)
	} else if _, id, _ := strings.Cut(strings.TrimSpace(string(pm)), "topic_id: "); id == "" || !strings.Contains(r.stdout, "(id "+id+",") {
		t.Errorf("topic create printed %q; partition.metadata has %q", r.stdout, pm)
	}
	// Errors name the Kafka code, say what to do, and exit 1.
	r = ringctl(t, b, 1, "", "topic", "create", "orders")
	if !strings.Contains(r.stderr, "TOPIC_ALREADY_EXISTS (36)") {
		t.Errorf("duplicate create: stderr %q lacks TOPIC_ALREADY_EXISTS (36)", r.stderr)
	}
	r = ringctl(t, b, 1, "", "topic", "create", "bad/name")
	if !strings.Contains(r.stderr, "INVALID_TOPIC_EXCEPTION (17)") {
		t.Errorf("bad name: stderr %q lacks INVALID_TOPIC_EXCEPTION (17)", r.stderr)
	}

	var list []struct {
		Topic      string `json:"topic"`
		Partitions int    `json:"partitions"`
	}
	ringctlJSON(t, b, &list, "topic", "list")
	if len(list) != 1 || list[0].Topic != "orders" || list[0].Partitions != 3 {
		t.Errorf("topic list --json = %+v, want orders with 3 partitions", list)
	}
	r = ringctl(t, b, 0, "", "topic", "list")
	if !strings.Contains(r.stdout, "TOPIC") || !strings.Contains(r.stdout, "orders") {
		t.Errorf("topic list table: %q", r.stdout)
	}

	// Produce from arguments and from stdin, then consume everything.
	ringctl(t, b, 0, "", "produce", "orders", "--partition", "0", "one", "two")
	ringctl(t, b, 0, "three\nfour\nfive\n", "produce", "orders", "--partition", "1", "--key", "k")
	r = ringctl(t, b, 0, "", "consume", "orders")
	got := strings.Fields(r.stdout)
	if len(got) != 5 {
		t.Errorf("consume printed %q, want the 5 values", r.stdout)
	}
	r = ringctl(t, b, 0, "", "consume", "orders", "--partition", "1", "-n", "2", "--json")
	var recs []map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("consume --json: %v in %q", err, r.stdout)
		}
		recs = append(recs, m)
	}
	if len(recs) != 2 || recs[0]["value"] != "three" || recs[1]["value"] != "four" || recs[0]["key"] != "k" {
		t.Errorf("consume -n 2 --json = %v, want three and four with key k", recs)
	}

	var desc []struct {
		Topic      string            `json:"topic"`
		Configs    map[string]string `json:"configs"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
			End       int64 `json:"log_end_offset"`
		} `json:"partitions"`
	}
	ringctlJSON(t, b, &desc, "topic", "describe", "orders")
	if len(desc) != 1 || len(desc[0].Partitions) != 3 {
		t.Fatalf("topic describe --json = %+v", desc)
	}
	if desc[0].Partitions[0].End != 2 || desc[0].Partitions[1].End != 3 || desc[0].Partitions[0].Leader != 1 {
		t.Errorf("describe partitions = %+v, want end offsets 2 and 3, leader 1", desc[0].Partitions)
	}
	if desc[0].Configs["retention.ms"] != "3600000" {
		t.Errorf("describe configs = %v, want retention.ms=3600000", desc[0].Configs)
	}
	r = ringctl(t, b, 0, "", "topic", "describe", "orders")
	if !strings.Contains(r.stdout, "PARTITION") || !strings.Contains(r.stdout, "retention.ms=3600000") {
		t.Errorf("describe table: %q", r.stdout)
	}

	ringctl(t, b, 0, "", "topic", "alter-config", "orders", "--set", "retention.ms=7200000", "--delete", "retention.bytes")
	ringctlJSON(t, b, &desc, "topic", "describe", "orders")
	if desc[0].Configs["retention.ms"] != "7200000" {
		t.Errorf("after alter-config: configs %v, want retention.ms=7200000", desc[0].Configs)
	}
	r = ringctl(t, b, 1, "", "topic", "alter-config", "orders", "--set", "no.such.config=1")
	if !strings.Contains(r.stderr, "INVALID_CONFIG (40)") {
		t.Errorf("bad config: stderr %q lacks INVALID_CONFIG (40)", r.stderr)
	}

	r = ringctl(t, b, 0, "", "topic", "add-partitions", "orders", "--partitions", "5")
	if !strings.Contains(r.stdout, "5 partitions") {
		t.Errorf("add-partitions printed %q", r.stdout)
	}
	ringctl(t, b, 0, "", "topic", "add-partitions", "orders", "--add", "1")
	r = ringctl(t, b, 1, "", "topic", "add-partitions", "orders", "--partitions", "2")
	if !strings.Contains(r.stderr, "INVALID_PARTITIONS (37)") {
		t.Errorf("shrinking: stderr %q lacks INVALID_PARTITIONS (37)", r.stderr)
	}

	// Unknown topics: every command that names one says so with code 3.
	for _, args := range [][]string{
		{"topic", "describe", "nope"},
		{"topic", "delete", "nope"},
		{"topic", "alter-config", "nope", "--set", "retention.ms=1"},
		{"topic", "add-partitions", "nope", "--add", "1"},
		{"produce", "nope", "x"},
		{"consume", "nope"},
	} {
		r := ringctl(t, b, 1, "", args...)
		if !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION (3)") || !strings.Contains(r.stderr, "ringctl topic list") {
			t.Errorf("ringctl %v: stderr %q, want UNKNOWN_TOPIC_OR_PARTITION (3) and a hint", args, r.stderr)
		}
	}

	r = ringctl(t, b, 0, "", "topic", "delete", "orders")
	if !strings.Contains(r.stdout, "deleted topic orders") {
		t.Errorf("delete printed %q", r.stdout)
	}
	waitFor(t, 10*time.Second, "orders to disappear from topic list", func() bool {
		ringctlJSON(t, b, &list, "topic", "list")
		return len(list) == 0
	})
}

func TestRingctlClusterBrokersLogDirs(t *testing.T) {
	b := startBroker(t, "")
	ringctl(t, b, 0, "", "topic", "create", "t1", "--partitions", "2")
	ringctl(t, b, 0, "", "produce", "t1", "--partition", "1", "hello")

	var info struct {
		ClusterID  string `json:"cluster_id"`
		Controller int32  `json:"controller"`
		Brokers    []struct {
			NodeID int32 `json:"node_id"`
			Port   int32 `json:"port"`
		} `json:"brokers"`
	}
	ringctlJSON(t, b, &info, "cluster", "info")
	if info.ClusterID == "" || info.Controller != 1 || len(info.Brokers) != 1 || int(info.Brokers[0].Port) != b.Port {
		t.Errorf("cluster info = %+v", info)
	}
	r := ringctl(t, b, 0, "", "cluster", "info")
	if !strings.Contains(r.stdout, "Cluster ID:") || !strings.Contains(r.stdout, info.ClusterID) {
		t.Errorf("cluster info table: %q", r.stdout)
	}
	r = ringctl(t, b, 0, "", "broker", "list")
	if !strings.Contains(r.stdout, fmt.Sprint(b.Port)) || !strings.Contains(r.stdout, "yes") {
		t.Errorf("broker list: %q", r.stdout)
	}

	var dirs []struct {
		Broker     int32  `json:"broker"`
		Dir        string `json:"dir"`
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Size      int64  `json:"size_bytes"`
		} `json:"partitions"`
	}
	ringctlJSON(t, b, &dirs, "log-dirs", "--topic", "t1")
	if len(dirs) != 1 || len(dirs[0].Partitions) != 2 {
		t.Fatalf("log-dirs --topic t1 = %+v", dirs)
	}
	if dirs[0].Partitions[1].Size <= 0 || dirs[0].Partitions[0].Size != 0 {
		t.Errorf("log-dirs sizes = %+v, want partition 1 non-empty, partition 0 empty", dirs[0].Partitions)
	}
	r = ringctl(t, b, 0, "", "log-dirs")
	if !strings.Contains(r.stdout, "t1") {
		t.Errorf("log-dirs table: %q", r.stdout)
	}
	r = ringctl(t, b, 1, "", "log-dirs", "--topic", "nope")
	if !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION (3)") {
		t.Errorf("log-dirs of unknown topic: %q", r.stderr)
	}
}

func TestRingctlGroups(t *testing.T) {
	b := startBroker(t, "")
	ctx := t.Context()
	createTopic(t, ctx, b, "events", 2)
	for p := int32(0); p < 2; p++ {
		ringctl(t, b, 0, "a\nb\nc\nd\ne\n", "produce", "events", "--partition", fmt.Sprint(p))
	}

	// A group member consumes 3 records of partition 0 and commits, then leaves.
	cl := newClient(t, b, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeN(t, ctx, cl, 10, 30*time.Second)
	var commit []*kgo.Record
	for _, r := range got {
		if r.Partition == 0 && r.Offset == 2 {
			commit = append(commit, r)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	if err := cl.CommitRecords(cctx, commit...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cancel()

	// While the member is in the group, describe shows it and reset refuses.
	var desc []struct {
		Group   string `json:"group"`
		State   string `json:"state"`
		Members []struct {
			MemberID string `json:"member_id"`
		} `json:"members"`
		Offsets []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Committed int64  `json:"committed_offset"`
			End       int64  `json:"log_end_offset"`
			Lag       int64  `json:"lag"`
		} `json:"offsets"`
		TotalLag int64 `json:"total_lag"`
	}
	ringctlJSON(t, b, &desc, "group", "describe", "billing")
	if len(desc) != 1 || desc[0].State != "Stable" || len(desc[0].Members) != 1 {
		t.Fatalf("group describe while consuming = %+v, want Stable with one member", desc)
	}
	r := ringctl(t, b, 1, "", "group", "reset-offsets", "billing", "--topic", "events", "--to-earliest")
	if !strings.Contains(r.stderr, "stop its consumers first") {
		t.Errorf("reset of an active group: %q", r.stderr)
	}
	cl.Close()

	waitFor(t, 20*time.Second, "group billing to become Empty", func() bool {
		ringctlJSON(t, b, &desc, "group", "describe", "billing")
		return len(desc) == 1 && desc[0].State == "Empty"
	})
	lagOf := func(p int32) (committed, end, lag int64) {
		for _, o := range desc[0].Offsets {
			if o.Topic == "events" && o.Partition == p {
				return o.Committed, o.End, o.Lag
			}
		}
		t.Fatalf("group describe has no offsets for events-%d: %+v", p, desc[0].Offsets)
		return
	}
	if c, e, l := lagOf(0); c != 3 || e != 5 || l != 2 {
		t.Errorf("events-0: committed %d end %d lag %d, want 3 5 2", c, e, l)
	}

	var groups []struct {
		Group string `json:"group"`
		State string `json:"state"`
	}
	ringctlJSON(t, b, &groups, "group", "list")
	if len(groups) != 1 || groups[0].Group != "billing" {
		t.Errorf("group list = %+v, want billing", groups)
	}
	r = ringctl(t, b, 0, "", "group", "list")
	if !strings.Contains(r.stdout, "billing") {
		t.Errorf("group list table: %q", r.stdout)
	}
	r = ringctl(t, b, 0, "", "group", "describe", "billing")
	if !strings.Contains(r.stdout, "LAG") || !strings.Contains(r.stdout, "events") {
		t.Errorf("group describe table: %q", r.stdout)
	}

	// Reset: dry run changes nothing; then to latest, earliest and an offset.
	r = ringctl(t, b, 0, "", "group", "reset-offsets", "billing", "--topic", "events", "--to-latest", "--dry-run")
	if !strings.Contains(r.stdout, "dry run") {
		t.Errorf("dry run printed %q", r.stdout)
	}
	ringctlJSON(t, b, &desc, "group", "describe", "billing")
	if c, _, _ := lagOf(0); c != 3 {
		t.Errorf("after dry run committed %d, want 3", c)
	}
	ringctl(t, b, 0, "", "group", "reset-offsets", "billing", "--topic", "events", "--to-latest")
	ringctlJSON(t, b, &desc, "group", "describe", "billing")
	if desc[0].TotalLag != 0 {
		t.Errorf("after --to-latest total lag %d, want 0: %+v", desc[0].TotalLag, desc[0].Offsets)
	}
	ringctl(t, b, 0, "", "group", "reset-offsets", "billing", "--topic", "events", "--to-earliest")
	ringctlJSON(t, b, &desc, "group", "describe", "billing")
	if desc[0].TotalLag != 10 {
		t.Errorf("after --to-earliest total lag %d, want 10", desc[0].TotalLag)
	}
	ringctl(t, b, 0, "", "group", "reset-offsets", "billing", "--topic", "events", "--partition", "1", "--to-offset", "4")
	ringctlJSON(t, b, &desc, "group", "describe", "billing")
	if c, _, l := lagOf(1); c != 4 || l != 1 {
		t.Errorf("after --to-offset 4: events-1 committed %d lag %d, want 4 and 1", c, l)
	}
	r = ringctl(t, b, 1, "", "group", "reset-offsets", "billing", "--topic", "nope", "--to-earliest")
	if !strings.Contains(r.stderr, "UNKNOWN_TOPIC_OR_PARTITION (3)") {
		t.Errorf("reset on unknown topic: %q", r.stderr)
	}
	ringctl(t, b, 2, "", "group", "reset-offsets", "billing", "--topic", "events")

	r = ringctl(t, b, 0, "", "group", "delete", "billing")
	if !strings.Contains(r.stdout, "deleted group billing") {
		t.Errorf("group delete printed %q", r.stdout)
	}
	r = ringctl(t, b, 1, "", "group", "describe", "billing")
	if !strings.Contains(r.stderr, "GROUP_ID_NOT_FOUND (69)") {
		t.Errorf("describe of a deleted group: %q", r.stderr)
	}
	r = ringctl(t, b, 1, "", "group", "delete", "billing")
	if !strings.Contains(r.stderr, "GROUP_ID_NOT_FOUND (69)") {
		t.Errorf("delete of a missing group: %q", r.stderr)
	}
}

func TestRingctlUnreachableAndUsage(t *testing.T) {
	bin := toolBinary(t, "ringctl")
	// A port nothing listens on: exit 3, quickly, with a clear message.
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	for _, args := range [][]string{
		{"-b", addr, "topic", "list"},
		{"--brokers=" + addr, "cluster", "info", "--json"},
		{"-b", addr, "group", "list"},
		{"-b", addr, "produce", "t", "x"},
	} {
		r := runCLI(t, bin, "", args...)
		if r.code != 3 {
			t.Errorf("ringctl %v: exit %d, want 3\nstderr: %s", args, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "cannot reach broker") {
			t.Errorf("ringctl %v: stderr %q lacks \"cannot reach broker\"", args, r.stderr)
		}
		if r.took > 10*time.Second {
			t.Errorf("ringctl %v took %v, want under 10s", args, r.took)
		}
	}
	// The environment names the broker too.
	cmd := exec.Command(bin, "topic", "list")
	cmd.Env = append(os.Environ(), "RINGCTL_BROKERS="+addr)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), addr) {
		t.Errorf("RINGCTL_BROKERS=%s ringctl topic list: %v %q, want exit 3 naming the address", addr, err, out)
	}
	// Usage errors: 2.
	for _, args := range [][]string{{}, {"frobnicate"}, {"topic"}, {"topic", "explode"}, {"topic", "create"}, {"-b", "nonsense", "topic", "list"},
		{"topic", "create", "x", "--partitons", "3"}, {"topic", "delete"}} {
		if r := runCLI(t, bin, "", args...); r.code != 2 {
			t.Errorf("ringctl %v: exit %d, want 2\nstderr: %s", args, r.code, r.stderr)
		}
	}
	if r := runCLI(t, bin, "", "help"); r.code != 0 || !strings.Contains(r.stdout, "usage: ringctl") {
		t.Errorf("ringctl help: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestRingctlHelpNeverActs runs --help and -h on every command against a real
// broker and checks that the topic list is the same before and after: once
// `topic create --help` created a topic named "help" and `topic delete --help`
// deleted it.
func TestRingctlHelpNeverActs(t *testing.T) {
	b := startBroker(t, "")
	ringctl(t, b, 0, "", "topic", "create", "help", "--partitions", "1")
	ringctl(t, b, 0, "", "topic", "create", "keep", "--partitions", "1")
	list := func() string {
		var rows []struct {
			Topic string `json:"topic"`
		}
		ringctlJSON(t, b, &rows, "topic", "list")
		names := make([]string, 0, len(rows))
		for _, r := range rows {
			names = append(names, r.Topic)
		}
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	before := list()
	if before != "help,keep" {
		t.Fatalf("topic list before = %q, want help,keep", before)
	}
	for _, args := range [][]string{
		{"topic", "create", "--help"}, {"topic", "create", "-h"}, {"topic", "create", "new", "--help"},
		{"topic", "delete", "--help"}, {"topic", "delete", "-h"}, {"topic", "delete", "keep", "--help"},
		{"topic", "add-partitions", "keep", "--add", "2", "--help"}, {"topic", "alter-config", "keep", "--set", "retention.ms=1", "-h"},
		{"topic", "list", "--help"}, {"topic", "describe", "--help"}, {"group", "delete", "--help"},
		{"group", "reset-offsets", "--help"}, {"produce", "keep", "v", "--help"}, {"consume", "--help"},
		{"cluster", "info", "--help"}, {"broker", "list", "-h"}, {"log-dirs", "--help"}, {"help", "topic", "delete"},
	} {
		r := ringctl(t, b, 0, "", args...)
		if !strings.Contains(r.stdout, "usage: ringctl") {
			t.Errorf("ringctl %v: stdout %q lacks the usage", args, r.stdout)
		}
	}
	if after := list(); after != before {
		t.Errorf("topic list after --help on every command = %q, want %q", after, before)
	}
	var desc []struct {
		Partitions []json.RawMessage `json:"partitions"`
	}
	ringctlJSON(t, b, &desc, "topic", "describe", "keep")
	if len(desc) != 1 || len(desc[0].Partitions) != 1 {
		t.Errorf("topic keep after add-partitions --help: %+v, want 1 partition", desc)
	}
}
