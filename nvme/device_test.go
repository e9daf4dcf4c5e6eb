package nvme

import (
	"errors"
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

// TestProbeDeviceFullFilesystem: a probe write refused for want of space
// keeps direct I/O (it says nothing about O_DIRECT), with the error kept
// for the warning. Before, a broker restarted on a full disk fell back to
// buffered mode for good (found by the fresh-user disk-full test). tmpfs
// takes O_DIRECT since Linux 6.6.
func TestProbeDeviceFullFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount tmpfs")
	}
	mnt := filepath.Join(t.TempDir(), "tmpfs")
	os.Mkdir(mnt, 0o755)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, 0)
	if d, err := ProbeDevice(mnt); err != nil || !d.DirectIO || d.DirectIOErr != nil {
		t.Skipf("tmpfs here does not take O_DIRECT: %s (%v)", d, err)
	}
	f, err := os.Create(filepath.Join(mnt, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for i := 0; ; i++ {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling tmpfs: %v", err)
			}
			break
		}
		if i > 1000 {
			t.Fatal("256 KiB tmpfs never filled")
		}
	}
	f.Close()
	d, err := ProbeDevice(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if !d.DirectIO || !errors.Is(d.DirectIOErr, syscall.ENOSPC) {
		t.Fatalf("full tmpfs: DirectIO %v, err %v; want true and ENOSPC", d.DirectIO, d.DirectIOErr)
	}
}

// TestWriteFileAtomicFullDiskLeavesNoTemp: a checkpoint write that fails
// for want of space leaves the old file and no ".tmp" behind (found by the
// fresh-user disk-full test: an empty checkpoint .tmp left in the data
// directory after a shutdown on a full disk).
func TestWriteFileAtomicFullDiskLeavesNoTemp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount tmpfs")
	}
	mnt := filepath.Join(t.TempDir(), "tmpfs")
	os.Mkdir(mnt, 0o755)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, 0)
	if err := writeFileAtomic(mnt, "ckpt", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(mnt, "ckpt", make([]byte, 1<<20)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("1 MiB into a 64 KiB tmpfs: %v, want ENOSPC", err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "ckpt")); err != nil || string(b) != "old" {
		t.Fatalf("old content after the failed write: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "ckpt.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}
