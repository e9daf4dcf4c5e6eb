// Command report turns the raw outputs of one `make compat` run into a
// results file and the README's compatibility matrix.
//
//	report -out tests/compat/results/DATE.json -readme README.md \
//	    -known tests/compat/known_failures.txt SUITE...
//
// Each SUITE is "client|version|suite|kind|file[,file...]"; kind is
// "test2json" (go test -json / go tool test2json output; later files win for
// a test reported twice, as when a run resumes after a panic) or "smoke"
// (lines "PASS name", "FAIL name: why", "SKIP name: why"). Counts are of
// top-level tests; failed lists carry subtests too. A missing or empty file
// counts as one failure named after the file, so a suite that did not run is
// never shown as clean.
//
// known_failures.txt has one line per explained failure or skip:
// "suite-regexp<TAB>test-regexp<TAB>one-line reason", the first matched
// against "client suite" (e.g. "kafka-go root package tests"), both whole. The README block
// between the compat:begin and compat:end markers is replaced with the
// matrix and one line per failure with its reason ("unexplained" when none
// matches).
//
// With -readme-only RESULTS.json it rewrites the README from a results file
// without rereading raw outputs.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Suite is one row of the matrix.
type Suite struct {
	Client   string    `json:"client"`
	Version  string    `json:"version"`
	Suite    string    `json:"suite"`
	Passed   int       `json:"passed"`
	Failed   int       `json:"failed"`
	Skipped  int       `json:"skipped"`
	Failures []Outcome `json:"failures,omitempty"`
	Skips    []Outcome `json:"skips,omitempty"`
}

// Outcome is a failed or skipped test with the reason from known_failures.txt
// ("" when none matched).
type Outcome struct {
	Test   string `json:"test"`
	Reason string `json:"reason,omitempty"`
}

// Results is one run's results file.
type Results struct {
	Date      string  `json:"date"`
	Commit    string  `json:"commit,omitempty"`
	ElapsedS  float64 `json:"elapsed_s,omitempty"`
	Suites    []Suite `json:"suites"`
	TotalFail int     `json:"total_failed"`
}

type known struct {
	suite, test *regexp.Regexp
	reason      string
}

func main() {
	out := flag.String("out", "", "results file to write")
	readme := flag.String("readme", "", "README to update between the compat markers")
	knownPath := flag.String("known", "", "known_failures.txt")
	readmeOnly := flag.String("readme-only", "", "rewrite -readme from this results file and exit")
	commit := flag.String("commit", "", "commit the run tested")
	elapsed := flag.Float64("elapsed", 0, "seconds the run took")
	flag.Parse()
	if *readmeOnly != "" {
		raw, err := os.ReadFile(*readmeOnly)
		check(err)
		var r Results
		check(json.Unmarshal(raw, &r))
		check(writeReadme(*readme, &r))
		return
	}
	ks, err := loadKnown(*knownPath)
	check(err)
	r := Results{Date: time.Now().UTC().Format(time.RFC3339), Commit: *commit, ElapsedS: *elapsed}
	for _, spec := range flag.Args() {
		f := strings.Split(spec, "|")
		if len(f) != 5 {
			check(fmt.Errorf("cannot parse suite %q: want client|version|suite|kind|files", spec))
		}
		s := Suite{Client: f[0], Version: f[1], Suite: f[2]}
		outcomes := map[string]string{}
		var order []string
		for _, file := range strings.Split(f[4], ",") {
			var got map[string]string
			var ord []string
			var err error
			switch f[3] {
			case "test2json":
				got, ord, err = readTest2JSON(file)
			case "smoke":
				got, ord, err = readSmoke(file)
			default:
				err = fmt.Errorf("unknown kind %q", f[3])
			}
			if err != nil || len(got) == 0 {
				name := "(no results from " + file + ")"
				got, ord = map[string]string{name: "fail"}, []string{name}
			}
			for _, t := range ord {
				if _, seen := outcomes[t]; !seen {
					order = append(order, t)
				}
				outcomes[t] = got[t]
			}
		}
		for _, t := range order {
			top := !strings.Contains(t, "/")
			switch outcomes[t] {
			case "pass":
				if top {
					s.Passed++
				}
			case "skip":
				if top {
					s.Skipped++
					s.Skips = append(s.Skips, Outcome{Test: t, Reason: reason(ks, s.Client+" "+s.Suite, t)})
				}
			case "fail":
				if top {
					s.Failed++
				}
				s.Failures = append(s.Failures, Outcome{Test: t, Reason: reason(ks, s.Client+" "+s.Suite, t)})
			}
		}
		r.TotalFail += s.Failed
		r.Suites = append(r.Suites, s)
	}
	raw, err := json.MarshalIndent(&r, "", "  ")
	check(err)
	if *out != "" {
		check(os.WriteFile(*out, append(raw, '\n'), 0o644))
	}
	if *readme != "" {
		check(writeReadme(*readme, &r))
	}
	for _, s := range r.Suites {
		fmt.Printf("%-16s %-8s %-34s passed %4d  failed %3d  skipped %3d\n", s.Client, s.Version, s.Suite, s.Passed, s.Failed, s.Skipped)
		for _, f := range s.Failures {
			fmt.Printf("    FAIL %s: %s\n", f.Test, orUnexplained(f.Reason))
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func orUnexplained(s string) string {
	if s == "" {
		return "unexplained"
	}
	return s
}

func loadKnown(path string) ([]known, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read known failures %q: %w", path, err)
	}
	var ks []known
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want suite<TAB>test<TAB>reason", path, i+1)
		}
		s, err := regexp.Compile("^(?:" + f[0] + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		t, err := regexp.Compile("^(?:" + f[1] + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		ks = append(ks, known{s, t, f[2]})
	}
	return ks, nil
}

func reason(ks []known, suite, test string) string {
	for _, k := range ks {
		if k.suite.MatchString(suite) && k.test.MatchString(test) {
			return k.reason
		}
	}
	return ""
}

// readTest2JSON returns the last outcome (pass, fail, skip) of each test,
// names prefixed with the package's last path elements when the stream
// holds several packages, and a package that failed without a failing
// test (build error, panic outside a test) as "PKG (package)".
func readTest2JSON(path string) (map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	type event struct {
		Action, Package, Test string
	}
	var evs []event
	pkgs := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			evs = append(evs, e)
			if e.Package != "" {
				pkgs[e.Package] = true
			}
		}
	}
	multi := len(pkgs) > 1
	out := map[string]string{}
	var order []string
	pkgFailedTests := map[string]bool{}
	set := func(name, action string) {
		if _, ok := out[name]; !ok {
			order = append(order, name)
		}
		out[name] = action
	}
	for _, e := range evs {
		if e.Test == "" {
			continue
		}
		name := e.Test
		if multi {
			name = shortPkg(e.Package) + "." + name
		}
		if e.Action == "fail" {
			pkgFailedTests[e.Package] = true
		}
		set(name, e.Action)
	}
	for _, e := range evs {
		if e.Test == "" && e.Action == "fail" && !pkgFailedTests[e.Package] {
			set(shortPkg(e.Package)+" (package)", "fail")
		}
	}
	return out, order, sc.Err()
}

// shortPkg drops the module path: github.com/segmentio/kafka-go/sasl → sasl,
// the module root → its last element.
func shortPkg(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 3 {
		return strings.Join(parts[3:], "/")
	}
	return parts[len(parts)-1]
}

func readSmoke(path string) (map[string]string, []string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	var order []string
	for _, line := range strings.Split(string(raw), "\n") {
		word, rest, _ := strings.Cut(line, " ")
		action := map[string]string{"PASS": "pass", "FAIL": "fail", "SKIP": "skip"}[word]
		if action == "" || rest == "" {
			continue
		}
		name, _, _ := strings.Cut(rest, ":")
		name = strings.ReplaceAll(name, "/", "-")
		if _, ok := out[name]; !ok {
			order = append(order, name)
		}
		out[name] = action
	}
	return out, order, nil
}

const (
	beginMarker = "<!-- compat:begin (generated by tests/compat/report; do not edit) -->"
	endMarker   = "<!-- compat:end -->"
)

func writeReadme(path string, r *Results) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(raw)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("cannot find the compat markers in %s", path)
	}
	var b strings.Builder
	b.WriteString(beginMarker + "\n")
	fmt.Fprintf(&b, "Last run %s", r.Date[:10])
	if r.Commit != "" {
		fmt.Fprintf(&b, " on %s", r.Commit)
	}
	if r.ElapsedS > 0 {
		fmt.Fprintf(&b, ", %.0f s on this machine", r.ElapsedS)
	}
	b.WriteString(" (`make compat`; counts are top-level tests or smoke checks).\n\n")
	b.WriteString("| client | version | suite | passed | failed | skipped |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Suites {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d |\n", s.Client, s.Version, s.Suite, s.Passed, s.Failed, s.Skipped)
	}
	if fails := grouped(r, func(s Suite) []Outcome { return s.Failures }); len(fails) > 0 {
		b.WriteString("\nRemaining failures:\n\n" + strings.Join(fails, "\n") + "\n")
	}
	if skips := grouped(r, func(s Suite) []Outcome { return s.Skips }); len(skips) > 0 {
		b.WriteString("\nSkipped:\n\n" + strings.Join(skips, "\n") + "\n")
	}
	s = s[:i] + b.String() + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// grouped returns one README line per suite and reason, listing the
// top-level tests (a subtest's failure is carried by its parent).
func grouped(r *Results, pick func(Suite) []Outcome) []string {
	var lines []string
	for _, s := range r.Suites {
		var reasons []string
		tests := map[string][]string{}
		for _, o := range pick(s) {
			if strings.Contains(o.Test, "/") {
				continue
			}
			why := orUnexplained(o.Reason)
			if _, ok := tests[why]; !ok {
				reasons = append(reasons, why)
			}
			tests[why] = append(tests[why], "`"+o.Test+"`")
		}
		// Outcomes come in the order the suite reported them, which varies
		// between runs of parallel tests: sort so that the README block only
		// changes when the results do.
		sort.Strings(reasons)
		for _, why := range reasons {
			sort.Strings(tests[why])
			lines = append(lines, fmt.Sprintf("- %s %s: %s: %s", s.Client, s.Suite, strings.Join(tests[why], ", "), why))
		}
	}
	return lines
}
