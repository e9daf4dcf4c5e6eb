package metadata

import (
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sys/unix"
)

// fdsPerPartition is what a new partition holds: the active segment's
// .log, .index and .timeindex. Each closed segment keeps its .log open
// too (as Kafka does), which CheckPartitionBudget counts in the
// descriptors open now.
const fdsPerPartition = 3

// openDescriptors is the number of descriptors the process holds, or -1.
func openDescriptors() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// DescriptorHint says what to do when opening partitions runs out of
// descriptors.
func DescriptorHint() string {
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	return fmt.Sprintf("the process may open %d files (RLIMIT_NOFILE) and each partition holds one descriptor per segment plus two: raise LimitNOFILE / ulimit -n", lim.Cur)
}

// CheckPartitionBudget refuses a change that would add add partitions to
// im's and leave the process with more open partitions than its file
// descriptor limit allows, instead of committing a topic whose partitions
// then cannot be opened.
func CheckPartitionBudget(im *Image, add int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return nil
	}
	total := add
	for _, t := range im.Topics {
		total += len(t.Partitions)
	}
	const reserve = 1024 // connections, metadata log, checkpoints
	// The partitions open now hold their segments' descriptors (counted
	// in what is open); without /proc, fdsPerPartition each.
	base := uint64(total-add) * fdsPerPartition
	if n := openDescriptors(); n >= 0 {
		base = uint64(n)
	}
	need := base + uint64(add)*fdsPerPartition + reserve
	if need > lim.Cur {
		return fmt.Errorf("%w: %d new partitions (%d in total) would need about %d open files with the %d open now, but the limit (RLIMIT_NOFILE) is %d; raise LimitNOFILE / ulimit -n or create fewer partitions",
			kerr.PolicyViolation, add, total, need, base, lim.Cur)
	}
	return nil
}
