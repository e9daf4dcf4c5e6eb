package nvme

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestProbeDevice(t *testing.T) {
	d, err := ProbeDevice(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s alignment=%d err=%v", d, d.Alignment(), d.DirectIOErr)
	if a := d.Alignment(); a < 4096 || a&(a-1) != 0 {
		t.Fatalf("alignment %d", a)
	}
	if d.Name != "" && d.LogicalBlockSize == 0 {
		t.Fatalf("device %s without a logical block size", d.Name)
	}
}

// TestProbeDeviceRefusingODirect: ramfs refuses O_DIRECT (tmpfs accepts
// it since Linux 6.6, so it cannot serve here).
func TestProbeDeviceRefusingODirect(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount ramfs")
	}
	mnt := filepath.Join(t.TempDir(), "ramfs")
	os.Mkdir(mnt, 0o755)
	if err := syscall.Mount("ramfs", mnt, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs: %v", err)
	}
	defer syscall.Unmount(mnt, 0)
	d, err := ProbeDevice(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if d.DirectIO || d.DirectIOErr == nil {
		t.Fatalf("ramfs: %s, want direct I/O refused", d)
	}
}
