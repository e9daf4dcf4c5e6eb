package numa

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory policy modes of set_mempolicy(2) (include/uapi/linux/mempolicy.h).
const (
	MPolDefault   = 0 // MPOL_DEFAULT: allocate on the node of the CPU that touches first
	MPolPreferred = 1 // MPOL_PREFERRED: prefer the one node given, fall back to others
	MPolBind      = 2 // MPOL_BIND: only the nodes given (allocation fails otherwise)
)

// PinThread restricts the calling OS thread to cpu with
// sched_setaffinity(2). The caller must hold runtime.LockOSThread for as long
// as the pinning matters, and should let the goroutine exit locked (which
// ends the thread) rather than unlock, so the affinity does not leak to
// other goroutines. Errors: EINVAL when cpu is not allowed (cgroup cpuset).
func PinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("cannot pin thread to CPU %d: %w", cpu, err)
	}
	return nil
}

// AllowedCPUs is the calling thread's affinity mask (the CPUs a cgroup or
// taskset left to the process), in increasing order.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("cannot read CPU affinity: %w", err)
	}
	var out []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out, nil
}

// SetMemPolicy sets the calling thread's memory policy with
// set_mempolicy(2): mode MPolPreferred (nodes must hold one node),
// MPolBind, or MPolDefault (nodes ignored). Pages first touched by this
// thread afterwards come from those nodes. Like PinThread it applies to the
// OS thread, so call it on a locked thread. Errors: EINVAL for an unknown
// node or mode, ENOSYS without CONFIG_NUMA.
func SetMemPolicy(mode int, nodes []int) error {
	var mask [16]uint64 // 1024 nodes
	maxNode := uintptr(0)
	if mode != MPolDefault {
		for _, n := range nodes {
			if n < 0 || n >= len(mask)*64 {
				return fmt.Errorf("cannot set memory policy for node %d: out of range", n)
			}
			mask[n/64] |= 1 << (n % 64)
		}
		maxNode = uintptr(len(mask) * 64)
	}
	var p unsafe.Pointer
	if maxNode > 0 {
		p = unsafe.Pointer(&mask[0])
	}
	_, _, errno := unix.Syscall(unix.SYS_SET_MEMPOLICY, uintptr(mode), uintptr(p), maxNode)
	if errno != 0 {
		return fmt.Errorf("cannot set memory policy %d for nodes %v: %w", mode, nodes, errno)
	}
	return nil
}

// devOf returns the major and minor number of the device holding path.
func devOf(path string) (uint32, uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), nil
}
