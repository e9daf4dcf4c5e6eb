package numa

import (
	"fmt"
	"sort"
	"strings"
)

// PlaceShards returns the CPU each of n shards is pinned to. CPUs are
// ranked so that shards spread as far as they can before they share: the
// preferred node first (the NUMA node of the data device; -1 for none),
// then the other nodes in order; within a node, the first hardware thread of
// every core before any SMT sibling; then by CPU id. allowed restricts the
// candidates (the process's affinity mask; nil allows every online CPU).
// With more shards than candidates the ranking repeats, so shards share
// CPUs evenly. It is a pure function of its arguments.
func PlaceShards(t *Topology, n int, preferNode int, allowed []int) []int {
	ok := map[int]bool{}
	for _, c := range allowed {
		ok[c] = true
	}
	type cand struct {
		cpu, node, sibRank int
	}
	var cs []cand
	for _, c := range t.CPUs {
		if allowed != nil && !ok[c.ID] {
			continue
		}
		rank := 0
		for i, s := range c.Siblings {
			if s == c.ID {
				rank = i
			}
		}
		cs = append(cs, cand{c.ID, c.Node, rank})
	}
	if len(cs) == 0 || n <= 0 {
		return make([]int, max(n, 0))
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		ap, bp := a.node == preferNode, b.node == preferNode
		if ap != bp {
			return ap
		}
		if a.node != b.node {
			return a.node < b.node
		}
		if a.sibRank != b.sibRank {
			return a.sibRank < b.sibRank
		}
		return a.cpu < b.cpu
	})
	out := make([]int, n)
	for i := range out {
		out[i] = cs[i%len(cs)].cpu
	}
	return out
}

// PartitionShard picks the shard for a new partition given the number of
// partitions each shard already owns: the least loaded, the lowest index on
// a tie. Callers store the answer in the metadata image (PartitionRecord's
// shard), so placement is stable across restarts and only new partitions
// move the balance.
func PartitionShard(load []int) int {
	best := 0
	for i, n := range load {
		if n < load[best] {
			best = i
		}
	}
	return best
}

// AssignPartitions places count new partitions one after another with
// PartitionShard, updating load, and returns their shards.
func AssignPartitions(load []int, count int) []int {
	out := make([]int, count)
	for i := range out {
		s := PartitionShard(load)
		load[s]++
		out[i] = s
	}
	return out
}

// Describe renders the topology and a shard placement for humans
// (ringbroker --print-topology).
func Describe(t *Topology, shardCPUs []int, dataDir string, dataNode int, dataDev string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu: %s (%s), %d logical, %d cores/package x %d threads (cpuid); features %s\n", t.Info.Brand, t.Info.Vendor,
		t.Info.LogicalCores, t.Info.PhysicalCores, t.Info.ThreadsPerCore, strings.Join(t.Info.Features, " "))
	fmt.Fprintf(&b, "sysfs %s: %d online CPUs, %d sockets, %d cores, %d NUMA nodes\n", t.Root, len(t.CPUs), t.Sockets(), t.Cores(), len(t.Nodes))
	for _, n := range t.Nodes {
		var ids []int
		for _, c := range t.CPUs {
			if c.Node == n {
				ids = append(ids, c.ID)
			}
		}
		fmt.Fprintf(&b, "  node %d: cpus %s\n", n, FormatList(ids))
	}
	for _, c := range t.CPUs {
		fmt.Fprintf(&b, "  cpu %d: socket %d core %d node %d siblings %s\n", c.ID, c.Socket, c.Core, c.Node, FormatList(c.Siblings))
	}
	for _, c := range t.Caches {
		fmt.Fprintf(&b, "  cache L%d %s %d KiB shared by cpus %s\n", c.Level, c.Type, c.SizeBytes>>10, FormatList(c.CPUs))
	}
	for _, d := range t.NVMe {
		fmt.Fprintf(&b, "  nvme %s: node %d\n", d.Name, d.Node)
	}
	for _, d := range t.NICs {
		fmt.Fprintf(&b, "  nic %s: node %d\n", d.Name, d.Node)
	}
	dev := dataDev
	if dev == "" {
		dev = "unknown device"
	}
	fmt.Fprintf(&b, "data dir %s: %s, node %d\n", dataDir, dev, dataNode)
	fmt.Fprintf(&b, "placement: %d shards\n", len(shardCPUs))
	for i, c := range shardCPUs {
		fmt.Fprintf(&b, "  shard %d -> cpu %d (node %d)\n", i, c, t.NodeOfCPU(c))
	}
	return b.String()
}
