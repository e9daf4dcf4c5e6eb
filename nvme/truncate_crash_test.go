package nvme

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Crash tests of TruncateTo: the test binary runs itself as a child
// (TestTruncateCrashChild, switched on by truncChildEnv) on a copy of a
// log the parent built, and the child dies by SIGKILL in the middle of a
// truncation: at a chosen step (Log.truncHook), or, in loop mode, when
// the parent kills it after a random line of its trace of truncations and
// appends. The parent then opens the directory and checks that the log
// is the one before the interrupted operation or the one after it, byte
// for byte, with indexes, producer state and leader epochs to match.

const truncChildEnv = "NVME_TRUNCATE_CRASH_CHILD"

// truncChildSpec tells the child what to do.
type truncChildSpec struct {
	Dir      string
	Mode     string
	Start    int64  // Options.LogStartOffset
	Target   int64  // step mode: the truncation
	KillStep string // step mode: die at the KillN-th time this step is reached
	KillN    int
	Loop     int // loop mode: truncations (each followed by appends)
	Seed     uint64
}

// TestTruncateCrashChild is the child half of TestTruncateCrash; it does
// nothing unless that test started it.
func TestTruncateCrashChild(t *testing.T) {
	raw := os.Getenv(truncChildEnv)
	if raw == "" {
		t.Skip("the child of TestTruncateCrash")
	}
	var spec truncChildSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	o := truncOptions(t, spec.Mode)
	o.LogStartOffset = spec.Start
	o.FileDeleteDelay = time.Hour // retired files are still there, renamed, when it dies
	l, err := Open(spec.Dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Loop == 0 {
		n := 0
		l.truncHook = func(step string) {
			if step == spec.KillStep {
				if n++; n == spec.KillN {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // the signal is on its way
				}
			}
		}
		if err := l.TruncateTo(spec.Target); err != nil {
			t.Fatal(err)
		}
		return // the step was not reached KillN times
	}
	trace := os.NewFile(3, "trace")
	say := func(format string, args ...any) {
		if _, err := fmt.Fprintf(trace, format+"\n", args...); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 1))
	for i := range spec.Loop {
		// Mostly a few batches back from the end, so that the log grows
		// over segments; sometimes anywhere.
		span := l.LogEndOffset() - l.LogStartOffset() + 1
		if rng.IntN(15) > 0 {
			span = min(span, 12)
		}
		target := l.LogEndOffset() - rng.Int64N(span)
		say("T %d", target)
		if err := l.TruncateTo(target); err != nil {
			say("ERR %v", err)
			t.Fatal(err)
		}
		say("t %d", l.LogEndOffset())
		for j := range 1 + rng.IntN(5) {
			seq := int32(0)
			if e := l.Producer(truncPID); e != nil {
				seq = e.LastSequence() + 1
			}
			raw := truncBatch(t, 1000+i*5+j, seq)
			say("A %s", hex.EncodeToString(raw))
			info, err := l.Append(raw, AppendOptions{LeaderEpoch: 4})
			if err != nil {
				say("ERR %v", err)
				t.Fatal(err)
			}
			say("a %d", info.FirstOffset)
		}
	}
	say("END")
}

// truncCrashLog builds the log that the children truncate: buildTruncLog
// closed, with the log start offset moved to the base of segment
// startSeg when it is > 0 (segments below retired). It returns its
// model, leader epochs and log start offset.
func truncCrashLog(t *testing.T, mode string, startSeg int) (string, truncModel, []EpochEntry, int64) {
	dir := t.TempDir()
	l, m := buildTruncLog(t, dir, truncOptions(t, mode))
	if startSeg > 0 {
		if err := l.SetLogStartOffset(l.Segments()[startSeg].BaseOffset); err != nil {
			t.Fatal(err)
		}
	}
	epochs, start := l.LeaderEpochs(), l.LogStartOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, m, epochs, start
}

// runTruncChild runs the child on spec; with trace set it reads the
// child's trace lines and kills it after line killAfter (0: never). It
// returns the trace and whether the child died by SIGKILL.
func runTruncChild(t *testing.T, spec truncChildSpec, killAfter int) ([]string, bool) {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTruncateCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), truncChildEnv+"="+string(b))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	var lines []string
	var r *os.File
	if spec.Loop > 0 {
		var w *os.File
		if r, w, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
		cmd.ExtraFiles = []*os.File{w}
		defer r.Close()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if len(lines) == killAfter {
				cmd.Process.Kill()
			}
		}
	} else if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && ctx.Err() == nil {
			return lines, true
		}
	}
	if err != nil || ctx.Err() != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return lines, false
}

// checkRecovered opens dir after a crash and checks it holds one of the
// models (want, with its epochs wantEpochs), then that appends and a
// reopen work.
func checkRecovered(t *testing.T, dir, mode string, start int64, wants []truncModel, wantEpochs [][]EpochEntry) {
	t.Helper()
	o := truncOptions(t, mode)
	o.LogStartOffset = start
	l := mustOpen(t, dir, o)
	defer func() { l.Close() }()
	k := slices.IndexFunc(wants, func(m truncModel) bool { return m.end() == l.LogEndOffset() })
	if k < 0 {
		var ends []int64
		for _, m := range wants {
			ends = append(ends, m.end())
		}
		t.Fatalf("recovered log end offset %d, want one of %v", l.LogEndOffset(), ends)
	}
	m := wants[k]
	checkLog(t, l, m)
	if got := l.LeaderEpochs(); !slices.Equal(got, wantEpochs[k]) {
		t.Fatalf("leader epochs %v, want %v", got, wantEpochs[k])
	}
	if _, err := os.Stat(filepath.Join(dir, truncationMarkerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("truncation marker left after Open: %v", err)
	}
	for i := range 8 {
		appendTrunc(t, l, &m, 500+i, 6)
	}
	checkLog(t, l, m)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkDirSegments(t, dir)
	l = mustOpen(t, dir, o)
	checkLog(t, l, m)
}

// epochsBelow is es without the entries that start at or past end.
func epochsBelow(es []EpochEntry, end int64) []EpochEntry {
	return slices.DeleteFunc(slices.Clone(es), func(e EpochEntry) bool { return e.StartOffset >= end })
}

func TestTruncateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, mode := range truncModes {
		t.Run(mode+"/cut", func(t *testing.T) {
			src, m, epochs, start := truncCrashLog(t, mode, 0)
			target := batchBase(m.batches[9]) + 1 // inside a batch of 5 records, several segments below the end
			want := m.cut(target)
			steps := []string{truncStepBefore, truncStepMarker, truncStepRetired, truncStepCut, truncStepIndexes,
				truncStepProducers, truncStepEpochs, truncStepDone}
			for _, step := range steps {
				for n := 1; ; n++ {
					dir := t.TempDir()
					copyDir(t, src, dir)
					_, killed := runTruncChild(t, truncChildSpec{Dir: dir, Mode: mode, Target: target, KillStep: step, KillN: n}, 0)
					if !killed {
						if n == 1 || step != truncStepRetired {
							t.Fatalf("step %s never reached", step)
						}
						break
					}
					t.Logf("killed at %s #%d", step, n)
					if step == truncStepBefore {
						checkRecovered(t, dir, mode, start, []truncModel{m}, [][]EpochEntry{epochs})
					} else {
						checkRecovered(t, dir, mode, start, []truncModel{want}, [][]EpochEntry{epochsBelow(epochs, want.end())})
					}
					if step != truncStepRetired {
						break
					}
				}
			}
		})
		t.Run(mode+"/full", func(t *testing.T) {
			src, _, epochs, start := truncCrashLog(t, mode, 3)
			target := start - 5
			want := truncModel{start: target}
			steps := []string{truncStepBefore, truncStepMarker, truncStepRetired, truncStepCreated,
				truncStepProducers, truncStepEpochs, truncStepDone}
			for _, step := range steps {
				for n := 1; ; n++ {
					dir := t.TempDir()
					copyDir(t, src, dir)
					_, killed := runTruncChild(t, truncChildSpec{Dir: dir, Mode: mode, Start: start, Target: target, KillStep: step, KillN: n}, 0)
					if !killed {
						if n == 1 || step != truncStepRetired {
							t.Fatalf("step %s never reached", step)
						}
						break
					}
					if step == truncStepBefore {
						o := truncOptions(t, mode)
						o.LogStartOffset = start
						l := mustOpen(t, dir, o)
						if l.LogStartOffset() != start || !slices.Equal(l.LeaderEpochs(), epochs) {
							t.Fatalf("log start %d epochs %v, want %d %v", l.LogStartOffset(), l.LeaderEpochs(), start, epochs)
						}
						l.Close()
						break
					}
					checkRecovered(t, dir, mode, target, []truncModel{want}, [][]EpochEntry{nil})
					if step != truncStepRetired {
						break
					}
				}
			}
		})
		t.Run(mode+"/random", func(t *testing.T) {
			src, m0, epochs0, start := truncCrashLog(t, mode, 0)
			const loops = 30
			for run := range 4 {
				seed := uint64(run*7919 + len(mode))
				dir := t.TempDir()
				copyDir(t, src, dir)
				// About 8 trace lines per loop: kill after one of them.
				killAfter := 1 + rand.New(rand.NewPCG(seed, 2)).IntN(loops*7)
				lines, killed := runTruncChild(t, truncChildSpec{Dir: dir, Mode: mode, Start: start, Loop: loops, Seed: seed}, killAfter)
				m, epochs := m0, epochs0
				var after truncModel // the model once the pending operation is done
				afterEpochs := epochs
				pending, done := false, false
				var raw []byte
				for _, line := range lines {
					f := strings.Fields(line)
					switch f[0] {
					case "T":
						target, _ := strconv.ParseInt(f[1], 10, 64)
						after = m.cut(target)
						afterEpochs = epochsBelow(epochs, after.end())
						if target >= m.end() {
							after, afterEpochs = m, epochs
						}
						pending = true
					case "t":
						end, _ := strconv.ParseInt(f[1], 10, 64)
						if end != after.end() {
							t.Fatalf("child truncated to %d, model says %d", end, after.end())
						}
						m, epochs, pending = after, afterEpochs, false
					case "A":
						var err error
						if raw, err = hex.DecodeString(f[1]); err != nil {
							t.Fatal(err)
						}
						after = truncModel{start: m.start, batches: slices.Clone(m.batches)}
						after.add(raw, 4)
						afterEpochs, pending = epochs, true
					case "a":
						first, _ := strconv.ParseInt(f[1], 10, 64)
						if first != batchBase(after.batches[len(after.batches)-1]) {
							t.Fatalf("child appended at %d, model says %d", first, batchBase(after.batches[len(after.batches)-1]))
						}
						m, pending = after, false
					case "END":
						done = true
					case "ERR":
						t.Fatalf("child: %s", line)
					}
				}
				if !killed && !done {
					t.Fatalf("child neither killed nor done after %d lines", len(lines))
				}
				t.Logf("run %d: killed %v after line %d of %d (%.20q), pending %v, log end %d", run, killed, killAfter, len(lines), lines[len(lines)-1], pending, m.end())
				wants, wantEpochs := []truncModel{m}, [][]EpochEntry{epochs}
				if pending {
					wants, wantEpochs = append(wants, after), append(wantEpochs, afterEpochs)
				}
				checkRecovered(t, dir, mode, start, wants, wantEpochs)
			}
		})
	}
}
