package nvme

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// faultyFS wraps buffered-mode files and fails writes to files whose name
// ends with failSuffix once armed; a failing write may first store a prefix
// (a torn write) of partial bytes.
type faultyFS struct {
	armed      bool
	failSuffix string
	partial    int
	// readOnlyFd: once armed, OSFile hands out a read-only descriptor of
	// the file, so ring writes through it fail with EBADF.
	readOnlyFd bool
}

type faultyFile struct {
	file
	fs   *faultyFS
	name string
	ro   *os.File
}

func (f *faultyFile) OSFile() *os.File {
	if f.fs.armed && f.fs.readOnlyFd && strings.HasSuffix(f.name, f.fs.failSuffix) {
		if f.ro == nil {
			f.ro, _ = os.Open(f.name)
		}
		return f.ro
	}
	return f.file.OSFile()
}

func (fs *faultyFS) open(path string, flag int, perm os.FileMode) (file, error) {
	f, err := openOSFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{file: f, fs: fs, name: path}, nil
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.armed && strings.HasSuffix(f.name, f.fs.failSuffix) {
		n := min(f.fs.partial, len(p))
		f.file.WriteAt(p[:n], off)
		return n, syscall.EIO
	}
	return f.file.WriteAt(p, off)
}

func (f *faultyFile) Truncate(size int64) error {
	if f.fs.armed && strings.HasSuffix(f.name, f.fs.failSuffix) {
		return syscall.EIO // the cleanup after a failed write fails too
	}
	return f.file.Truncate(size)
}

func TestWriteFailureTakesLogOffline(t *testing.T) {
	for _, sfx := range []string{logSuffix, indexSuffix} {
		t.Run(sfx, func(t *testing.T) {
			dir := t.TempDir()
			fs := &faultyFS{failSuffix: sfx, partial: 70}
			o := testOptions(t)
			o.IndexIntervalBytes = 1
			l, err := openLog(dir, o, fs.open)
			if err != nil {
				t.Fatal(err)
			}
			stored := appendN(t, l, 3, 2, 50, 1)
			fs.armed = true
			// The .log is written by every append, the index files once
			// a page of entries has gathered (indexFlushBytes).
			n := 0
			for ; n <= indexFlushBytes/offsetEntrySize; n++ {
				b := simpleBatch(t, 2, 50, 1)
				if _, err = l.Append(b, AppendOptions{}); err != nil {
					break
				}
				stored = append(stored, b)
			}
			if !errors.Is(err, ErrLogClosed) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("err %v after %d appends, want ErrLogClosed wrapping EIO", err, n)
			}
			if sfx == logSuffix && n != 0 {
				t.Fatalf("%d appends succeeded with the .log failing", n)
			}
			if _, err := l.Append(simpleBatch(t, 2, 50, 1), AppendOptions{}); !errors.Is(err, ErrLogClosed) {
				t.Fatalf("second append: %v", err)
			}
			if _, err := l.Read(0, 100, 100, true); !errors.Is(err, ErrLogClosed) {
				t.Fatalf("read on offline log: %v", err)
			}
			l.Close()
			// Recovery drops the torn write (or keeps a complete one).
			l2 := mustOpen(t, dir, testOptions(t))
			defer l2.Close()
			want := int64(6 + 2*n)
			if leo := l2.LogEndOffset(); leo != want && leo != want+2 {
				t.Fatalf("LEO %d after recovery, want %d or %d", leo, want, want+2)
			}
			res, err := l2.Read(0, 1<<20, want, true)
			if err != nil || !bytes.Equal(readChunks(t, res), bytes.Join(stored, nil)) {
				t.Fatalf("stored data lost: %v", err)
			}
			mustAppend(t, l2, simpleBatch(t, 1, 1, 1), AppendOptions{})
		})
	}
}

// FuzzRecovery writes arbitrary bytes after valid batches in the active
// segment: Open must not panic, must keep the valid prefix, and the log must
// accept appends afterwards.
func FuzzRecovery(f *testing.F) {
	f.Add([]byte{})
	f.Add(simpleBatch(f, 2, 3, 4)[:30])
	f.Add(simpleBatch(f, 2, 3, 4))
	f.Add(bytes.Repeat([]byte{0}, 100))
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		o := testOptions(t)
		o.IndexIntervalBytes = 10
		l := mustOpen(t, dir, o)
		appendN(t, l, 3, 2, 5, 1)
		good := l.Size()
		l.Close()
		path := filepath.Join(dir, segmentFileName(0, logSuffix))
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(tail)
		fh.Close()
		l, err = Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.Size() < good || l.LogEndOffset() < 6 || activeFileSize(o, l.Size()) != fileSize(t, path) {
			t.Fatalf("size %d (good %d, file %d), LEO %d", l.Size(), good, fileSize(t, path), l.LogEndOffset())
		}
		res, err := l.Read(0, 1<<30, 1<<62, true)
		if err != nil {
			t.Fatal(err)
		}
		batchesOf(t, readChunks(t, res))
		mustAppend(t, l, simpleBatch(t, 1, 1, 1), AppendOptions{})
	})
}

// TestRollOutOfDescriptors: a roll that cannot create the new segment's
// .log or index files because the process is out of descriptors (EMFILE:
// sockets took them) fails the append with ErrNoDescriptors and nothing
// written, removes what it created and leaves the log online with its
// active segment; the next append rolls. Before, the partition went
// offline until a restart (found by the fresh-user test: 4,500 idle
// connections, then a roll).
func TestRollOutOfDescriptors(t *testing.T) {
	for _, sfx := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		t.Run(sfx, func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(t)
			o.SegmentBytes = 2000
			var full bool
			open := func(path string, flag int, perm os.FileMode) (file, error) {
				if full && flag&os.O_CREATE != 0 && strings.HasSuffix(path, sfx) {
					return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EMFILE}
				}
				return openOSFile(path, flag, perm)
			}
			l, err := openLog(dir, o, open)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			batch := int64(len(simpleBatch(t, 4, 100, 1_000_000)))
			for { // fill the active segment: the next append rolls
				segs := l.Segments()
				if segs[len(segs)-1].Size+batch > o.SegmentBytes {
					break
				}
				mustAppend(t, l, simpleBatch(t, 4, 100, 1_000_000), AppendOptions{})
			}
			leo, segs := l.LogEndOffset(), len(l.Segments())
			full = true
			for range 3 {
				_, err := l.Append(simpleBatch(t, 4, 100, 1_000_000), AppendOptions{})
				if !errors.Is(err, ErrNoDescriptors) || errors.Is(err, ErrLogClosed) {
					t.Fatalf("append needing a roll without descriptors: %v, want ErrNoDescriptors", err)
				}
			}
			if l.LogEndOffset() != leo || len(l.Segments()) != segs {
				t.Fatalf("log end offset %d, %d segments after the refused appends, want %d and %d", l.LogEndOffset(), len(l.Segments()), leo, segs)
			}
			if err := l.MaybeRoll(); err != nil {
				t.Fatalf("MaybeRoll (not due): %v", err)
			}
			for _, s := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				if _, err := os.Stat(filepath.Join(dir, segmentFileName(leo, s))); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s of the put-off segment left behind: %v", s, err)
				}
			}
			res, err := l.Read(0, 1<<20, leo, true)
			if err != nil || res.Bytes == 0 {
				t.Fatalf("read after the put-off rolls: %v", err)
			}
			full = false
			info := mustAppend(t, l, simpleBatch(t, 4, 100, 1_000_000), AppendOptions{})
			if info.FirstOffset != leo || len(l.Segments()) != segs+1 {
				t.Fatalf("append once descriptors are back: %+v, %d segments, want offset %d in a new segment", info, len(l.Segments()), leo)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, o)
			if l.LogEndOffset() != leo+4 {
				t.Fatalf("log end offset %d after reopen, want %d", l.LogEndOffset(), leo+4)
			}
		})
	}
}
