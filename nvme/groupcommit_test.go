package nvme

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestGroupCommitterConcurrent(t *testing.T) {
	dir := t.TempDir()
	var files []*os.File
	for i := 0; i < 4; i++ {
		f, err := os.Create(filepath.Join(dir, "f"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	var real atomic.Int64
	g := newGroupCommitter(discardLogger(), func(f *os.File) error {
		real.Add(1)
		return fdatasync(f)
	})
	const goroutines, perG = 16, 200
	var wg sync.WaitGroup
	var done atomic.Int64
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < perG; j++ {
				f := files[(i+j)%len(files)]
				f.Write([]byte("x"))
				ch := make(chan error, 1)
				g.Sync(f, func(err error) { ch <- err })
				if err := <-ch; err != nil {
					t.Error(err)
				}
				done.Add(1)
			}
		}(i)
	}
	wg.Wait()
	g.Close()
	st := g.Stats()
	if done.Load() != goroutines*perG || st.Requests != goroutines*perG {
		t.Fatalf("served %d, stats %+v", done.Load(), st)
	}
	if st.Syncs != uint64(real.Load()) || st.Syncs > st.Requests {
		t.Fatalf("stats %+v, real syncs %d", st, real.Load())
	}
	t.Logf("requests %d flushes %d fdatasyncs %d", st.Requests, st.Flushes, st.Syncs)
	called := false
	g.Sync(files[0], func(err error) { called = errors.Is(err, ErrLogClosed) })
	if !called {
		t.Fatal("Sync after Close must fail at once with ErrLogClosed")
	}
}

func TestGroupCommitterSharesSync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	var calls atomic.Int64
	g := newGroupCommitter(discardLogger(), func(*os.File) error {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		return nil
	})
	defer g.Close()
	results := make(chan error, 11)
	g.Sync(f, func(err error) { results <- err })
	<-entered // first flush is in fdatasync; queue ten more behind it
	for i := 0; i < 10; i++ {
		g.Sync(f, func(err error) { results <- err })
	}
	close(release)
	for i := 0; i < 11; i++ {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if c := calls.Load(); c != 2 {
		t.Fatalf("%d fdatasyncs for two flush windows", c)
	}
}

// TestGroupCommitterReportsErrors: a failed fdatasync is reported to the
// request and counted; a file closed before its turn (its log closed, and
// synced it, meanwhile) is answered ErrLogClosed and is no failure.
func TestGroupCommitterReportsErrors(t *testing.T) {
	g := NewGroupCommitterFunc(discardLogger(), func(*os.File) error { return errors.New("EIO") })
	defer g.Close()
	f, _ := os.Create(filepath.Join(t.TempDir(), "f"))
	defer f.Close()
	ch := make(chan error, 1)
	g.Sync(f, func(err error) { ch <- err })
	if err := <-ch; err == nil || errors.Is(err, ErrLogClosed) {
		t.Fatalf("failed fdatasync answered %v", err)
	}
	if st := g.Stats(); st.SyncFails != 1 {
		t.Fatalf("stats %+v: want 1 failure", st)
	}

	closed, _ := os.Create(filepath.Join(t.TempDir(), "g"))
	closed.Close()
	g2 := NewGroupCommitter(discardLogger())
	defer g2.Close()
	g2.Sync(closed, func(err error) { ch <- err })
	if err := <-ch; !errors.Is(err, ErrLogClosed) || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("fdatasync of a closed file answered %v, want ErrLogClosed", err)
	}
	if st := g2.Stats(); st.SyncFails != 0 || st.Syncs != 0 {
		t.Fatalf("stats %+v: a closed file is no failed sync", st)
	}
	g2.Sync(nil, func(err error) { ch <- err })
	if err := <-ch; !errors.Is(err, ErrLogClosed) {
		t.Fatalf("Sync(nil) answered %v, want ErrLogClosed", err)
	}
}
