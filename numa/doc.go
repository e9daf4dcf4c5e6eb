// Package numa owns the machine's topology and what the broker does with it:
//
//   - Topology: sockets, NUMA nodes, cores, SMT siblings and caches read from
//     sysfs (/sys/devices/system/node, /sys/devices/system/cpu/cpu*/topology,
//     cpu*/cache/index*), the NUMA node of each NVMe device
//     (/sys/block/nvme*/device/numa_node, /sys/class/nvme/*/numa_node) and
//     NIC (/sys/class/net/*/device/numa_node), plus CPU facts from cpuid
//     (github.com/klauspost/cpuid/v2). Load takes a sysfs root so tests read
//     fake trees from testdata/.
//   - Pinning and memory policy: PinThread (sched_setaffinity on the calling,
//     locked OS thread) and SetMemPolicy (set_mempolicy(2) MPOL_PREFERRED or
//     MPOL_BIND), so shard buffers allocated after pinning are node-local.
//   - Placement, as pure functions: PlaceShards (shards on CPUs: the data
//     device's node first, one hardware thread per core before SMT siblings)
//     and PartitionShard (partitions on shards, balanced by count; the
//     answer is stored in the metadata image, so it is stable across
//     restarts).
//
// It is a leaf: it imports nothing of ours, and keeps no package-level
// mutable state.
package numa
