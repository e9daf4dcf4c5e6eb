package arch

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxGoFileLines is the most lines a non-test Go file may have (issue 39;
// CONVENTIONS.md: one concept per file).
const maxGoFileLines = 1200

// TestGoFileLines fails for every non-test Go file of the repository,
// bench/ (its own module) included, with more than maxGoFileLines lines.
func TestGoFileLines(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("cannot find the repository root at %s: %v", root, err)
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if n := bytes.Count(data, []byte("\n")); n > maxGoFileLines {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines, more than %d: split it by concept", rel, n, maxGoFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("cannot walk %s: %v", root, err)
	}
	if files < 100 {
		t.Fatalf("found only %d Go files under %s: the walk is broken", files, root)
	}
}
