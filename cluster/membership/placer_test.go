package membership

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func brokersInRacks(n int, racks ...string) []BrokerInfo {
	out := make([]BrokerInfo, n)
	for i := range out {
		out[i] = BrokerInfo{ID: int32(i + 1)}
		if len(racks) > 0 {
			out[i].Rack = racks[i%len(racks)]
		}
	}
	return out
}

// checkPlacement checks the properties every placement has: rf distinct
// unfenced brokers per partition.
func checkPlacement(t *testing.T, assign [][]int32, parts, rf int, brokers []BrokerInfo) {
	t.Helper()
	fenced := map[int32]bool{}
	known := map[int32]bool{}
	for _, b := range brokers {
		known[b.ID] = true
		fenced[b.ID] = b.Fenced
	}
	if len(assign) != parts {
		t.Fatalf("%d partitions placed, want %d", len(assign), parts)
	}
	for p, replicas := range assign {
		if len(replicas) != rf {
			t.Fatalf("partition %d has %d replicas %v, want %d", p, len(replicas), replicas, rf)
		}
		seen := map[int32]bool{}
		for _, id := range replicas {
			if !known[id] || fenced[id] {
				t.Fatalf("partition %d placed on broker %d (known %t, fenced %t)", p, id, known[id], fenced[id])
			}
			if seen[id] {
				t.Fatalf("partition %d has broker %d twice: %v", p, id, replicas)
			}
			seen[id] = true
		}
	}
}

func TestPlaceLeaderBalance(t *testing.T) {
	for _, c := range []struct {
		brokers, parts, rf int
		racks              []string
	}{
		{3, 12, 1, nil}, {3, 12, 3, nil}, {5, 100, 3, []string{"a", "b", "c"}},
		{6, 600, 2, []string{"a", "b"}}, {6, 300, 3, []string{"a", "b", "c"}}, {7, 50, 3, []string{"a", "b", "c", "d"}}, {4, 3, 2, nil},
	} {
		t.Run(fmt.Sprintf("%db_%dp_rf%d_%dracks", c.brokers, c.parts, c.rf, len(c.racks)), func(t *testing.T) {
			brokers := brokersInRacks(c.brokers, c.racks...)
			assign, err := NewSeededPlacer(42).Place(c.parts, c.rf, brokers)
			if err != nil {
				t.Fatal(err)
			}
			checkPlacement(t, assign, c.parts, c.rf, brokers)
			leads := map[int32]int{}
			replicas := map[int32]int{}
			for _, r := range assign {
				leads[r[0]]++
				for _, id := range r {
					replicas[id]++
				}
			}
			// Each round of N partitions gives every broker one leadership,
			// so counts differ by at most one.
			lo, hi := c.parts/c.brokers, (c.parts+c.brokers-1)/c.brokers
			for _, b := range brokers {
				if n := leads[b.ID]; n < lo || n > hi {
					t.Errorf("broker %d leads %d partitions, want %d..%d (%v)", b.ID, n, lo, hi, leads)
				}
			}
			// Replicas overall are spread within a loose bound where racks
			// are of equal size (with unequal racks, rack spread comes
			// first: a rack of one broker holds a replica of nearly every
			// partition, as in Kafka).
			if c.parts >= 10*c.brokers && (len(c.racks) == 0 || c.brokers%len(c.racks) == 0) {
				avg := c.parts * c.rf / c.brokers
				for _, b := range brokers {
					if n := replicas[b.ID]; n < avg*7/10 || n > avg*13/10 {
						t.Errorf("broker %d holds %d replicas, average %d (%v)", b.ID, n, avg, replicas)
					}
				}
			}
		})
	}
}

func TestPlaceRackSpread(t *testing.T) {
	rackOf := func(brokers []BrokerInfo) map[int32]string {
		m := map[int32]string{}
		for _, b := range brokers {
			m[b.ID] = b.Rack
		}
		return m
	}
	// As many racks as replicas or more: every partition spans rf racks,
	// even with racks of unequal size.
	brokers := []BrokerInfo{{1, "a", false}, {2, "a", false}, {3, "a", false}, {4, "b", false}, {5, "c", false}, {6, "c", false}}
	assign, err := NewSeededPlacer(7).Place(60, 3, brokers)
	if err != nil {
		t.Fatal(err)
	}
	checkPlacement(t, assign, 60, 3, brokers)
	racks := rackOf(brokers)
	for p, r := range assign {
		seen := map[string]bool{}
		for _, id := range r {
			seen[racks[id]] = true
		}
		if len(seen) != 3 {
			t.Fatalf("partition %d replicas %v span racks %v, want 3", p, r, seen)
		}
	}
	// Fewer racks than replicas: every rack is used before one repeats.
	brokers = brokersInRacks(6, "x", "y")
	assign, err = NewSeededPlacer(8).Place(30, 3, brokers)
	if err != nil {
		t.Fatal(err)
	}
	racks = rackOf(brokers)
	for p, r := range assign {
		seen := map[string]int{}
		for _, id := range r {
			seen[racks[id]]++
		}
		if len(seen) != 2 {
			t.Fatalf("partition %d replicas %v use racks %v, want both", p, r, seen)
		}
	}
}

func TestPlaceFencedNotUsed(t *testing.T) {
	brokers := brokersInRacks(5, "a", "b")
	brokers[1].Fenced = true
	brokers[4].Fenced = true
	assign, err := NewSeededPlacer(3).Place(40, 3, brokers)
	if err != nil {
		t.Fatal(err)
	}
	checkPlacement(t, assign, 40, 3, brokers)
	if _, err := NewSeededPlacer(3).Place(1, 4, brokers); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("rf 4 on 3 unfenced brokers: %v, want INVALID_REPLICATION_FACTOR", err)
	}
	for i := range brokers {
		brokers[i].Fenced = true
	}
	if _, err := NewSeededPlacer(3).Place(1, 1, brokers); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("all fenced: %v, want INVALID_REPLICATION_FACTOR", err)
	}
}

func TestPlaceErrors(t *testing.T) {
	brokers := brokersInRacks(3)
	for _, c := range []struct {
		parts, rf int
		brokers   []BrokerInfo
		want      error
	}{
		{1, 0, brokers, kerr.InvalidReplicationFactor},
		{1, -1, brokers, kerr.InvalidReplicationFactor},
		{1, 4, brokers, kerr.InvalidReplicationFactor},
		{1, 1, nil, kerr.InvalidReplicationFactor},
		{-1, 1, brokers, kerr.InvalidPartitions},
	} {
		if got, err := NewSeededPlacer(1).Place(c.parts, c.rf, c.brokers); !errors.Is(err, c.want) || got != nil {
			t.Errorf("Place(%d, %d, %d brokers) = %v, %v; want %v", c.parts, c.rf, len(c.brokers), got, err, c.want)
		}
	}
	got, err := NewSeededPlacer(1).Place(0, 1, brokers)
	if err != nil || len(got) != 0 {
		t.Fatalf("zero partitions: %v, %v", got, err)
	}
	// A broker listed twice counts once.
	if _, err := NewSeededPlacer(1).Place(1, 2, []BrokerInfo{{ID: 1}, {ID: 1}}); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("duplicate broker counted twice: %v", err)
	}
}

// TestPlaceDeterministic: the same seed and brokers, in any order, give
// the same placement; another seed gives another.
func TestPlaceDeterministic(t *testing.T) {
	brokers := brokersInRacks(9, "a", "b", "c")
	want, err := NewSeededPlacer(99).Place(30, 3, brokers)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(brokers)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := NewSeededPlacer(99).Place(30, 3, shuffled)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("input order changed placement:\n got %v\nwant %v (%v)", got, want, err)
		}
	}
	other, err := NewSeededPlacer(100).Place(30, 3, brokers)
	if err != nil || reflect.DeepEqual(other, want) {
		t.Fatalf("seeds 99 and 100 gave the same placement %v (%v)", other, err)
	}
}

// TestPlaceFollowersVary: over many partitions, a leader's followers are
// not always the same brokers (the rounds reshuffle).
func TestPlaceFollowersVary(t *testing.T) {
	assign, err := NewSeededPlacer(5).Place(200, 2, brokersInRacks(5))
	if err != nil {
		t.Fatal(err)
	}
	followers := map[int32]map[int32]bool{}
	for _, r := range assign {
		if followers[r[0]] == nil {
			followers[r[0]] = map[int32]bool{}
		}
		followers[r[0]][r[1]] = true
	}
	for leader, f := range followers {
		if len(f) < 3 {
			t.Errorf("leader %d always has followers among %v", leader, f)
		}
	}
}
