package nvme

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DeviceInfo describes the block device under a data directory, from
// statx(2) and /sys/dev/block/MAJ:MIN (see ProbeDevice). Fields that could
// not be read keep their zero value, NUMANode -1.
type DeviceInfo struct {
	Dir  string // the directory probed
	Name string // kernel name of the device (vda, nvme0n1, dm-0); empty when there is none (tmpfs, overlay)
	// Major and Minor are st_dev of the directory.
	Major, Minor uint32
	// LogicalBlockSize is queue/logical_block_size in bytes (0 when unknown).
	LogicalBlockSize int
	// DIOMemAlign and DIOOffsetAlign are statx STATX_DIOALIGN's alignments
	// for O_DIRECT memory and file offsets (0 when the filesystem does not
	// report them or refuses direct I/O).
	DIOMemAlign, DIOOffsetAlign int
	// FSBlockSize is the filesystem block size (statx stx_blksize).
	FSBlockSize int
	Rotational  bool // queue/rotational
	QueueDepth  int  // queue/nr_requests (0 when unknown)
	NUMANode    int  // device/numa_node of the device or its parent; -1 when unknown
	// DirectIO says whether an aligned O_DIRECT write and read worked in Dir;
	// DirectIOErr is why not. A probe the filesystem refused for want of
	// space (ENOSPC, EDQUOT) proves nothing either way: DirectIO stays true
	// and DirectIOErr holds the error, so that a full disk does not turn
	// direct mode into buffered mode.
	DirectIO    bool
	DirectIOErr error
}

// Alignment is the block size direct-mode segment files use: the largest of
// the filesystem block, the logical block and the statx offset alignment,
// at least 4096 (so a rewritten tail block never splits a filesystem block)
// and a power of two.
func (d DeviceInfo) Alignment() int {
	a := 4096
	for _, v := range []int{d.FSBlockSize, d.LogicalBlockSize, d.DIOOffsetAlign, d.DIOMemAlign} {
		if v > a && v&(v-1) == 0 && v <= 1<<20 {
			a = v
		}
	}
	return a
}

// String is a one-line summary for logs.
func (d DeviceInfo) String() string {
	return fmt.Sprintf("device=%q dev=%d:%d logical_block=%d dio_align=%d/%d fs_block=%d rotational=%t nr_requests=%d numa_node=%d direct_io=%t",
		d.Name, d.Major, d.Minor, d.LogicalBlockSize, d.DIOMemAlign, d.DIOOffsetAlign, d.FSBlockSize, d.Rotational, d.QueueDepth, d.NUMANode, d.DirectIO)
}

// ProbeDevice maps dir (which must exist) to its block device through
// st_dev -> /sys/dev/block/MAJ:MIN and reads the device facts, then checks
// that O_DIRECT works in dir by writing, reading and removing one aligned
// block in a temporary file. Only a failing stat of dir is an error.
func ProbeDevice(dir string) (DeviceInfo, error) {
	d := DeviceInfo{Dir: dir, NUMANode: -1}
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, 0, unix.STATX_BASIC_STATS|unix.STATX_DIOALIGN, &stx); err != nil {
		return d, fmt.Errorf("cannot statx %q: %w", dir, err)
	}
	d.Major, d.Minor = stx.Dev_major, stx.Dev_minor
	d.FSBlockSize = int(stx.Blksize)
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", d.Major, d.Minor)
	if target, err := filepath.EvalSymlinks(sys); err == nil {
		d.Name = filepath.Base(target)
		// A partition's queue/ and device/ are its parent disk's.
		q := target
		if _, err := os.Stat(filepath.Join(q, "queue")); err != nil {
			q = filepath.Dir(target)
		}
		d.LogicalBlockSize = readSysInt(filepath.Join(q, "queue", "logical_block_size"))
		d.Rotational = readSysInt(filepath.Join(q, "queue", "rotational")) == 1
		d.QueueDepth = readSysInt(filepath.Join(q, "queue", "nr_requests"))
		d.NUMANode = numaNodeOf(filepath.Join(q, "device"))
	}
	d.DirectIOErr = probeDirectIO(dir, &d)
	d.DirectIO = d.DirectIOErr == nil || noSpace(d.DirectIOErr)
	return d, nil
}

// noSpace reports a filesystem out of blocks or inodes, or over a quota.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// readSysInt reads a sysfs file holding one integer; 0 when unreadable.
func readSysInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return v
}

// numaNodeOf walks from a sysfs device directory towards the root looking
// for numa_node (virtio and NVMe controllers carry it on the PCI device).
func numaNodeOf(dev string) int {
	p, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return -1
	}
	for ; p != "/" && p != "." && strings.HasPrefix(p, "/sys"); p = filepath.Dir(p) {
		b, err := os.ReadFile(filepath.Join(p, "numa_node"))
		if err != nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return -1
		}
		return v
	}
	return -1
}

// probeDirectIO writes and reads one aligned block with O_DIRECT in dir.
// It fills in the statx DIO alignment of a regular file there (directories
// do not report it).
func probeDirectIO(dir string, d *DeviceInfo) error {
	f, err := os.CreateTemp(dir, ".dio-probe-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot create probe file in %q: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, name, 0, unix.STATX_DIOALIGN, &stx); err == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
		d.DIOMemAlign, d.DIOOffsetAlign = int(stx.Dio_mem_align), int(stx.Dio_offset_align)
		if d.DIOOffsetAlign == 0 {
			return errors.New("statx reports no O_DIRECT support")
		}
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open %q with O_DIRECT: %w", name, err)
	}
	defer unix.Close(fd)
	buf := alignedBuf(d.Alignment(), d.Alignment())
	buf[0] = 1
	if _, err := unix.Pwrite(fd, buf, 0); err != nil {
		return fmt.Errorf("O_DIRECT write to %q: %w", name, err)
	}
	if _, err := unix.Pread(fd, buf, 0); err != nil {
		return fmt.Errorf("O_DIRECT read of %q: %w", name, err)
	}
	return nil
}
