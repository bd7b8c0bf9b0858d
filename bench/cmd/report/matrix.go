package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// writeMatrix writes one unit of t (the suite's Matrix) as a compact table:
// a row per group, a column per implementation in order of appearance, the
// best peer's value of each row in bold (baselines are never the best).
// A cell is empty where the implementation has no value.
func writeMatrix(p *mdWriter, s suite, t Table) {
	unit := s.Matrix
	var impls []string
	for _, g := range t.Groups {
		for _, r := range g.Rows {
			if _, ok := r.Values[unit]; ok && !slices.Contains(impls, r.Impl) {
				impls = append(impls, r.Impl)
			}
		}
	}
	dir := "lower is better"
	if higherIsBetter[unit] {
		dir = "higher is better"
	}
	note := fmt.Sprintf("`%s` of Benchmark%s (%s; the best peer of each row in bold", unit, t.Func, dir)
	if len(s.Baselines) > 0 {
		note += "; reference points, never the best: " + strings.Join(s.Baselines, ", ")
	}
	p.line(note + ").")
	p.line("")
	head := []string{"benchmark"}
	align := []string{"---"}
	for _, im := range impls {
		name := im
		if im == "ttlkit" {
			name = "**ttlkit**"
		}
		if slices.Contains(s.Baselines, im) {
			name += " (ref)"
		}
		head, align = append(head, name), append(align, "---:")
	}
	p.line("| " + strings.Join(head, " | ") + " |")
	p.line("| " + strings.Join(align, " | ") + " |")
	for _, g := range t.Groups {
		_, best := ratiosFor(g, unit, s.Baselines, refImpl)
		cells := []string{mdEscape(g.Name)}
		for _, im := range impls {
			v := math.NaN()
			for _, r := range g.Rows {
				if x, ok := r.Values[unit]; ok && r.Impl == im {
					v = x
				}
			}
			c := ""
			if !math.IsNaN(v) {
				c = formatNumber(v)
				if im == best {
					c = "**" + c + "**"
				}
			}
			cells = append(cells, c)
		}
		p.line("| " + strings.Join(cells, " | ") + " |")
	}
	p.line("")
}
