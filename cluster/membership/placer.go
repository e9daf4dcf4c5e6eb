package membership

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// BrokerInfo is what placement knows of a broker.
type BrokerInfo struct {
	ID int32
	// Rack is broker.rack, "" when unset (the brokers without a rack form
	// one rack).
	Rack string
	// Fenced brokers are not placed on.
	Fenced bool
}

// Placer assigns replicas to brokers for new partitions, in the manner of
// Kafka's StripedReplicaPlacer: racks and the brokers in each rack are
// shuffled, each partition's leader comes from the next rack in turn, and
// its followers from the racks after it, so that
//
//   - within each round of N partitions (N usable brokers) every broker
//     leads exactly one, so over many partitions each leads about total/N;
//   - a partition's replicas are on distinct racks while there are at
//     least as many racks as replicas, and otherwise spread as evenly as
//     the racks allow; never two replicas on one broker;
//   - after each round, racks and brokers are shuffled again, so follower
//     sets vary.
//
// Unlike Kafka, which may use fenced brokers as followers, fenced brokers
// are not placed on at all. The random source is injected, so a fixed seed
// gives the same placement for the same brokers in any input order. A
// Placer is not safe for concurrent use.
type Placer struct {
	rng *rand.Rand
}

// NewPlacer returns a placer drawing from rng.
func NewPlacer(rng *rand.Rand) *Placer { return &Placer{rng: rng} }

// NewSeededPlacer returns a placer with a PCG source seeded with seed.
func NewSeededPlacer(seed uint64) *Placer {
	return NewPlacer(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
}

// Place returns the replica lists (leader first) of numPartitions new
// partitions with replicationFactor replicas each, on the unfenced brokers
// of brokers. A replicationFactor below 1 or above the number of unfenced
// brokers is INVALID_REPLICATION_FACTOR (so is a cluster whose brokers are
// all fenced); a negative numPartitions is INVALID_PARTITIONS.
func (p *Placer) Place(numPartitions, replicationFactor int, brokers []BrokerInfo) ([][]int32, error) {
	if numPartitions < 0 {
		return nil, fmt.Errorf("%w: %d partitions", kerr.InvalidPartitions, numPartitions)
	}
	if replicationFactor < 1 {
		return nil, fmt.Errorf("%w: replication factor %d must be at least 1", kerr.InvalidReplicationFactor, replicationFactor)
	}
	var usable []BrokerInfo
	seen := map[int32]bool{}
	for _, b := range brokers {
		if !b.Fenced && !seen[b.ID] {
			seen[b.ID] = true
			usable = append(usable, b)
		}
	}
	if len(usable) == 0 {
		return nil, fmt.Errorf("%w: all %d brokers are fenced", kerr.InvalidReplicationFactor, len(brokers))
	}
	if replicationFactor > len(usable) {
		return nil, fmt.Errorf("%w: replication factor %d is more than the %d unfenced brokers", kerr.InvalidReplicationFactor, replicationFactor, len(usable))
	}
	rl := newRackList(p.rng, usable)
	out := make([][]int32, numPartitions)
	for i := range out {
		out[i] = rl.place(replicationFactor)
	}
	return out, nil
}

// rackList is the placement state of one Place call.
type rackList struct {
	rng     *rand.Rand
	racks   []*rack
	n       int // usable brokers
	leaders []int32
	round   int // partitions placed in this round of n
}

type rack struct {
	name    string
	members []int32
	next    int // the member the next follower of this rack is
}

func newRackList(rng *rand.Rand, brokers []BrokerInfo) *rackList {
	byName := map[string]*rack{}
	rl := &rackList{rng: rng, n: len(brokers)}
	for _, b := range brokers {
		rk := byName[b.Rack]
		if rk == nil {
			rk = &rack{name: b.Rack}
			byName[b.Rack] = rk
			rl.racks = append(rl.racks, rk)
		}
		rk.members = append(rk.members, b.ID)
	}
	// Sort before shuffling, so that the input order does not matter.
	slices.SortFunc(rl.racks, func(a, b *rack) int { return cmp.Compare(a.name, b.name) })
	for _, rk := range rl.racks {
		slices.Sort(rk.members)
	}
	rl.shuffle()
	return rl
}

// shuffle starts a round: racks and members are shuffled, and the round's
// leader order takes one broker from each rack in turn, so that
// consecutive leaders are on different racks where they can be.
func (rl *rackList) shuffle() {
	rl.rng.Shuffle(len(rl.racks), func(i, j int) { rl.racks[i], rl.racks[j] = rl.racks[j], rl.racks[i] })
	for _, rk := range rl.racks {
		rl.rng.Shuffle(len(rk.members), func(i, j int) { rk.members[i], rk.members[j] = rk.members[j], rk.members[i] })
		rk.next = 0
	}
	rl.leaders = rl.leaders[:0]
	for depth := 0; len(rl.leaders) < rl.n; depth++ {
		for _, rk := range rl.racks {
			if depth < len(rk.members) {
				rl.leaders = append(rl.leaders, rk.members[depth])
			}
		}
	}
	rl.round = 0
}

// rackOf returns the index of broker id's rack.
func (rl *rackList) rackOf(id int32) int {
	for i, rk := range rl.racks {
		if slices.Contains(rk.members, id) {
			return i
		}
	}
	panic(fmt.Sprintf("membership: broker %d in no rack", id))
}

// place returns the next partition's replicas: the round's next leader,
// then one follower from each following rack in turn (each rack's members
// in rotation), skipping brokers already chosen.
func (rl *rackList) place(rf int) []int32 {
	if rl.round == rl.n {
		rl.shuffle()
	}
	leader := rl.leaders[rl.round]
	rl.round++
	out := make([]int32, 1, rf)
	out[0] = leader
	start := rl.rackOf(leader)
	for i := 1; len(out) < rf; i++ {
		rk := rl.racks[(start+i)%len(rl.racks)]
		for range rk.members {
			id := rk.members[rk.next%len(rk.members)]
			rk.next++
			if !slices.Contains(out, id) {
				out = append(out, id)
				break
			}
		}
	}
	return out
}
