package main

import (
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
)

// A report is everything doc/benchmarks.md is written from.
type report struct {
	Quick   bool
	Count   int
	Command string // the report tool's own command line, from bench/
	// ReplayCommand is the command that rendered the report from saved
	// output; "" when the report was written by the run that measured it.
	ReplayCommand string
	Machine       machine
	Runs          []*suiteRun
	Charts        map[string][]renderedChart // by suite ID, in suite order
	// Sources maps benchmark function names (see sourceKey) to their file,
	// relative to bench/; nil when the sources could not be read.
	Sources map[string]string
}

// A renderedChart is a chart with data, ready to be written to img/.
type renderedChart struct {
	File, Title string
	SVG         []byte
}

// unitAbout describes units on chart axes; units not listed are shown as is.
var unitAbout = map[string]string{
	"ns/op":       "wall ns per operation",
	"cpu-ns/op":   "process CPU ns per operation",
	"cpu-ns/msg":  "server CPU ns per message",
	"B/pending":   "heap bytes per pending timer",
	"B/entry":     "heap bytes per entry",
	"MiB-held":    "MiB of heap held",
	"cpu-ms/s":    "CPU ms per second of wall time",
	"reclaim-ms":  "ms after the last deadline",
	"p99-call-us": "p99 call latency, µs",
}

func describeUnit(u string) string {
	if d, ok := unitAbout[u]; ok {
		return d + " (" + u + ")"
	}
	return u
}

// palette colours implementations in order of first appearance in the
// report, so that one name has one colour in every chart. ttlkit and the
// reference get fixed colours, baselines grey.
// Twelve colours, none close to ttlkit's blue, go-zero's orange or the
// baselines' grey: the hit-ratio suite alone compares ten caches.
var palette = []string{"#009e73", "#e69f00", "#cc79a7", "#56b4e9", "#8c6d31", "#6a3d9a", "#b15928", "#332288",
	"#999933", "#882255", "#44aa99", "#f0e442"}

type colors struct {
	byName map[string]string
	next   int
}

func (c *colors) of(name string, baseline bool) string {
	if c.byName == nil {
		c.byName = map[string]string{"ttlkit": "#0072b2", refImpl: "#d55e00"}
	}
	if col, ok := c.byName[name]; ok {
		return col
	}
	col := "#9a9a9a"
	if !baseline {
		col = palette[c.next%len(palette)]
		c.next++
	}
	c.byName[name] = col
	return col
}

// buildChart draws ch from a suite's tables; ok is false when none of the
// selected groups has a value of the chart's units.
func buildChart(s suite, ch chart, tables []Table, col *colors) (*BarChart, bool) {
	var sel *regexp.Regexp
	if ch.Groups != "" {
		sel = regexp.MustCompile(ch.Groups)
	}
	if ch.UnitSeries {
		return buildUnitSeriesChart(s, ch, sel, tables, col)
	}
	bc := newBarChart(ch)
	type block struct {
		label string
		rows  []Row
		unit  string
	}
	var blocks []block
	var groups []string
	for _, t := range tables {
		for _, g := range t.Groups {
			key := g.Key(t.Func)
			if sel != nil && !sel.MatchString(key) {
				continue
			}
			groups = append(groups, strings.TrimPrefix(key, ch.Trim))
			for _, u := range ch.Units {
				blocks = append(blocks, block{groups[len(groups)-1], g.Rows, u})
			}
		}
	}
	// A block nobody reports the unit in is dropped; so is a chart left
	// with no block.
	blocks = slices.DeleteFunc(blocks, func(b block) bool {
		for _, r := range b.rows {
			if _, ok := r.Values[b.unit]; ok {
				return false
			}
		}
		return true
	})
	if len(blocks) == 0 {
		return nil, false
	}
	if len(ch.Units) > 1 {
		// Several units: one group is labelled by unit alone, several by
		// group and unit.
		for i := range blocks {
			if len(groups) == 1 {
				blocks[i].label = blocks[i].unit
			} else {
				blocks[i].label += " · " + blocks[i].unit
			}
		}
	}
	var impls []string
	for _, b := range blocks {
		bc.Groups = append(bc.Groups, b.label)
		for _, r := range b.rows {
			if !slices.Contains(impls, r.Impl) {
				impls = append(impls, r.Impl)
			}
		}
	}
	for _, impl := range impls {
		name := impl
		if name == "" {
			name = "(no impl)"
		}
		se := Series{Name: name, Color: col.of(impl, slices.Contains(s.Baselines, impl))}
		for _, b := range blocks {
			v := math.NaN()
			for _, r := range b.rows {
				if r.Impl == impl {
					if x, ok := r.Values[b.unit]; ok {
						v = x
					}
				}
			}
			se.Values = append(se.Values, v)
		}
		if slices.ContainsFunc(se.Values, func(v float64) bool { return !math.IsNaN(v) }) {
			bc.Series = append(bc.Series, se) // not in the legend without a bar
		}
	}
	return bc, true
}

func newBarChart(ch chart) *BarChart {
	bc := &BarChart{Title: ch.Title, Log: ch.Log, Axis: ch.Axis, Subtitle: "lower is better"}
	if bc.Axis == "" {
		bc.Axis = describeUnit(ch.Units[0])
	}
	if higherIsBetter[ch.Units[0]] {
		bc.Subtitle = "higher is better"
	}
	return bc
}

// buildUnitSeriesChart draws a chart.UnitSeries chart: one block per
// selected group, one series per unit.
func buildUnitSeriesChart(s suite, ch chart, sel *regexp.Regexp, tables []Table, col *colors) (*BarChart, bool) {
	bc := newBarChart(ch)
	var groups []Group
	for _, t := range tables {
		for _, g := range t.Groups {
			if key := g.Key(t.Func); sel == nil || sel.MatchString(key) {
				groups = append(groups, g)
				bc.Groups = append(bc.Groups, strings.TrimPrefix(key, ch.Trim))
			}
		}
	}
	for _, u := range ch.Units {
		name := strings.TrimSuffix(u, ch.SeriesTrim)
		se := Series{Name: name, Color: col.of(name, slices.Contains(s.Baselines, name))}
		has := false
		for _, g := range groups {
			v := math.NaN()
			for _, r := range g.Rows {
				if x, ok := r.Values[u]; ok {
					v, has = x, true
					break
				}
			}
			se.Values = append(se.Values, v)
		}
		if has {
			bc.Series = append(bc.Series, se)
		}
	}
	return bc, len(bc.Series) > 0
}

// formatNumber prints a measured value with three or four significant
// digits, never in exponent notation.
func formatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v == math.Trunc(v) && a < 1e15:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return smallNumber(v, 3)
}

// smallNumber prints v, |v| < 1, with sig significant digits in fixed
// notation and no trailing zeros: 0.5, 0.0123, -0.000078.
func smallNumber(v float64, sig int) string {
	if v == 0 {
		return "0"
	}
	decimals := min(sig-1-int(math.Floor(math.Log10(math.Abs(v)))), 12)
	s := strings.TrimRight(fmt.Sprintf("%.*f", decimals, v), "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

func formatRatio(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return "—"
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 0.1 || r == 0:
		return fmt.Sprintf("%.2f×", r)
	}
	return smallNumber(r, 2) + "×"
}

// noisyNote is printed under the machine description of every report.
const noisyNote = "The machine is shared with other work and has few cores, so absolute times move from run to run " +
	"(by tens of percent where the garbage collector is involved). Compare implementations by their ratios: every " +
	"implementation of a suite runs side by side in one process, under the same conditions. Prefer `cpu-ns/op` " +
	"(process CPU from getrusage) to `ns/op`: time other processes take does not inflate it, and it counts the work " +
	"an implementation moves to other goroutines."

// generatedMarker is the first line of every page the tool writes.
const generatedMarker = "<!-- Code generated by bench/cmd/report. DO NOT EDIT. -->"

// writeMarkdown writes doc/benchmarks.md.
func writeMarkdown(w io.Writer, rep *report) error {
	p := &mdWriter{w: w}
	writeHead(p, rep)
	writeMachine(p, rep)
	p.line("## Suites")
	p.line("")
	p.line(suitesTableHead)
	for _, r := range rep.Runs {
		p.line(suiteRow(r))
	}
	p.line("")
	for _, r := range rep.Runs {
		writeSuite(p, rep, r, "")
	}
	return p.err
}

// writeHead writes everything above the machine table.
func writeHead(p *mdWriter, rep *report) {
	p.line(generatedMarker)
	p.line("")
	p.line("# Benchmarks")
	p.line("")
	p.line("Everything on this page, every number, table and chart, is produced by `bench/cmd/report` from the " +
		"output of `go test -bench`; nothing is edited by hand. Regenerate it with:")
	p.line("")
	p.line("```sh")
	p.line("cd bench && " + rep.Command)
	p.line("```")
	p.line("")
	if rep.ReplayCommand != "" {
		p.line("This copy was rendered from that run's saved output by `" + rep.ReplayCommand + "`.")
		p.line("")
	}
	if rep.Quick {
		p.line("**Quick mode** (`-quick`: `-short` sizes, tiny benchtimes): a smoke test of the report tool. " +
			"These numbers say nothing about performance.")
		p.line("")
	}
	p.line("The metrics are defined in [bench/README.md](../bench/README.md#metrics) and in the doc comment of each " +
		"benchmark, whose file is linked from its table. Ratios: `× best` divides by the best peer in the same group (baselines excluded), " +
		"`× " + refImpl + "` by go-zero v1.10.3; below 1 is better than it for every unit here except `hit%` and `held`.")
	p.line("")
}

func writeMachine(p *mdWriter, rep *report) {
	m := rep.Machine
	p.line("## Machine")
	p.line("")
	p.line("| | |")
	p.line("| --- | --- |")
	cpu := m.CPU
	if m.CPUTesting != "" && m.CPUTesting != m.CPU {
		cpu += " (go test reports: " + m.CPUTesting + ")"
	}
	p.row("CPU", cpu)
	p.row("cores", fmt.Sprint(m.Cores))
	procs := "not known (no results)"
	if ps := benchProcs(rep.Runs); len(ps) > 0 {
		procs = joinInts(ps) + " (the benchmarks' TestMain sets it; read from the -N suffix of their names)"
	}
	if m.EnvProcs != "" {
		procs += "; GOMAXPROCS=" + m.EnvProcs + " in the environment"
	}
	p.row("GOMAXPROCS", procs)
	p.row("OS", m.OS)
	p.row("Go", m.GoVersion)
	if m.Commit != "" {
		p.row("commit", "`"+m.Commit+"` (the working tree may hold uncommitted changes)")
	}
	p.row("date", m.Start.UTC().Format("2006-01-02 15:04 MST")+", the whole run took "+m.End.Sub(m.Start).Round(time.Second).String())
	if m.LoadStart != "" {
		p.row("load average", "at start "+m.LoadStart+"; at end "+m.LoadEnd)
	}
	p.line("")
	p.line(noisyNote)
	p.line("")
}

// suitesTableHead is the head of the table of suites, two lines.
const suitesTableHead = "| suite | status | time | command (from `bench/`) |\n| --- | --- | ---: | --- |"

// suiteRow is r's row in the table of suites.
func suiteRow(r *suiteRun) string { return suiteRowNote(r, "") }

// suiteRowNote is r's row with note in parentheses after its status.
func suiteRowNote(r *suiteRun, note string) string {
	status := r.Status.String()
	if r.Note != "" {
		status += ": " + r.Note
	}
	if note != "" {
		status += " (" + note + ")"
	}
	elapsed := "—"
	if r.Elapsed > 0 {
		elapsed = r.Elapsed.String()
	}
	return fmt.Sprintf("| [%s](#%s) | %s | %s | `%s` |", r.Suite.ID, anchor(r.Suite.Title), mdEscape(status), elapsed, r.Command())
}

// writeSuite writes r's section. runLine, when not "", follows the
// command: the page splices sections from several runs (-only), and it
// says which run measured this one.
func writeSuite(p *mdWriter, rep *report, r *suiteRun, runLine string) {
	s := r.Suite
	p.line("## " + s.Title)
	p.line("")
	p.line(s.About)
	p.line("")
	p.line("```sh")
	p.line(r.Command())
	p.line("```")
	p.line("")
	if runLine != "" {
		p.line(runLine)
		p.line("")
	}
	if r.Status != StatusOK {
		p.line("**" + cases(r.Status.String()) + "**: " + mdEscape(r.Note) + ".")
		p.line("")
		if r.Detail != "" {
			p.line("```")
			p.line(r.Detail)
			p.line("```")
			p.line("")
		}
	}
	if r.Output != nil {
		for _, n := range r.Output.Notes {
			p.line("> " + n)
			p.line("")
		}
	}
	for _, ch := range rep.Charts[s.ID] {
		p.line(fmt.Sprintf("![%s](img/%s)", ch.Title, ch.File))
		p.line("")
	}
	for _, t := range r.Tables {
		if s.Matrix != "" && slices.Contains(t.Units, s.Matrix) {
			writeMatrix(p, s, t)
			p.line("<details><summary>Every figure of Benchmark" + t.Func + "</summary>")
			p.line("")
			writeTable(p, rep, s, t)
			p.line("</details>")
			p.line("")
			continue
		}
		writeTable(p, rep, s, t)
	}
}

func cases(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func writeTable(p *mdWriter, rep *report, s suite, t Table) {
	name := "Benchmark" + t.Func
	if file, ok := rep.Sources[sourceKey(s.Dir, name)]; ok {
		p.line(fmt.Sprintf("### %s ([%s](%s))", name, path.Base(file), path.Join("../bench", file)))
	} else {
		p.line("### " + name)
	}
	p.line("")
	t.Units = columnOrder(t.Units, s.Columns)
	unit := ratioUnit(t, s.Ratio)
	hasRef := false
	hasGroups, hasImpls := false, false
	maxSamples := 0
	for _, g := range t.Groups {
		hasGroups = hasGroups || g.Name != ""
		for _, row := range g.Rows {
			hasImpls = hasImpls || row.Impl != ""
		}
		for _, row := range g.Rows {
			hasRef = hasRef || row.Impl == refImpl
			maxSamples = max(maxSamples, row.Samples)
		}
	}
	var notes []string
	if unit != "" {
		dir := "lower is better"
		if higherIsBetter[unit] {
			dir = "higher is better"
		}
		n := "Ratios on `" + unit + "` (" + dir + ")"
		if len(s.Baselines) > 0 {
			n += "; baselines, never the best peer: " + strings.Join(s.Baselines, ", ")
		}
		notes = append(notes, n+".")
	}
	if maxSamples > 1 {
		notes = append(notes, fmt.Sprintf("Each figure is the median of %d runs.", maxSamples))
	}
	if len(notes) > 0 {
		p.line(strings.Join(notes, " "))
		p.line("")
	}
	var head, align []string
	if hasGroups {
		head, align = append(head, "benchmark"), append(align, "---")
	}
	if hasImpls {
		head, align = append(head, "impl"), append(align, "---")
	}
	for _, u := range t.Units {
		head, align = append(head, "`"+u+"`"), append(align, "---:")
	}
	if unit != "" {
		head, align = append(head, "× best"), append(align, "---:")
		if hasRef {
			head, align = append(head, "× "+refImpl), append(align, "---:")
		}
	}
	p.line("| " + strings.Join(head, " | ") + " |")
	p.line("| " + strings.Join(align, " | ") + " |")
	for _, g := range t.Groups {
		var rs map[string]Ratios
		bestImpl := ""
		if unit != "" {
			rs, bestImpl = ratiosFor(g, unit, s.Baselines, refImpl)
		}
		for i, row := range g.Rows {
			var cells []string
			if hasGroups {
				name := ""
				if i == 0 {
					name = mdEscape(g.Name)
				}
				cells = append(cells, name)
			}
			if hasImpls {
				impl := row.Impl
				if impl == "" {
					impl = "—"
				}
				if row.Impl == "ttlkit" {
					impl = "**" + impl + "**"
				}
				if slices.Contains(s.Baselines, row.Impl) {
					impl += " (baseline)"
				}
				cells = append(cells, impl)
			}
			for _, u := range t.Units {
				v, ok := row.Values[u]
				if !ok {
					cells = append(cells, "")
					continue
				}
				cells = append(cells, formatNumber(v))
			}
			if unit != "" {
				best := formatRatio(rs[row.Impl].ToBest)
				if row.Impl == bestImpl {
					best = "**" + best + "**"
				}
				cells = append(cells, best)
				if hasRef {
					cells = append(cells, formatRatio(rs[row.Impl].ToRef))
				}
			}
			p.line("| " + strings.Join(cells, " | ") + " |")
		}
	}
	p.line("")
}

// columnOrder returns units with those listed in first moved to the front,
// in first's order; the others keep their order. units is not modified.
func columnOrder(units, first []string) []string {
	out := make([]string, 0, len(units))
	for _, u := range first {
		if slices.Contains(units, u) {
			out = append(out, u)
		}
	}
	for _, u := range units {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// anchor is GitHub's heading anchor for a heading text: lower case, spaces
// to hyphens, punctuation other than hyphens and underscores dropped.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

type mdWriter struct {
	w   io.Writer
	err error
}

func (p *mdWriter) line(s string) {
	if p.err == nil {
		_, p.err = io.WriteString(p.w, s+"\n")
	}
}

func (p *mdWriter) row(k, v string) { p.line("| " + k + " | " + mdEscape(v) + " |") }
