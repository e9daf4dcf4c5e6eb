// Package scripttest runs state-machine interaction scripts from testdata/
// files, in the data-driven style: each file is a list of blocks separated
// by blank lines, each block some command lines, a "----" line and the
// output those commands must produce:
//
//	# a comment
//	command arg=value ...
//	command ...
//	----
//	expected output
//
// A test supplies an Env per file that runs one command line and gathers
// its output. With SCRIPTTEST_REWRITE=1 in the environment the files are
// rewritten with the output the commands gave, instead of compared (an
// environment variable rather than a flag, so that no flag is declared
// in a package that tests import).
//
// It imports only the standard library and is imported only by tests.
package scripttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env runs the commands of one script file.
type Env interface {
	// Exec runs one command line (never blank, never a comment).
	Exec(t *testing.T, line string)
	// Output returns what the commands since the last call produced, and
	// forgets it.
	Output() string
}

// Run runs every script matching pattern (a filepath.Glob pattern, e.g.
// "testdata/group/*.txt") as a subtest named after the file, with a fresh
// Env from newEnv. It fails when no file matches.
func Run(t *testing.T, pattern string, newEnv func(t *testing.T) Env) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts match %s: %v", pattern, err)
	}
	rewrite := os.Getenv("SCRIPTTEST_REWRITE") == "1"
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rewritten, mismatches := Check(t, string(raw), newEnv(t))
			if !rewrite {
				for _, m := range mismatches {
					t.Errorf("%s:%d:\n%s\ngot:\n%s\nwant:\n%s", path, m.Line, m.Commands, m.Got, m.Want)
				}
			}
			if rewrite {
				if err := os.WriteFile(path, []byte(rewritten), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Mismatch is a block whose commands did not give the expected output.
type Mismatch struct {
	Line      int
	Commands  string
	Got, Want string
}

// Check runs script's blocks on env and returns the script with the
// output the commands gave in place of the expected one, and the blocks
// whose output differed.
func Check(t *testing.T, script string, env Env) (rewritten string, mismatches []Mismatch) {
	t.Helper()
	var w strings.Builder
	for _, blk := range Blocks(script) {
		for _, line := range blk.Commands {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			env.Exec(t, line)
		}
		got := strings.TrimSpace(env.Output())
		cmds := strings.Join(blk.Commands, "\n")
		w.WriteString(cmds + "\n----\n")
		if got != "" {
			w.WriteString(got + "\n")
		}
		w.WriteString("\n")
		if got != blk.Want {
			mismatches = append(mismatches, Mismatch{Line: blk.Line, Commands: cmds, Got: got, Want: blk.Want})
		}
	}
	return strings.TrimSpace(w.String()) + "\n", mismatches
}

// Block is one block of a script.
type Block struct {
	Line     int      // 1-based line of its first command
	Commands []string // the lines before "----", comments included
	Want     string   // the lines after "----", trimmed
}

// Blocks splits a script into its blocks.
func Blocks(script string) []Block {
	var out []Block
	lines := strings.Split(strings.TrimSpace(script), "\n")
	for i := 0; i < len(lines); {
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
		if i == len(lines) {
			break
		}
		b := Block{Line: i + 1}
		for ; i < len(lines) && lines[i] != "----" && strings.TrimSpace(lines[i]) != ""; i++ {
			b.Commands = append(b.Commands, lines[i])
		}
		if i < len(lines) && lines[i] == "----" {
			i++
			var want []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				want = append(want, lines[i])
			}
			b.Want = strings.TrimSpace(strings.Join(want, "\n"))
		}
		out = append(out, b)
	}
	return out
}
