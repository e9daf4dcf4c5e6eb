package ioring

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// loadProbe asks the kernel which opcodes it supports
// (IORING_REGISTER_PROBE, Linux 5.6). A kernel without the probe leaves
// every Supports answer false.
func (r *Ring) loadProbe() error {
	_, err := r.register(regProbe, unsafe.Pointer(&r.probe), probeOpsLen)
	switch err {
	case nil:
		r.probed = true
		return nil
	case unix.EINVAL:
		return nil
	default:
		return fmt.Errorf("cannot probe io_uring opcodes: %w", err)
	}
}

// Supports reports whether the kernel supports opcode op on this ring
// (IO_URING_OP_SUPPORTED in the IORING_REGISTER_PROBE answer).
func (r *Ring) Supports(op Op) bool {
	if !r.probed || op > Op(r.probe.lastOp) || int(op) >= int(r.probe.opsLen) {
		return false
	}
	return r.probe.ops[op].flags&probeOpSupported != 0
}

// LastOp is the highest opcode the kernel knows (from the probe).
func (r *Ring) LastOp() Op { return Op(r.probe.lastOp) }

// Available reports whether io_uring can be used by this process, and why
// not, for io.engine=auto: it reads /proc/sys/kernel/io_uring_disabled
// (2: disabled for all; 1: only for members of kernel.io_uring_group or
// CAP_SYS_ADMIN) and then creates and closes a one-entry ring, so that a
// seccomp filter or LSM that answers io_uring_setup(2) with EPERM or ENOSYS
// (Docker's default profile, gVisor) is detected too.
func Available() (ok bool, reason string) {
	disabled := "unknown"
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil {
		disabled = strings.TrimSpace(string(b))
		if disabled == "2" {
			return false, "io_uring disabled by sysctl kernel.io_uring_disabled=2"
		}
	}
	var p params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	switch errno {
	case 0:
		unix.Close(int(fd))
		if p.features&FeatExtArg == 0 {
			return false, fmt.Sprintf("io_uring too old: no IORING_FEAT_EXT_ARG (features %#x, need Linux 5.11+)", p.features)
		}
		return true, fmt.Sprintf("io_uring available (features %#x)", p.features)
	case unix.ENOSYS:
		return false, "io_uring absent: io_uring_setup returned ENOSYS (kernel without CONFIG_IO_URING, or a seccomp filter)"
	case unix.EPERM, unix.EACCES:
		return false, fmt.Sprintf("io_uring forbidden: io_uring_setup returned %v (kernel.io_uring_disabled=%s, or a seccomp/LSM policy)", errno, disabled)
	default:
		return false, fmt.Sprintf("io_uring unusable: io_uring_setup returned %v", errno)
	}
}
