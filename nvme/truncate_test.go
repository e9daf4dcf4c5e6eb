package nvme

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

var truncModes = []string{IOModeBuffered, IOModeDirect}

// buildTruncLog opens a log in dir and appends 60 batches over three
// leader epochs (1 from 0, 2 and 4 later), across several segments.
func buildTruncLog(t *testing.T, dir string, o Options) (*Log, truncModel) {
	t.Helper()
	l := mustOpen(t, dir, o)
	var m truncModel
	for i, epoch := range []int32{1, 2, 4} {
		if err := l.AssignEpoch(epoch, l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		for j := range 20 {
			appendTrunc(t, l, &m, i*20+j, epoch)
		}
	}
	if len(l.Segments()) < 6 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	return l, m
}

func TestTruncateTo(t *testing.T) {
	type prepared struct {
		target    int64
		want      truncModel
		wantStart int64
		full      bool
	}
	batch := func(m truncModel, i int) []byte { return m.batches[i] }
	cases := []struct {
		name string
		prep func(t *testing.T, l *Log, m truncModel) prepared
	}{
		{"inside a batch", func(t *testing.T, l *Log, m truncModel) prepared {
			b := batch(m, 34) // 34%5+1 = 5 records
			return prepared{target: batchBase(b) + 2, want: m.cut(batchBase(b) + 2)}
		}},
		{"batch boundary", func(t *testing.T, l *Log, m truncModel) prepared {
			return prepared{target: batchBase(batch(m, 40)), want: m.cut(batchBase(batch(m, 40)))}
		}},
		{"last batch", func(t *testing.T, l *Log, m truncModel) prepared {
			b := batch(m, len(m.batches)-1)
			return prepared{target: batchLast(b), want: m.cut(batchLast(b))}
		}},
		{"across segments", func(t *testing.T, l *Log, m truncModel) prepared {
			return prepared{target: batchBase(batch(m, 6)) + 1, want: m.cut(batchBase(batch(m, 6)) + 1)}
		}},
		{"segment base", func(t *testing.T, l *Log, m truncModel) prepared {
			base := l.Segments()[3].BaseOffset
			return prepared{target: base, want: m.cut(base)}
		}},
		{"at the start", func(t *testing.T, l *Log, m truncModel) prepared {
			return prepared{target: 0, want: m.cut(0)}
		}},
		{"no-op at the end", func(t *testing.T, l *Log, m truncModel) prepared {
			return prepared{target: m.end(), want: m}
		}},
		{"no-op above the end", func(t *testing.T, l *Log, m truncModel) prepared {
			return prepared{target: m.end() + 1000, want: m}
		}},
		{"below the log start, in the first segment", func(t *testing.T, l *Log, m truncModel) prepared {
			segs := l.Segments()
			if err := l.SetLogStartOffset(segs[2].BaseOffset + 3); err != nil {
				t.Fatal(err)
			}
			target := l.Segments()[0].BaseOffset + 1
			want := m.cut(target)
			return prepared{target: target, want: want, wantStart: want.end()}
		}},
		{"below the first segment: full", func(t *testing.T, l *Log, m truncModel) prepared {
			segs := l.Segments()
			if err := l.SetLogStartOffset(segs[3].BaseOffset); err != nil {
				t.Fatal(err)
			}
			target := l.Segments()[0].BaseOffset - 5
			return prepared{target: target, want: truncModel{start: target}, wantStart: target, full: true}
		}},
	}
	for _, mode := range append(truncModes, truncModePreallocated) {
		for _, c := range cases {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				o := truncOptions(t, mode)
				l, m := buildTruncLog(t, dir, o)
				defer func() { l.Close() }()
				p := c.prep(t, l, m)
				start := l.LogStartOffset()
				epochs := slices.DeleteFunc(l.LeaderEpochs(), func(e EpochEntry) bool { return e.StartOffset >= p.want.end() || p.full })
				if err := l.TruncateTo(p.target); err != nil {
					t.Fatalf("TruncateTo(%d): %v", p.target, err)
				}
				if p.wantStart == 0 {
					p.wantStart = min(start, p.want.end())
				}
				if got := l.LogStartOffset(); got != p.wantStart {
					t.Fatalf("log start offset %d, want %d", got, p.wantStart)
				}
				checkLog(t, l, p.want)
				if got := l.LeaderEpochs(); !slices.Equal(got, epochs) {
					t.Fatalf("leader epochs %v, want %v", got, epochs)
				}
				if _, err := os.Stat(filepath.Join(dir, truncationMarkerFile)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("truncation marker left: %v", err)
				}
				for _, off := range l.snapshotOffsets() {
					if off > l.LogEndOffset() {
						t.Fatalf("producer snapshot %d above the log end %d", off, l.LogEndOffset())
					}
				}
				if st := l.Segments(); st[len(st)-1].BaseOffset > l.LogEndOffset() {
					t.Fatalf("active segment %d above the log end %d", st[len(st)-1].BaseOffset, l.LogEndOffset())
				}

				// Appends go on from the new end, the producer's sequence
				// from what the log holds, in a new epoch.
				m = p.want
				if err := l.AssignEpoch(5, l.LogEndOffset()); err != nil {
					t.Fatal(err)
				}
				epochs = l.LeaderEpochs()
				for i := range 25 {
					appendTrunc(t, l, &m, 100+i, 5)
				}
				checkLog(t, l, m)
				firstBase := l.Segments()[0].BaseOffset
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				var onDisk []byte
				for _, b := range m.batches {
					if batchBase(b) >= firstBase {
						onDisk = append(onDisk, b...)
					}
				}
				if got := checkDirSegments(t, dir); !bytes.Equal(got, onDisk) {
					t.Fatalf("segment files hold %d bytes, want %d", len(got), len(onDisk))
				}
				o.LogStartOffset = p.wantStart
				l = mustOpen(t, dir, o)
				checkLog(t, l, m)
				if got := l.LeaderEpochs(); !slices.Equal(got, epochs) {
					t.Fatalf("leader epochs after reopen %v, want %v", got, epochs)
				}
				appendTrunc(t, l, &m, 200, 5)
				appendTrunc(t, l, &m, 201, 5)
				checkLog(t, l, m)
			})
		}
	}
}

// TestTruncateToErrors: a negative offset is refused and changes nothing;
// a closed log answers ErrLogClosed.
func TestTruncateToErrors(t *testing.T) {
	l, m := buildTruncLog(t, t.TempDir(), truncOptions(t, IOModeBuffered))
	if err := l.TruncateTo(-1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("TruncateTo(-1): %v, want ErrOffsetOutOfRange", err)
	}
	checkLog(t, l, m)
	l.Close()
	if err := l.TruncateTo(0); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("TruncateTo after Close: %v, want ErrLogClosed", err)
	}
}

// TestTruncateNoOpDropsEpochAtEnd: truncating at the end drops an epoch
// entry that starts there (Kafka: a leader that lost its leadership
// before appending in its epoch).
func TestTruncateNoOpDropsEpochAtEnd(t *testing.T) {
	l, _ := buildTruncLog(t, t.TempDir(), truncOptions(t, IOModeBuffered))
	defer l.Close()
	before := l.LeaderEpochs()
	if err := l.AssignEpoch(9, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochs(); !slices.Equal(got, before) {
		t.Fatalf("leader epochs %v, want %v", got, before)
	}
}

// TestTruncateTransactions: the transaction index and the last stable
// offset follow a truncation: an abort cut off leaves its transaction
// open again; one kept stays in the index.
func TestTruncateTransactions(t *testing.T) {
	for _, mode := range truncModes {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, truncOptions(t, mode))
			defer func() { l.Close() }()
			mustAppend(t, l, simpleBatch(t, 2, 10, 1_000_000), AppendOptions{}) // 0-1
			mustAppend(t, l, txnBatch(t, 2, 9, 0, 0), AppendOptions{})          // 2-3
			mustAppend(t, l, markerBatch(t, 9, 0, false), AppendOptions{})      // 4: abort
			mustAppend(t, l, txnBatch(t, 2, 11, 0, 0), AppendOptions{})         // 5-6
			mustAppend(t, l, markerBatch(t, 11, 0, false), AppendOptions{})     // 7: abort
			if got := len(l.AbortedTxns(0, 100)); got != 2 {
				t.Fatalf("%d aborted transactions, want 2", got)
			}
			if err := l.TruncateTo(7); err != nil {
				t.Fatal(err)
			}
			if lso := l.LastStableOffset(); lso != 5 {
				t.Fatalf("last stable offset %d, want 5 (producer 11's transaction is open again)", lso)
			}
			ab := l.AbortedTxns(0, 100)
			if len(ab) != 1 || ab[0].ProducerID != 9 || ab[0].LastOffset != 4 {
				t.Fatalf("aborted transactions %+v, want producer 9's at 4", ab)
			}
			mustAppend(t, l, markerBatch(t, 11, 0, true), AppendOptions{}) // 7: commit
			if lso := l.LastStableOffset(); lso != 8 {
				t.Fatalf("last stable offset %d, want 8", lso)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, truncOptions(t, mode))
			if ab := l.AbortedTxns(0, 100); len(ab) != 1 || ab[0].LastOffset != 4 {
				t.Fatalf("aborted transactions after reopen %+v", ab)
			}
		})
	}
}

// TestTruncateTailView: a published tail view forgets the batches cut.
func TestTruncateTailView(t *testing.T) {
	for _, mode := range truncModes {
		t.Run(mode, func(t *testing.T) {
			l, m := buildTruncLog(t, t.TempDir(), truncOptions(t, mode))
			defer l.Close()
			var v TailView
			l.SetTailView(&v)
			last := m.batches[len(m.batches)-1]
			if _, _, ok := v.Read(nil, nil, batchBase(last), 1<<20, 1<<62, true); !ok {
				t.Fatalf("the tail view does not answer for the last batch before the truncation")
			}
			target := batchBase(m.batches[len(m.batches)-3])
			if err := l.TruncateTo(target); err != nil {
				t.Fatal(err)
			}
			if res, _, ok := v.Read(nil, nil, batchBase(last), 1<<20, 1<<62, true); ok && res.Bytes > 0 {
				t.Fatalf("the tail view answers %d bytes at %d after the truncation to %d", res.Bytes, batchBase(last), target)
			}
			if got := l.WrittenEndOffset(); got != target {
				t.Fatalf("written end offset %d, want %d", got, target)
			}
			m = m.cut(target)
			appendTrunc(t, l, &m, 300, 4)
			res, _, ok := v.Read(nil, nil, target, 1<<20, 1<<62, true)
			if !ok || !bytes.Equal(readChunks(t, res), m.batches[len(m.batches)-1]) {
				t.Fatalf("the tail view does not answer the batch appended after the truncation (ok %v)", ok)
			}
			releaseAll(res)
		})
	}
}

func FuzzParseTruncationMarker(f *testing.F) {
	f.Add(appendTruncationMarker(nil, truncationMarker{target: 42}))
	f.Add(appendTruncationMarker(nil, truncationMarker{target: 1 << 40, full: true}))
	f.Add([]byte("0\n-1\ncut\n"))
	f.Add([]byte("1\n5\nfull\n"))
	f.Add([]byte("0\n5\nfull\nextra\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseTruncationMarker(b)
		if err != nil {
			return
		}
		if m.target < 0 {
			t.Fatalf("negative target %d accepted", m.target)
		}
		again, err := parseTruncationMarker(appendTruncationMarker(nil, m))
		if err != nil || again != m {
			t.Fatalf("round trip of %+v: %+v, %v", m, again, err)
		}
	})
}

// TestTruncateRingWrites: in direct mode with a write ring, TruncateTo
// with appends still queued or in flight waits for them, cuts, and the
// appends after it reach the device as valid segments (on disk and
// reopened), the written end offset following.
func TestTruncateRingWrites(t *testing.T) {
	cache, ring := writeRingCache(t, 8*DefaultCacheBlockBytes)
	o := truncOptions(t, IOModeDirect)
	o.Cache = cache
	dir := t.TempDir()
	l := mustOpen(t, dir, o)
	defer func() { l.Close() }()
	var m truncModel
	for i := range 40 {
		appendTrunc(t, l, &m, i, 1)
	}
	if l.WrittenEndOffset() == l.LogEndOffset() && cache.WritesInFlight() == 0 {
		t.Logf("every ring write completed before the truncation")
	}
	target := batchBase(m.batches[33]) + 1
	if err := l.TruncateTo(target); err != nil {
		t.Fatal(err)
	}
	m = m.cut(target)
	if got := l.WrittenEndOffset(); got != m.end() {
		t.Fatalf("written end offset %d after the truncation, want %d", got, m.end())
	}
	for i := range 20 {
		appendTrunc(t, l, &m, 100+i, 2)
	}
	drainWrites(t, cache, ring)
	if got := l.WrittenEndOffset(); got != m.end() {
		t.Fatalf("written end offset %d, want %d", got, m.end())
	}
	checkLog(t, l, m)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := checkDirSegments(t, dir); !bytes.Equal(got, m.bytes()) {
		t.Fatalf("segment files hold %d bytes, want %d", len(got), len(m.bytes()))
	}
	l = mustOpen(t, dir, o)
	checkLog(t, l, m)
}

// TestTruncateStalesCleanJob: a cleaning job prepared before a truncation
// that cut one of the segments it read is refused at commit, and the log
// is as the truncation left it.
func TestTruncateStalesCleanJob(t *testing.T) {
	o := cleanerOptions(t, nil)
	l := mustOpen(t, t.TempDir(), o)
	defer l.Close()
	fillUpdates(t, l, 60, 5, CompressionNone)
	if len(l.Segments()) < 4 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	j, err := l.PrepareClean(CleanerState{}, CleanConfig{})
	if err != nil || j == nil {
		t.Fatalf("PrepareClean: %v %v", j, err)
	}
	if err := j.Run(nil, nil); err != nil {
		t.Fatal(err)
	}
	target := l.Segments()[1].BaseOffset + 1
	if err := l.TruncateTo(target); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	if _, err := l.CommitClean(j); !errors.Is(err, ErrCleanStale) {
		t.Fatalf("CommitClean after TruncateTo: %v, want ErrCleanStale", err)
	}
	if l.LogEndOffset() != end || end > target {
		t.Fatalf("log end %d after the refused commit, %d after the truncation to %d", l.LogEndOffset(), end, target)
	}
	checkIndexes(t, l)
}

// TestTruncationMarkerUnreadable: a marker that does not parse fails Open
// rather than guess which end the log should have.
func TestTruncationMarkerUnreadable(t *testing.T) {
	dir := t.TempDir()
	l, _ := buildTruncLog(t, dir, truncOptions(t, IOModeBuffered))
	l.Close()
	if err := os.WriteFile(filepath.Join(dir, truncationMarkerFile), []byte("0\nx\ncut\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(dir, truncOptions(t, IOModeBuffered)); err == nil {
		l.Close()
		t.Fatalf("Open succeeded with an unreadable truncation marker")
	}
}

// TestTruncateIOErrorFinishedByOpen: an fdatasync that fails in the middle
// of a truncation (the injected EIO on the cut .log) takes the log
// offline; the next Open finishes the truncation from its marker.
func TestTruncateIOErrorFinishedByOpen(t *testing.T) {
	for _, mode := range truncModes {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			inj := &injector{kind: faultEIOSync}
			o := truncOptions(t, mode)
			l, err := openLog(dir, o, inj.open)
			if err != nil {
				t.Fatal(err)
			}
			var m truncModel
			for i := range 40 {
				appendTrunc(t, l, &m, i, 1)
			}
			target := batchBase(m.batches[12]) + 1
			inj.armed = true
			if err := l.TruncateTo(target); !errors.Is(err, ErrLogClosed) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("TruncateTo with a failing fdatasync: %v, want ErrLogClosed wrapping EIO", err)
			}
			if inj.hits == 0 {
				t.Fatal("fault never injected")
			}
			l.Close()
			inj.armed = false
			l = mustOpen(t, dir, o)
			defer l.Close()
			checkLog(t, l, m.cut(target))
		})
	}
}
