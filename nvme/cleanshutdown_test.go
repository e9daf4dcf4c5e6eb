package nvme

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// corruptPayload flips one byte inside the last batch of the active
// segment, past its header, so that only a CRC32C check can see it.
func corruptPayload(t *testing.T, l *Log, dir string) {
	t.Helper()
	s := l.Segments()[len(l.Segments())-1]
	path := filepath.Join(dir, segmentFileName(s.BaseOffset, logSuffix))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(0)
	var last int64
	for pos < s.Size {
		last = pos
		pos += decodeHeader(b[pos:]).Size()
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := last + BatchHeaderSize + 2
	if _, err := f.WriteAt([]byte{b[at] ^ 0xff}, at); err != nil {
		t.Fatal(err)
	}
}

// TestCleanShutdownSkipsActiveSegmentScan: after a clean Close the last
// segment is loaded from its indexes (a payload corruption that only a
// CRC32C scan finds goes unseen), Open removes the marker, and without the
// marker (a crash) the same log is checked batch by batch and cut at the
// corrupt batch.
func TestCleanShutdownSkipsActiveSegmentScan(t *testing.T) {
	for _, mode := range []string{IOModeBuffered, IOModeDirect} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(t)
			o.IOMode = mode
			o.SegmentBytes = 64 << 10
			o.IndexIntervalBytes = 512
			l := mustOpen(t, dir, o)
			appendN(t, l, 120, 3, 700, 1_000)
			leo := l.LogEndOffset()
			if len(l.Segments()) < 2 {
				t.Fatalf("want several segments, have %d", len(l.Segments()))
			}
			if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err == nil {
				t.Fatal("marker present while the log is open")
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatalf("no marker after a clean Close: %v", err)
			}
			corruptPayload(t, l, dir)

			l = mustOpen(t, dir, o)
			if got := l.LogEndOffset(); got != leo {
				t.Fatalf("clean reopen: log end offset %d, want %d (the active segment was rescanned)", got, leo)
			}
			if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err == nil {
				t.Fatal("Open left the marker behind")
			}
			// A crash now: no Close, so no marker; the next Open checks
			// every batch of the active segment and drops the bad one.
			l.closeSegments()
			l = mustOpen(t, dir, o)
			defer l.Close()
			if got := l.LogEndOffset(); got != leo-3 {
				t.Fatalf("reopen after a crash: log end offset %d, want %d (corrupt last batch dropped)", got, leo-3)
			}
		})
	}
}

// TestCleanReopenMatchesRecovery: a log reopened after a clean Close and
// the same log recovered from its batches hold the same offsets, indexes
// (but the final time entry Close adds, as Kafka's does), first-batch
// timestamp, and take appends, reads and segment.ms rolls alike.
func TestCleanReopenMatchesRecovery(t *testing.T) {
	for _, mode := range []string{IOModeBuffered, IOModeDirect} {
		t.Run(mode, func(t *testing.T) {
			clk := &fakeClock{t: time.UnixMilli(1_000_000)}
			base := t.TempDir()
			o := testOptions(t)
			o.IOMode = mode
			o.SegmentBytes = 256 << 10
			o.IndexIntervalBytes = 1024
			o.SegmentMs = 60_000
			o.Now = clk.now
			dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
			var want []byte
			for _, dir := range []string{dirA, dirB} {
				l := mustOpen(t, dir, o)
				want = bytes.Join(appendN(t, l, 150, 2, 900, 1_000_000), nil)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			os.Remove(filepath.Join(dirB, CleanShutdownFile))
			a, b := mustOpen(t, dirA, o), mustOpen(t, dirB, o)
			defer a.Close()
			defer b.Close()
			for i, s := range a.segs {
				r := b.segs[i]
				at := s.timeIdx
				if i == len(a.segs)-1 && len(at) == len(r.timeIdx)+1 {
					at = at[:len(at)-1]
				}
				if s.base != r.base || s.next != r.next || s.size != r.size || s.maxTs != r.maxTs ||
					!slices.Equal(s.offIdx, r.offIdx) || !slices.Equal(at, r.timeIdx) {
					t.Fatalf("segment %d differs: clean %+v, recovered %+v", i, *s, *r)
				}
			}
			if fa, fb := a.active().firstTs, b.active().firstTs; fa != fb || fa < 0 {
				t.Fatalf("first batch timestamp: clean %d, recovered %d", fa, fb)
			}
			for _, l := range []*Log{a, b} {
				want := append(slices.Clone(want), bytes.Join(appendN(t, l, 40, 2, 900, 1_000_150), nil)...)
				res, err := l.Read(0, 1<<30, 1<<62, true)
				if err != nil || !bytes.Equal(readChunks(t, res), want) {
					t.Fatalf("read back after appends differs: %v", err)
				}
			}
			// segment.ms counts from the active segment's first batch.
			clk.advance(2 * time.Minute)
			for _, l := range []*Log{a, b} {
				n := len(l.Segments())
				appendN(t, l, 1, 1, 10, 1_000_000+61_000)
				if got := len(l.Segments()); got != n+1 {
					t.Fatalf("segment.ms: %d segments, want %d", got, n+1)
				}
			}
		})
	}
}

// TestCloseWritesEmptyProducerSnapshot: Close leaves a producer snapshot
// at the log end offset even without idempotent producers, so the next
// Open replays no batch headers.
func TestCloseWritesEmptyProducerSnapshot(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOptions(t))
	appendN(t, l, 5, 2, 10, 1)
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentFileName(leo, snapshotSuffix))); err != nil {
		t.Fatalf("no snapshot at the log end offset %d: %v", leo, err)
	}
}

// TestFailedLogLeavesNoMarker: a log taken offline by an I/O error closes
// without the marker, so its next Open recovers the active segment.
func TestFailedLogLeavesNoMarker(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOptions(t))
	appendN(t, l, 5, 2, 10, 1)
	l.fail(os.ErrInvalid)
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err == nil {
		t.Fatal("a failed log left the clean-shutdown marker")
	}
}

// TestFailedOpenKeepsCleanReopen: an Open that fails after the active
// segment was reopened (here a leader-epoch checkpoint it cannot parse;
// in the field a descriptor limit reached reading the producer snapshot)
// leaves the files as they were: the preallocated tail is trimmed again,
// the marker stays, and the next Open, once the cause is gone, trusts the
// segment instead of checking every batch. Before, a direct-mode Open
// left its preallocated zeros behind, and the next one took them for a
// bad tail and recovered the segment in full (found by the integration
// test TestStartOutOfDescriptorsKeepsMarkers).
func TestFailedOpenKeepsCleanReopen(t *testing.T) {
	for _, mode := range []string{IOModeBuffered, IOModeDirect} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(t)
			o.IOMode = mode
			o.Preallocate = false
			o.SegmentBytes = 1 << 20
			var logs bytes.Buffer
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			l := mustOpen(t, dir, o)
			appendN(t, l, 30, 2, 300, 1_000)
			if err := l.AssignEpoch(3, 0); err != nil {
				t.Fatal(err)
			}
			leo := l.LogEndOffset()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			active := filepath.Join(dir, segmentFileName(0, logSuffix))
			st, err := os.Stat(active)
			if err != nil {
				t.Fatal(err)
			}
			ckpt := filepath.Join(dir, EpochCheckpointFile)
			good, err := os.ReadFile(ckpt)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ckpt, []byte("not a checkpoint\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(dir, o); err == nil {
				t.Fatal("Open with an unreadable epoch checkpoint succeeded")
			}
			if st2, err := os.Stat(active); err != nil || st2.Size() != st.Size() {
				t.Fatalf("active segment is %d bytes after the failed Open, %d before (%v)", st2.Size(), st.Size(), err)
			}
			if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatalf("marker gone after the failed Open: %v", err)
			}
			if err := os.WriteFile(ckpt, good, 0o644); err != nil {
				t.Fatal(err)
			}
			logs.Reset()
			l = mustOpen(t, dir, o)
			defer l.Close()
			if l.LogEndOffset() != leo {
				t.Fatalf("log end offset %d after the failed Open, want %d", l.LogEndOffset(), leo)
			}
			if s := logs.String(); strings.Contains(s, "recover") || strings.Contains(s, "truncated") {
				t.Fatalf("the reopen after the failed Open checked the active segment:\n%s", s)
			}
		})
	}
}
