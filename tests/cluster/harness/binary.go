package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildTimeout bounds the one `go build` of tools/ringbroker.
const buildTimeout = 5 * time.Minute

// binState is the broker binary shared by every test of one test process.
var binState struct {
	once sync.Once
	dir  string // temporary build directory, removed by Main
	root string
	bin  string
	src  string // how bin was found: RB_BIN, bin/ringbroker or go build
	err  error
}

// Binary returns the ringbroker binary the harness runs, found once per
// test process: $RB_BIN (or $RB_BROKER_BIN, the integration suite's name)
// when set; else the repository's bin/ringbroker when `make build` left one
// newer than every Go source file, go.mod and go.sum of the module; else a
// `go build ./tools/ringbroker` into a temporary directory that Main removes.
// It fails the test when none can be had.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := resolveBinary()
	if err != nil {
		t.Fatalf("harness: ringbroker binary: %v", err)
	}
	return bin
}

func resolveBinary() (string, error) {
	binState.once.Do(func() {
		binState.bin, binState.src, binState.err = findBinary()
	})
	return binState.bin, binState.err
}

func findBinary() (bin, src string, err error) {
	for _, env := range []string{"RB_BIN", "RB_BROKER_BIN"} {
		if p := os.Getenv(env); p != "" {
			abs, err := filepath.Abs(p)
			if err != nil {
				return "", "", err
			}
			if _, err := os.Stat(abs); err != nil {
				return "", "", fmt.Errorf("%s=%s: %w", env, p, err)
			}
			return abs, env, nil
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	binState.root = root
	built := filepath.Join(root, "bin", "ringbroker")
	if fresh, err := binaryFresh(root, built); err == nil && fresh {
		return built, "bin/ringbroker", nil
	}
	removeStaleBuilds()
	dir, err := os.MkdirTemp("", fmt.Sprintf("ringbroker-harness-%d-", os.Getpid()))
	if err != nil {
		return "", "", fmt.Errorf("cannot create a build directory: %w", err)
	}
	binState.dir = dir
	out := filepath.Join(dir, "ringbroker")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./tools/ringbroker")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("cannot build ./tools/ringbroker in %s: %w\n%s", root, err, b)
	}
	return out, "go build", nil
}

// binaryFresh reports whether bin exists and is newer than every non-test
// Go file, go.mod and go.sum of the module at root (bench/, its own module,
// and hidden, data and build directories are not looked at).
func binaryFresh(root, bin string) (bool, error) {
	st, err := os.Stat(bin)
	if err != nil {
		return false, err
	}
	binTime := st.ModTime()
	errNewer := errors.New("newer")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "data" ||
				name == "bin" || name == "build" || name == "bench" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !(strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) && name != "go.mod" && name != "go.sum" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.ModTime().After(binTime) {
			return errNewer
		}
		return nil
	})
	if errors.Is(err, errNewer) {
		return false, nil
	}
	return err == nil, err
}

// RepoRoot returns the module root: the first directory holding go.mod
// walking up from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot get the working directory: %w", err)
	}
	for range 64 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("cannot find go.mod above the working directory")
}

// Main runs the tests of a package that uses the harness and then removes
// what the harness left for the whole process (the temporary binary, the
// network namespaces of this process):
//
//	func TestMain(m *testing.M) { harness.Main(m) }
//
// Without it everything still works; the temporary binary is then removed
// by the next run's stale clean-up.
func Main(m *testing.M) {
	code := m.Run()
	if binState.dir != "" {
		os.RemoveAll(binState.dir)
	}
	removeNamespaces(func(pid int) bool { return pid == os.Getpid() })
	os.Exit(code)
}

// removeStaleBuilds removes the temporary build directories of harness
// processes that are gone (a test binary killed before Main could clean up).
func removeStaleBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "ringbroker-harness-*-*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), "ringbroker-harness-")
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil && !pidAlive(n) {
			os.RemoveAll(d)
		}
	}
}

// pidAlive reports whether a process with this id exists.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
