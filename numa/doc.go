// Package numa will own the machine's topology (sockets, NUMA nodes, cores,
// SMT siblings, caches, the NUMA node of each NVMe device and NIC, read
// from sysfs and cpuid), thread pinning, memory policy, and the placement
// of shards on cores and partitions on shards. It is a leaf: it imports
// nothing of ours. Today placement of partitions on shards (balanced by
// count, kept in the metadata image) lives in appliance/controller.go.
package numa
