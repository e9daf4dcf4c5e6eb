package scripttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBlocks(t *testing.T) {
	got := Blocks("# c\nadd 1\nadd 2\n----\n3\n\n\nshow\n----\n\nnoop\n----\n")
	if len(got) != 3 {
		t.Fatalf("%d blocks: %+v", len(got), got)
	}
	if got[0].Line != 1 || len(got[0].Commands) != 3 || got[0].Want != "3" {
		t.Fatalf("block 0: %+v", got[0])
	}
	if got[1].Line != 8 || got[1].Commands[0] != "show" || got[1].Want != "" {
		t.Fatalf("block 1: %+v", got[1])
	}
	if got[2].Commands[0] != "noop" {
		t.Fatalf("block 2: %+v", got[2])
	}
}

// adder sums "add N" lines and prints the sum on "sum".
type adder struct {
	sum int
	out strings.Builder
}

func (a *adder) Exec(t *testing.T, line string) {
	var n int
	switch {
	case line == "sum":
		fmt.Fprintf(&a.out, "%d\n", a.sum)
	case strings.HasPrefix(line, "add "):
		if _, err := fmt.Sscan(line[4:], &n); err != nil {
			t.Fatal(err)
		}
		a.sum += n
	default:
		t.Fatalf("unknown command %q", line)
	}
}

func (a *adder) Output() string { s := a.out.String(); a.out.Reset(); return s }

// TestCheck: a block whose output differs is reported with its line and
// both outputs, a matching one is not, and the rewritten script holds the
// output the commands gave.
func TestCheck(t *testing.T) {
	script := "add 2\nadd 3\nsum\n----\n6\n\n# ok\nsum\n----\n5\n"
	rewritten, mm := Check(t, script, &adder{})
	if len(mm) != 1 || mm[0].Line != 1 || mm[0].Got != "5" || mm[0].Want != "6" {
		t.Fatalf("mismatches %+v", mm)
	}
	if want := "add 2\nadd 3\nsum\n----\n5\n\n# ok\nsum\n----\n5\n"; rewritten != want {
		t.Fatalf("rewritten %q, want %q", rewritten, want)
	}
}

// TestRunRewrites: with SCRIPTTEST_REWRITE=1 Run fixes the file, and a
// run after it passes.
func TestRunRewrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(path, []byte("add 2\nadd 3\nsum\n----\n6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCRIPTTEST_REWRITE", "1")
	Run(t, filepath.Join(dir, "*.txt"), func(*testing.T) Env { return &adder{} })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "add 2\nadd 3\nsum\n----\n5\n" {
		t.Fatalf("rewritten file:\n%s", b)
	}
	t.Setenv("SCRIPTTEST_REWRITE", "")
	Run(t, filepath.Join(dir, "*.txt"), func(*testing.T) Env { return &adder{} })
}
