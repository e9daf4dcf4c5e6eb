// Command ringplot draws PNG plots of a ringbench result file with
// gonum.org/v1/plot, next to the JSON, and can rewrite the README's
// benchmark block. It lives in the bench/peers module so the broker's
// go.mod does not carry the plotting dependencies.
//
// Usage:
//
//	ringplot [--readme README.md --table bench/results/latest.md] bench/results/<run>.json
//
// For each workload it writes <run>-<workload>.png with three panels, one
// line per target: publish (solid) and consume (dashed) MB/s over time;
// publish p99 (solid) and end-to-end p99 (dashed) latency per second over
// time; and publish (solid) and end-to-end (dashed) latency percentiles
// p50, p99, p99.9 and max over the window. <run>-summary.png shows publish
// MB/s and publish p99 per workload and target. With --readme it replaces
// the text between "<!-- bench:start -->" and "<!-- bench:end -->" with
// the --table markdown and the summary plot.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// report is the part of ringbench's JSON report that is plotted.
type report struct {
	Started string `json:"started"`
	Runs    []run  `json:"runs"`
}

type run struct {
	Workload struct {
		Name string `json:"name"`
		Acks string `json:"acks"`
	} `json:"workload"`
	Target struct {
		Name string `json:"name"`
	} `json:"target"`
	Publish struct {
		MBPS float64 `json:"mb_per_s"`
	} `json:"publish"`
	PublishLatency latency  `json:"publish_latency"`
	E2ELatency     latency  `json:"end_to_end_latency"`
	Series         []sample `json:"series"`
	Error          string   `json:"error"`
}

type latency struct {
	Count  uint64  `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p99_9_ms"`
	MaxMs  float64 `json:"max_ms"`
}

type sample struct {
	T        float64 `json:"t_s"`
	PubMBPS  float64 `json:"pub_mb_per_s"`
	ConsMBPS float64 `json:"cons_mb_per_s"`
	PubP99Ms float64 `json:"pub_p99_ms"`
	E2EP99Ms float64 `json:"e2e_p99_ms"`
}

func main() {
	readme := flag.String("readme", "", "README to rewrite between <!-- bench:start --> and <!-- bench:end -->")
	table := flag.String("table", "", "markdown table for the README block (ringbench's latest.md)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: ringplot [--readme README.md --table latest.md] result.json")
		os.Exit(2)
	}
	if err := run1(flag.Arg(0), *readme, *table); err != nil {
		fmt.Fprintln(os.Stderr, "ringplot:", err)
		os.Exit(1)
	}
}

func run1(path, readme, table string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read report: %w", err)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("cannot parse report %q: %w", path, err)
	}
	base := strings.TrimSuffix(path, filepath.Ext(path))
	var workloads, targets []string
	byWT := map[[2]string]*run{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		w, t := r.Workload.Name, r.Target.Name
		if !contains(workloads, w) {
			workloads = append(workloads, w)
		}
		if !contains(targets, t) {
			targets = append(targets, t)
		}
		byWT[[2]string{w, t}] = r
	}
	var written []string
	for _, w := range workloads {
		var runs []*run
		for _, t := range targets {
			if r := byWT[[2]string{w, t}]; r != nil {
				runs = append(runs, r)
			}
		}
		out := base + "-" + fileName(w) + ".png"
		if err := workloadPNG(out, w, runs, targets); err != nil {
			return err
		}
		written = append(written, out)
	}
	summary := base + "-summary.png"
	if err := summaryPNG(summary, workloads, targets, byWT); err != nil {
		return err
	}
	written = append(written, summary)
	fmt.Fprintf(os.Stderr, "wrote %s\n", strings.Join(written, " "))
	if readme != "" {
		return rewriteReadme(readme, table, path, summary, written[:len(written)-1])
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var nonName = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

func fileName(s string) string { return nonName.ReplaceAllString(s, "-") }

// colorOf gives each target the same color in every plot.
func colorOf(targets []string, t string) color.Color {
	for i, x := range targets {
		if x == t {
			return plotutil.Color(i)
		}
	}
	return color.Black
}

// shortName trims a target name for legends.
func shortName(t string) string {
	t = strings.ReplaceAll(t, "io.engine=", "")
	t = strings.ReplaceAll(t, "log.io.mode=", "")
	return t
}

// addLine adds xys as a line in c, dashed when dashed, with a legend entry
// when legend is not empty. Points with a non-positive y are dropped on a
// log axis.
func addLine(p *plot.Plot, xys plotter.XYs, c color.Color, dashed bool, legend string, logY bool) error {
	if logY {
		kept := xys[:0:0]
		for _, xy := range xys {
			if xy.Y > 0 {
				kept = append(kept, xy)
			}
		}
		xys = kept
	}
	if len(xys) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	s.Color = c
	s.Radius = vg.Points(1.5)
	p.Add(l, s)
	if legend != "" {
		p.Legend.Add(legend, l)
	}
	return nil
}

func logAxis(p *plot.Plot) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
}

func workloadPNG(out, workload string, runs []*run, targets []string) error {
	tp := plot.New()
	tp.Title.Text = workload + ": throughput (publish solid, consume dashed)"
	tp.X.Label.Text = "seconds since the window opened"
	tp.Y.Label.Text = "MB/s"
	lp := plot.New()
	lp.Title.Text = "latency per second (publish p99 solid, end-to-end p99 dashed)"
	lp.X.Label.Text = "seconds since the window opened"
	lp.Y.Label.Text = "ms (log)"
	logAxis(lp)
	pp := plot.New()
	pp.Title.Text = "latency percentiles over the window (publish solid, end-to-end dashed)"
	pp.Y.Label.Text = "ms (log)"
	logAxis(pp)
	pp.NominalX("p50", "p99", "p99.9", "max")
	for _, p := range []*plot.Plot{tp, lp, pp} {
		p.Legend.Top = true
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
	}
	pp.Legend.Left = true
	for _, r := range runs {
		c := colorOf(targets, r.Target.Name)
		name := shortName(r.Target.Name)
		var pub, cons, pl, el plotter.XYs
		for _, s := range r.Series {
			pub = append(pub, plotter.XY{X: s.T, Y: s.PubMBPS})
			cons = append(cons, plotter.XY{X: s.T, Y: s.ConsMBPS})
			if s.T > 0 {
				pl = append(pl, plotter.XY{X: s.T, Y: s.PubP99Ms})
				el = append(el, plotter.XY{X: s.T, Y: s.E2EP99Ms})
			}
		}
		if err := addLine(tp, pub, c, false, name, false); err != nil {
			return err
		}
		if err := addLine(tp, cons, c, true, "", false); err != nil {
			return err
		}
		if err := addLine(lp, pl, c, false, name, true); err != nil {
			return err
		}
		if err := addLine(lp, el, c, true, "", true); err != nil {
			return err
		}
		pct := func(l latency) plotter.XYs {
			if l.Count == 0 {
				return nil
			}
			return plotter.XYs{{X: 0, Y: l.P50Ms}, {X: 1, Y: l.P99Ms}, {X: 2, Y: l.P999Ms}, {X: 3, Y: l.MaxMs}}
		}
		if err := addLine(pp, pct(r.PublishLatency), c, false, name, true); err != nil {
			return err
		}
		if err := addLine(pp, pct(r.E2ELatency), c, true, "", true); err != nil {
			return err
		}
	}
	tp.Y.Min = 0
	headroom(tp, lp, pp)
	return savePNG(out, [][]*plot.Plot{{tp}, {lp}, {pp}}, 22*vg.Centimeter, 30*vg.Centimeter)
}

func summaryPNG(out string, workloads, targets []string, byWT map[[2]string]*run) error {
	tp := plot.New()
	tp.Title.Text = "publish MB/s per workload"
	tp.Y.Label.Text = "MB/s"
	lp := plot.New()
	lp.Title.Text = "publish latency p99 per workload"
	lp.Y.Label.Text = "ms (log)"
	logAxis(lp)
	for _, p := range []*plot.Plot{tp, lp} {
		p.NominalX(workloads...)
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
	}
	n := len(targets)
	barW := vg.Points(math.Max(3, 60/float64(n)))
	for ti, t := range targets {
		c := colorOf(targets, t)
		vals := make(plotter.Values, len(workloads))
		var lat plotter.XYs
		for wi, w := range workloads {
			if r := byWT[[2]string{w, t}]; r != nil {
				vals[wi] = r.Publish.MBPS
				if r.PublishLatency.P99Ms > 0 {
					// Spread targets around the workload's tick.
					lat = append(lat, plotter.XY{X: float64(wi) + (float64(ti)-float64(n-1)/2)*0.08, Y: r.PublishLatency.P99Ms})
				}
			}
		}
		b, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return err
		}
		b.Color = c
		b.LineStyle.Width = 0
		b.Offset = barW * vg.Length(float64(ti)-float64(n-1)/2)
		tp.Add(b)
		tp.Legend.Add(shortName(t), b)
		if len(lat) > 0 {
			s, err := plotter.NewScatter(lat)
			if err != nil {
				return err
			}
			s.Color = c
			s.Shape = draw.CircleGlyph{}
			s.Radius = vg.Points(4)
			lp.Add(s)
			lp.Legend.Add(shortName(t), s)
		}
	}
	headroom(tp, lp)
	return savePNG(out, [][]*plot.Plot{{tp}, {lp}}, 26*vg.Centimeter, 22*vg.Centimeter)
}

// headroom raises each plot's Y maximum so the legend, drawn at the top,
// does not cover the data: by a third on a linear axis, 5x on a log axis.
func headroom(ps ...*plot.Plot) {
	for _, p := range ps {
		if _, ok := p.Y.Scale.(plot.LogScale); ok {
			if p.Y.Max > 0 {
				p.Y.Max *= 5
			}
			continue
		}
		p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)*1.35
	}
}

func savePNG(out string, plots [][]*plot.Plot, w, h vg.Length) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	// White background.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	t := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 5}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", out, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %q: %w", out, err)
	}
	return f.Close()
}

const (
	startMark = "<!-- bench:start -->"
	endMark   = "<!-- bench:end -->"
)

// rewriteReadme replaces the README's bench block with the table, the
// summary plot and links to the per-workload plots, paths relative to the
// README.
func rewriteReadme(readme, table, jsonPath, summary string, plots []string) error {
	old, err := os.ReadFile(readme)
	if err != nil {
		return fmt.Errorf("cannot read README: %w", err)
	}
	i := bytes.Index(old, []byte(startMark))
	j := bytes.Index(old, []byte(endMark))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s block", readme, startMark, endMark)
	}
	var tbl []byte
	if table != "" {
		if tbl, err = os.ReadFile(table); err != nil {
			return fmt.Errorf("cannot read table: %w", err)
		}
	}
	dir := filepath.Dir(readme)
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	var b bytes.Buffer
	b.WriteString(startMark + "\n")
	fmt.Fprintf(&b, "Latest `make bench` run ([%s](%s)); this block is rewritten by `bench/run-short.sh`.\n\n", filepath.Base(jsonPath), rel(jsonPath))
	b.Write(bytes.TrimSpace(tbl))
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "![publish MB/s and p99 per workload and target](%s)\n\n", rel(summary))
	b.WriteString("Per workload (throughput and latency over time, latency percentiles):")
	for _, p := range plots {
		name := strings.TrimSuffix(filepath.Base(p), ".png")
		name = strings.TrimPrefix(name, strings.TrimSuffix(filepath.Base(jsonPath), ".json")+"-")
		fmt.Fprintf(&b, " [%s](%s)", name, rel(p))
	}
	b.WriteString(".\n")
	var out bytes.Buffer
	out.Write(old[:i])
	out.Write(b.Bytes())
	out.Write(old[j:])
	return os.WriteFile(readme, out.Bytes(), 0o644)
}
