package nvme

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// file is the package's view of an open segment or index file. Buffered mode
// implements it with *os.File (pread/pwrite through the page cache); tests wrap
// it to inject faults, and a direct-I/O implementation comes later.
type file interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Datasync() error // fdatasync(2)
	Size() (int64, error)
	Close() error
	// OSFile is the descriptor that Chunks and SyncTarget hand out.
	OSFile() *os.File
}

// opener opens a file; flag and perm are as for os.OpenFile.
type opener func(path string, flag int, perm os.FileMode) (file, error)

// osFile is the buffered-mode file.
type osFile struct{ f *os.File }

func openOSFile(path string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (o osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o osFile) Truncate(size int64) error                { return o.f.Truncate(size) }
func (o osFile) Close() error                             { return o.f.Close() }
func (o osFile) OSFile() *os.File                         { return o.f }
func (o osFile) Datasync() error                          { return fdatasync(o.f) }

func (o osFile) Size() (int64, error) {
	st, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// fdatasync flushes f's data (and the metadata needed to read it) to stable
// storage. It goes through SyscallConn so a concurrent Close cannot recycle
// the descriptor underneath it.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		// Control fails only when f has been closed ("use of closed
		// file", which is not os.ErrClosed): say so in os's terms.
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: os.ErrClosed}
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// syncDir fsyncs a directory so renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open directory %q: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot fsync directory %q: %w", dir, err)
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file, fsync and
// rename, then fsyncs the directory, so readers see the old or the new
// content, never a torn one.
func writeFileAtomic(dir, name string, data []byte) (err error) {
	path := dir + "/" + name
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp) // a full disk's failure leaves no stray file
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %q: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot fsync %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot close %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot rename %q to %q: %w", tmp, path, err)
	}
	return syncDir(dir)
}
