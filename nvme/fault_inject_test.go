package nvme

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Fault kinds an injector produces on .log files once armed.
type faultKind int

const (
	faultShortWrite faultKind = iota // a prefix is written and no error is reported
	faultTornENOSPC                  // a prefix is written, then ENOSPC
	faultEIOWrite                    // nothing written, EIO
	faultENOSPC                      // nothing written, ENOSPC
	faultEIOSync                     // writes work, fdatasync fails with EIO
)

func (k faultKind) String() string {
	return [...]string{"short-write", "torn-ENOSPC", "EIO-write", "ENOSPC", "EIO-fsync"}[k]
}

// injector wraps files (buffered, or the O_DIRECT descriptor under a
// directFile) and injects its fault into .log files once armed.
type injector struct {
	kind  faultKind
	armed bool
	hits  int
}

type injFile struct {
	file
	inj  *injector
	name string
}

func (in *injector) open(path string, flag int, perm os.FileMode) (file, error) {
	f, err := openOSFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injFile{file: f, inj: in, name: path}, nil
}

func (f *injFile) on() bool { return f.inj.armed && strings.HasSuffix(f.name, logSuffix) }

func (f *injFile) WriteAt(p []byte, off int64) (int, error) {
	if !f.on() {
		return f.file.WriteAt(p, off)
	}
	f.inj.hits++
	half := len(p) / 2 &^ 4095 // aligned, so an O_DIRECT descriptor takes it
	switch f.inj.kind {
	case faultShortWrite, faultTornENOSPC:
		n := 0
		if half > 0 {
			n, _ = f.file.WriteAt(p[:half], off)
		}
		if f.inj.kind == faultShortWrite {
			return n, nil
		}
		return n, syscall.ENOSPC
	case faultEIOWrite:
		return 0, syscall.EIO
	case faultENOSPC:
		return 0, syscall.ENOSPC
	}
	return f.file.WriteAt(p, off)
}

func (f *injFile) Datasync() error {
	if f.on() && f.inj.kind == faultEIOSync {
		f.inj.hits++
		return syscall.EIO
	}
	return f.file.Datasync()
}

// TestInjectedFaults: in both io modes, every fault takes the log offline
// (ErrLogClosed wrapping the cause), nothing more is accepted or served,
// and a reopened log holds exactly the batches stored before the fault.
func TestInjectedFaults(t *testing.T) {
	for _, mode := range []string{IOModeBuffered, IOModeDirect} {
		for _, kind := range []faultKind{faultShortWrite, faultTornENOSPC, faultEIOWrite, faultENOSPC, faultEIOSync} {
			t.Run(mode+"/"+kind.String(), func(t *testing.T) {
				dir := t.TempDir()
				inj := &injector{kind: kind}
				o := testOptions(t)
				o.IOMode = mode
				o.SegmentBytes = 1 << 20
				l, err := openLog(dir, o, inj.open)
				if err != nil {
					t.Fatal(err)
				}
				stored := appendN(t, l, 3, 2, 50, 1)
				inj.armed = true
				var want error
				switch kind {
				case faultEIOSync:
					// A roll fdatasyncs the finished segment.
					err, want = l.Roll(), syscall.EIO
				default:
					// Big enough for the torn prefix to hold whole blocks.
					_, err = l.Append(simpleBatch(t, 40, 500, 1), AppendOptions{})
					want = map[faultKind]error{faultShortWrite: io.ErrShortWrite, faultTornENOSPC: syscall.ENOSPC,
						faultEIOWrite: syscall.EIO, faultENOSPC: syscall.ENOSPC}[kind]
				}
				if !errors.Is(err, ErrLogClosed) || !errors.Is(err, want) {
					t.Fatalf("err %v, want ErrLogClosed wrapping %v", err, want)
				}
				if inj.hits == 0 {
					t.Fatal("fault never injected")
				}
				if _, err := l.Append(simpleBatch(t, 2, 50, 1), AppendOptions{}); !errors.Is(err, ErrLogClosed) {
					t.Fatalf("append after fault: %v", err)
				}
				if _, err := l.Read(0, 1<<20, 100, true); !errors.Is(err, ErrLogClosed) {
					t.Fatalf("read after fault: %v", err)
				}
				l.Close()
				inj.armed = false
				l2 := mustOpen(t, dir, o)
				defer l2.Close()
				if leo := l2.LogEndOffset(); leo != 6 {
					t.Fatalf("LEO %d after recovery, want 6", leo)
				}
				res, err := l2.Read(0, 1<<20, 6, true)
				if err != nil || !bytes.Equal(readChunks(t, res), bytes.Join(stored, nil)) {
					t.Fatalf("stored data changed: %v", err)
				}
				mustAppend(t, l2, simpleBatch(t, 1, 1, 1), AppendOptions{})
			})
		}
	}
}
