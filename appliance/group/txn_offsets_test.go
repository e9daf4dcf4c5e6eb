package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestGroupTxnOffsets: transactional offsets are pending (and unstable)
// until the marker; a commit makes them visible, an abort drops them, and
// a replay of the log does the same.
func TestGroupTxnOffsets(t *testing.T) {
	env := &fakeGroupEnv{t: time.UnixMilli(1_700_000_000_000), ids: map[string]int{}, out: &strings.Builder{}}
	m := NewManager(env, DefaultConfig())
	commit := func(pid int64, off int64) {
		m.txnCommitOffsets(offsetCommitArgs{group: "g", generation: -1, pid: pid, items: []offsetCommitItem{{topic: "t", partition: 0, offset: off, leaderEpoch: -1}}},
			func(errs []*kerr.Error) {
				if errs[0] != nil {
					t.Fatalf("txn commit: %v", errs[0])
				}
			})
	}
	fetch := func() int64 { return m.fetchOffsets("g", map[string][]int32{"t": {0}}, []string{"t"})[0].offset }
	commit(1, 10)
	if fetch() != -1 || !m.unstableOffset("g", groupTP{"t", 0}) {
		t.Fatalf("pending offset visible (%d) or not unstable", fetch())
	}
	m.CompleteTxn(1, true)
	if fetch() != 10 || m.unstableOffset("g", groupTP{"t", 0}) {
		t.Fatalf("after commit: %d", fetch())
	}
	commit(2, 20)
	m.CompleteTxn(2, false)
	if fetch() != 10 {
		t.Fatalf("after abort: %d", fetch())
	}
	// Replay: commit(1,10) applied, abort(2) dropped.
	nm := NewManager(env, DefaultConfig())
	for i, r := range env.records {
		pid := int64(1)
		if i == 1 {
			pid = 2
		}
		if err := nm.LoadTxnRecord(pid, r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
		nm.LoadTxnMarker(pid, []byte{0, 0, 0, byte(2 - pid)})
	}
	if o := nm.fetchOffsets("g", map[string][]int32{"t": {0}}, []string{"t"})[0].offset; o != 10 {
		t.Fatalf("replayed offset %d, want 10", o)
	}
}
