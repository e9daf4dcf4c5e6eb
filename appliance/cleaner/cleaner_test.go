package cleaner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ringbroker/ringbroker/nvme"
)

func TestCheckpointsRoundTrip(t *testing.T) {
	id := [16]byte{1, 2, 3}
	states := map[name]entry{
		{Topic: "b", Partition: 10}: {id: id, state: nvme.CleanerState{FirstDirty: 7, Points: []nvme.CleanPoint{{EndOffset: 5, CleanedMs: 100}, {EndOffset: 7, CleanedMs: 200}}}},
		{Topic: "b", Partition: 2}:  {id: id, state: nvme.CleanerState{FirstDirty: 3}},
		{Topic: "a", Partition: 0}:  {state: nvme.CleanerState{FirstDirty: 1}},
	}
	offs, hor := encodeCheckpoints(states)
	if want := "0\n3\na 0 1\nb 2 3\nb 10 7\n"; string(offs) != want {
		t.Fatalf("offset checkpoint %q, want %q", offs, want)
	}
	if !strings.Contains(string(hor), "b 10 AQIDAAAAAAAAAAAAAAAAAA 5:100,7:200\n") {
		t.Fatalf("horizon checkpoint %q", hor)
	}
	got := parseCheckpoints(bytes.NewReader(offs), bytes.NewReader(hor))
	if !reflect.DeepEqual(got, states) {
		t.Fatalf("parsed %+v, want %+v", got, states)
	}
	// A horizon line for a partition the offset file lacks is dropped,
	// and so are malformed lines.
	got = parseCheckpoints(strings.NewReader("0\n2\nx 0 5\nx y 1\n"), strings.NewReader("0\n2\nz 0 AQ 1:2\nx 0 bad 3:4,junk\n"))
	want := map[name]entry{{Topic: "x", Partition: 0}: {state: nvme.CleanerState{FirstDirty: 5, Points: []nvme.CleanPoint{{EndOffset: 3, CleanedMs: 4}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
}

func FuzzParseCheckpoints(f *testing.F) {
	offs, hor := encodeCheckpoints(map[name]entry{{Topic: "t", Partition: 1}: {id: [16]byte{9}, state: nvme.CleanerState{FirstDirty: 4, Points: []nvme.CleanPoint{{EndOffset: 4, CleanedMs: 9}}}}})
	f.Add(offs, hor)
	f.Add([]byte("0\n1\nt 0 -1\n"), []byte("0\n1\nt 0 AAAAAAAAAAAAAAAAAAAAAA 1:1,2:x\n"))
	f.Add([]byte(""), []byte("\n\n\n"))
	f.Fuzz(func(t *testing.T, o, h []byte) {
		got := parseCheckpoints(bytes.NewReader(o), bytes.NewReader(h))
		// Whatever parsed encodes and parses back to itself (topic names
		// without spaces, as the fields split them).
		o2, h2 := encodeCheckpoints(got)
		again := parseCheckpoints(bytes.NewReader(o2), bytes.NewReader(h2))
		for n, e := range got {
			if len(e.state.Points) == 0 {
				e.state.Points = nil
			}
			got[n] = e
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("round trip: %+v, then %+v", got, again)
		}
	})
}

// fakeLog is a Log whose cleanability is fixed; PrepareClean records the
// call and returns no job.
type fakeLog struct {
	c        nvme.Cleanable
	prepared *[]string
	topic    string
	mu       *sync.Mutex
}

func (l fakeLog) Cleanable(nvme.CleanerState, nvme.CleanConfig) nvme.Cleanable { return l.c }

func (l fakeLog) PrepareClean(nvme.CleanerState, nvme.CleanConfig) (*nvme.CleanJob, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.prepared = append(*l.prepared, l.topic)
	if l.topic == "fails" {
		return nil, errors.New("disk on fire")
	}
	return nil, nil
}

func (l fakeLog) CommitClean(*nvme.CleanJob) (nvme.CleanerState, error) {
	return nvme.CleanerState{}, errors.New("not reached")
}

// fakeHost has one partition per topic, topic i on shard i%2.
type fakeHost struct {
	topics   []string
	ids      map[string][16]byte
	configs  map[string]map[string]string
	clean    map[string]nvme.Cleanable
	prepared []string
	mu       sync.Mutex
}

func (h *fakeHost) Shards() int { return 2 }

func (h *fakeHost) part(topic string) Partition {
	return Partition{Key: Key{TopicID: h.ids[topic]}, Topic: topic,
		Log: fakeLog{c: h.clean[topic], prepared: &h.prepared, topic: topic, mu: &h.mu}}
}

func (h *fakeHost) Compacted(shard int, fn func(Partition)) {
	for i, tp := range h.topics {
		if i%2 == shard {
			fn(h.part(tp))
		}
	}
}

func (h *fakeHost) OnPartition(shard int, k Key, fn func(*Partition)) {
	for i, tp := range h.topics {
		if i%2 == shard && h.ids[tp] == k.TopicID {
			p := h.part(tp)
			fn(&p)
			return
		}
	}
	fn(nil)
}

func (h *fakeHost) TopicConfigs(topic string) (map[string]string, bool) {
	m, ok := h.configs[topic]
	return m, ok
}

func (h *fakeHost) TopicID(topic string) ([16]byte, bool) {
	id, ok := h.ids[topic]
	return id, ok
}

// TestCleanOnePicks checks the choice of a pass: a forced partition
// (max.compaction.lag.ms) before the dirtiest, the dirtiest before the
// others, never a topic that is not compacted or not due, and a failed
// pass counts an error.
func TestCleanOnePicks(t *testing.T) {
	compact := map[string]string{"cleanup.policy": "compact"}
	h := &fakeHost{
		topics: []string{"dirty", "forced", "notdue", "deleteonly", "fails"},
		ids:    map[string][16]byte{"dirty": {1}, "forced": {2}, "notdue": {3}, "deleteonly": {4}, "fails": {5}},
		configs: map[string]map[string]string{"dirty": compact, "forced": compact, "notdue": compact,
			"deleteonly": {"cleanup.policy": "delete"}, "fails": compact},
		clean: map[string]nvme.Cleanable{"dirty": {Needed: true, Ratio: 0.9}, "forced": {Needed: true, Forced: true, Ratio: 0.1},
			"notdue": {Ratio: 0.99}, "deleteonly": {Needed: true, Ratio: 1}, "fails": {Needed: true, Ratio: 0.5}},
	}
	c := New(h, Options{Config: DefaultConfig(), LogDir: t.TempDir()})
	for i := 0; i < 3; i++ {
		if !c.cleanOne() {
			t.Fatalf("pass %d: nothing cleaned", i)
		}
		// Each pass found no job: make the partition clean so the next
		// pass picks the next one.
		h.clean[h.prepared[len(h.prepared)-1]] = nvme.Cleanable{}
	}
	if c.cleanOne() {
		t.Fatalf("a fourth pass ran: %v", h.prepared)
	}
	if want := []string{"forced", "dirty", "fails"}; !reflect.DeepEqual(h.prepared, want) {
		t.Fatalf("passes over %v, want %v", h.prepared, want)
	}
	if n := c.o.Metrics.GetOrCreateCounter("ringbroker_log_cleaner_errors_total").Get(); n != 1 {
		t.Fatalf("errors counted %d, want 1", n)
	}
	if len(c.busy) != 0 {
		t.Fatalf("busy after the passes: %v", c.busy)
	}
}

// TestNewDropsRecreatedTopics checks that checkpointed states of a topic
// that is gone, or was created again under its name, are dropped, and
// that a state with no topic id is kept.
func TestNewDropsRecreatedTopics(t *testing.T) {
	dir := t.TempDir()
	offs, hor := encodeCheckpoints(map[name]entry{
		{Topic: "same", Partition: 0}:  {id: [16]byte{1}, state: nvme.CleanerState{FirstDirty: 10}},
		{Topic: "again", Partition: 0}: {id: [16]byte{2}, state: nvme.CleanerState{FirstDirty: 20}},
		{Topic: "gone", Partition: 0}:  {id: [16]byte{3}, state: nvme.CleanerState{FirstDirty: 30}},
		{Topic: "noid", Partition: 0}:  {state: nvme.CleanerState{FirstDirty: 40}},
	})
	for file, body := range map[string][]byte{OffsetCheckpoint: offs, HorizonCheckpoint: hor} {
		if err := os.WriteFile(filepath.Join(dir, file), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := &fakeHost{ids: map[string][16]byte{"same": {1}, "again": {9}, "noid": {4}}}
	c := New(h, Options{Config: DefaultConfig(), LogDir: dir})
	if got := c.stateOf(name{Topic: "same", Partition: 0}, [16]byte{1}).FirstDirty; got != 10 {
		t.Errorf("same topic: first dirty %d, want 10", got)
	}
	if got := c.stateOf(name{Topic: "noid", Partition: 0}, [16]byte{4}).FirstDirty; got != 40 {
		t.Errorf("state without an id: first dirty %d, want 40", got)
	}
	if len(c.states) != 2 {
		t.Errorf("states %+v, want same and noid only", c.states)
	}
	// Written back, the files hold what survived.
	c.writeCheckpoints()
	got := readCheckpoints(dir)
	if len(got) != 2 || got[name{Topic: "same", Partition: 0}].id != [16]byte{1} {
		t.Errorf("rewritten checkpoints %+v", got)
	}
}
