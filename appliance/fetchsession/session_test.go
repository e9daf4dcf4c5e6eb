package fetchsession

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func part(topic string, p int32, off int64) Part {
	return Part{Key: Key{Topic: topic, Partition: p}, FetchOffset: off, MaxBytes: 1 << 20, LeaderEpoch: -1, LastFetchedEpoch: -1, HW: 10, LSO: 10, LogStart: 0}
}

func keys(c *Cache, s *Session) []Key {
	var ks []Key
	c.Each(s, func(_ int, p *Part) { ks = append(ks, p.Key) })
	return ks
}

func TestSessionMetadataTable(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCache(10, 1)
	if k, s, code := c.Begin(0, -1, now); k != Sessionless || s != nil || code != 0 {
		t.Fatalf("0/-1: %v %v %d", k, s, code)
	}
	if k, _, code := c.Begin(0, 0, now); k != Full || code != 0 {
		t.Fatalf("0/0: %v %d", k, code)
	}
	id := c.Create([]Part{part("a", 0, 5), part("a", 1, 7)}, false, now)
	if id <= 0 {
		t.Fatalf("Create: id %d", id)
	}
	if _, _, code := c.Begin(id, 2, now); code != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 2 on a new session: code %d, want 71", code)
	}
	if _, _, code := c.Begin(id+1, 1, now); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown id: code %d, want 70", code)
	}
	k, s, code := c.Begin(id, 1, now)
	if k != Incremental || s == nil || code != 0 {
		t.Fatalf("id/1: %v %v %d", k, s, code)
	}
	// A retry of epoch 1 after it was accepted is a stale epoch.
	if _, _, code := c.Begin(id, 1, now); code != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 1 twice: code %d, want 71", code)
	}
	if _, s2, code := c.Begin(id, 2, now); s2 != s || code != 0 {
		t.Fatalf("epoch 2: %v %d", s2, code)
	}
	// ID/0 closes it (and is a full fetch); ID/-1 too.
	if k, _, _ := c.Begin(id, 0, now); k != Full || c.Get(id) != nil {
		t.Fatalf("id/0 did not close the session")
	}
	id2 := c.Create([]Part{part("a", 0, 0)}, false, now)
	if k, _, _ := c.Begin(id2, -1, now); k != Sessionless || c.Get(id2) != nil {
		t.Fatalf("id/-1 did not close the session")
	}
	if _, _, code := c.Begin(id2, 1, now); code != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: code %d, want 70", code)
	}
}

func TestUpdateKeepsTopicsTogether(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCache(10, 1)
	id := c.Create([]Part{part("a", 0, 0), part("b", 0, 0), part("a", 1, 0)}, false, now)
	_, s, _ := c.Begin(id, 1, now)
	// a/1 came in after b in the full request; a new a/2 goes after a's last.
	c.Update(s, []Part{part("a", 2, 3), part("c", 0, 1), part("b", 0, 42)}, []Key{{Topic: "a", Partition: 0}, {Topic: "zz", Partition: 9}})
	got := keys(c, s)
	want := []Key{{Topic: "b", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "a", Partition: 2}, {Topic: "c", Partition: 0}}
	if len(got) != len(want) {
		t.Fatalf("parts %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("parts %v, want %v", got, want)
		}
	}
	c.Each(s, func(i int, p *Part) {
		switch p.Key {
		case Key{Topic: "b", Partition: 0}:
			if p.FetchOffset != 42 || p.HW != 10 {
				t.Errorf("b/0 after update: offset %d hw %d (the cached answer must stay)", p.FetchOffset, p.HW)
			}
		case Key{Topic: "c", Partition: 0}:
			if p.HW != -1 || p.LSO != -1 || p.LogStart != -1 {
				t.Errorf("a new partition must be answered the first time: %+v", p)
			}
		}
	})
}

func TestAnsweredOnlyChanges(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCache(10, 1)
	id := c.Create([]Part{part("a", 0, 0)}, false, now)
	_, s, _ := c.Begin(id, 1, now)
	cases := []struct {
		name        string
		records     bool
		err         int16
		hw, lso, ls int64
		want        bool
	}{
		{"unchanged", false, 0, 10, 10, 0, false},
		{"records", true, 0, 10, 10, 0, true},
		{"hw moved", false, 0, 11, 10, 0, true},
		{"unchanged again", false, 0, 11, 10, 0, false},
		{"lso moved", false, 0, 11, 11, 0, true},
		{"log start moved", false, 0, 11, 11, 3, true},
		{"error", false, kerr.NotLeaderForPartition.Code, 11, 11, 3, true},
		{"quiet", false, 0, 11, 11, 3, false},
	}
	for _, tc := range cases {
		if got := c.Answered(s, 0, tc.records, tc.err, tc.hw, tc.lso, tc.ls); got != tc.want {
			t.Errorf("%s: Answered %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEvictionRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := NewCache(2, 1)
	small := c.Create([]Part{part("a", 0, 0)}, false, t0)
	big := c.Create([]Part{part("a", 0, 0), part("a", 1, 0), part("a", 2, 0)}, false, t0)
	if small == 0 || big == 0 {
		t.Fatal("slots free, no session")
	}
	// Full, both young: a consumer cannot evict.
	if id := c.Create([]Part{part("b", 0, 0), part("b", 1, 0)}, false, t0.Add(time.Second)); id != 0 {
		t.Fatal("a young session was evicted")
	}
	// A follower evicts a consumer session (the smaller).
	f := c.Create([]Part{part("b", 0, 0)}, true, t0.Add(2*time.Second))
	if f == 0 || c.Get(small) != nil || c.Get(big) == nil {
		t.Fatalf("follower session %d; small kept %v, big kept %v", f, c.Get(small) != nil, c.Get(big) != nil)
	}
	// Past the eviction time, a consumer with more partitions evicts an
	// older consumer session with fewer; not one with as many.
	later := t0.Add(EvictionTime + 3*time.Second)
	c.Begin(big, 1, later.Add(-time.Second)) // big used recently: not stale
	c.Begin(f, 1, later.Add(-time.Second))   // the follower too
	if id := c.Create([]Part{part("c", 0, 0), part("c", 1, 0), part("c", 2, 0)}, false, later); id != 0 {
		t.Fatal("evicted a session with as many partitions")
	}
	id := c.Create([]Part{part("c", 0, 0), part("c", 1, 0), part("c", 2, 0), part("c", 3, 0)}, false, later)
	if id == 0 || c.Get(big) != nil || c.Get(f) == nil {
		t.Fatalf("bigger new session %d: big kept %v, follower kept %v", id, c.Get(big) != nil, c.Get(f) != nil)
	}
	// A session unused for the eviction time goes first, whatever its size.
	stale := later.Add(EvictionTime)
	c.Begin(id, 1, stale.Add(-time.Second))
	if n := c.Create([]Part{part("d", 0, 0)}, false, stale); n == 0 || c.Get(f) != nil || c.Get(id) == nil {
		t.Fatalf("stale follower session not evicted: new %d", n)
	}
	if st := c.Stats(); st.Sessions != 2 || st.Evictions != 3 || st.Partitions != 5 {
		t.Fatalf("stats %+v", st)
	}
	// No slots: no sessions at all.
	if id := NewCache(0, 1).Create([]Part{part("a", 0, 0)}, false, t0); id != 0 {
		t.Fatal("a cache of 0 slots created a session")
	}
}
