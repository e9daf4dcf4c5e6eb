package arch

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// importRule is one row of the import-direction table in
// docs/architecture.md: the module packages that the packages matching from
// may depend on, directly or through other packages. Paths are relative to
// the module root; "x/..." matches x and every package below it.
type importRule struct {
	from string
	may  []string
}

// lower is what every package above the storage layer may depend on.
var lower = []string{"cluster/records", "nvme", "ioring", "numa"}

// concept is the row of a concept package under appliance: itself, wire,
// config and the lower packages, never another concept package.
func concept(name string) importRule {
	return importRule{from: "appliance/" + name + "/...", may: append([]string{"appliance/" + name + "/...", "appliance/wire", "appliance/config"}, lower...)}
}

// applianceMay is everything the appliance root (and tools/...) may depend on.
var applianceMay = append([]string{"appliance/...", "cluster/...", "tiering/..."}, lower...)

// importRules mirrors docs/architecture.md, "Import direction". Keep the two
// in step.
var importRules = []importRule{
	{from: "numa"},
	{from: "cluster/records"},
	{from: "ioring", may: []string{"numa"}},
	{from: "nvme", may: []string{"ioring", "numa"}},
	{from: "cluster/...", may: []string{"cluster/...", "nvme", "ioring", "numa"}},
	{from: "tiering/...", may: append([]string{"tiering/..."}, lower...)},
	{from: "appliance/wire", may: lower},
	{from: "appliance/config", may: lower},
	concept("group"),
	concept("txn"),
	concept("share"),
	concept("security"),
	concept("quota"),
	// metadata's controller decides membership with cluster/membership.
	{from: "appliance/metadata/...", may: append(concept("metadata").may, "cluster/membership")},
	concept("cleaner"),
	concept("metrics"),
	// Incremental fetch sessions (KIP-227): a leaf state machine.
	{from: "appliance/fetchsession"},
	// The metadata quorum's wiring: the quorum and the metadata image it
	// replicates; not a concept package (no concept imports it).
	{from: "appliance/controller/...", may: append([]string{"appliance/controller/...", "appliance/metadata/...", "appliance/wire", "appliance/config", "cluster/..."}, lower...)},
	{from: "appliance", may: applianceMay},
	{from: "tools/...", may: append([]string{"tools/..."}, applianceMay...)},
	{from: "bench"},
	{from: "systemd"},
	{from: "tests/...", may: []string{"..."}},
	// Helpers that only tests import (the script runner): the standard
	// library alone.
	{from: "internal/..."},
}

// match reports whether the module-relative package path pkg matches
// pattern ("..." alone matches every package).
func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// ruleFor returns the most specific rule whose from matches pkg: an exact
// path before a pattern, a longer pattern before a shorter one.
func ruleFor(rules []importRule, pkg string) (importRule, bool) {
	best, found, bestLen := importRule{}, false, -1
	for _, r := range rules {
		if !match(r.from, pkg) {
			continue
		}
		n := len(r.from)
		if !strings.HasSuffix(r.from, "/...") {
			n += 1 << 20 // exact paths win
		}
		if n > bestLen {
			best, found, bestLen = r, true, n
		}
	}
	return best, found
}

// checkImports walks g (module-relative package -> module packages it
// imports directly) and returns one message per package that depends,
// directly or not, on a package outside its rule, naming the shortest
// import chain (a chain stops at its first disallowed package), and one per
// package without a rule. Messages are sorted.
func checkImports(g map[string][]string, rules []importRule) []string {
	var bad []string
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		r, ok := ruleFor(rules, p)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: package not in the import-direction table (docs/architecture.md, importRules)", p))
			continue
		}
		// Breadth first from p, so each dependency's chain is a shortest one.
		parent := map[string]string{p: ""}
		queue := []string{p}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			imps := slices.Clone(g[cur])
			sort.Strings(imps)
			for _, d := range imps {
				if _, seen := parent[d]; seen {
					continue
				}
				parent[d] = cur
				if slices.ContainsFunc(r.may, func(pat string) bool { return match(pat, d) }) {
					queue = append(queue, d)
					continue
				}
				// Not followed further: what d imports is reached through
				// this bad edge, and fixing it removes those chains too.
				chain := []string{d}
				for at := cur; at != ""; at = parent[at] {
					chain = append(chain, at)
				}
				slices.Reverse(chain)
				bad = append(bad, fmt.Sprintf("%s may not depend on %s: %s (allowed: %s)",
					p, d, strings.Join(chain, " -> "), allowed(r)))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func allowed(r importRule) string {
	if len(r.may) == 0 {
		return "no module package"
	}
	return strings.Join(r.may, ", ")
}

// moduleGraph lists the module's packages with `go list` and returns their
// imports of one another, as paths relative to the module root ("." for the
// root package). Test-only imports are not included.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("cannot find the go command to list packages: %v", err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(goBin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cannot run go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	mod := strings.TrimSpace(run("list", "-m"))
	if mod == "" || strings.Contains(mod, "\n") {
		t.Fatalf("cannot tell the main module: go list -m printed %q", mod)
	}
	rel := func(path string) (string, bool) {
		if path == mod {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, mod+"/")
		return r, ok
	}
	g := map[string][]string{}
	out := run("list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", mod+"/...")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		p, ok := rel(f[0])
		if !ok {
			t.Fatalf("go list printed %q, outside module %s", f[0], mod)
		}
		g[p] = nil
		for _, imp := range f[1:] {
			if r, ok := rel(imp); ok {
				g[p] = append(g[p], r)
			}
		}
	}
	return g
}

// TestImportDirection fails when a package of the module depends on one
// that docs/architecture.md does not allow it (lower packages importing
// higher ones, concept packages importing each other), naming the chain.
func TestImportDirection(t *testing.T) {
	g := moduleGraph(t)
	for _, want := range []string{"ioring", "nvme", "numa", "appliance", "tools/ringbroker"} {
		if _, ok := g[want]; !ok {
			t.Fatalf("go list did not list %s (got %d packages): the graph is incomplete", want, len(g))
		}
	}
	for _, msg := range checkImports(g, importRules) {
		t.Error(msg)
	}
}
