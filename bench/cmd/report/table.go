package main

import (
	"math"
	"slices"
	"sort"
)

// A Table is one benchmark function's results: one Group per distinct name
// without the implementation, one Row per implementation in it. Functions,
// groups and implementations keep the order of their first appearance in
// the output, which is the order the benchmarks ran them in.
type Table struct {
	Func   string   // benchmark function without "Benchmark", e.g. "Wheel"
	Units  []string // the columns, in display order (see orderUnits)
	Groups []Group
}

// A Group is the implementations compared side by side under one name.
type Group struct {
	Name string // e.g. "SetTimer/pending=1M"; "" when the name is only the function and impl
	Rows []Row
}

// Key is the group's name as charts select it: "Func/Name", or Func alone.
func (g Group) Key(fn string) string {
	if g.Name == "" {
		return fn
	}
	return fn + "/" + g.Name
}

// A Row is one implementation: the median of each unit over its samples
// (the -count repetitions).
type Row struct {
	Impl    string
	Samples int
	Values  map[string]float64 // absent: the implementation did not report it
}

// buildTables groups results by function, group and implementation and
// takes the median of repeated samples.
func buildTables(results []Result) []Table {
	type key struct{ fn, group, impl string }
	samples := map[key][]Result{}
	var tables []Table
	tableAt := map[string]int{}
	groupAt := map[[2]string]int{}
	for _, r := range results {
		fn, group, impl := splitName(r.Name)
		k := key{fn, group, impl}
		ti, ok := tableAt[fn]
		if !ok {
			ti = len(tables)
			tableAt[fn] = ti
			tables = append(tables, Table{Func: fn})
		}
		t := &tables[ti]
		gi, ok := groupAt[[2]string{fn, group}]
		if !ok {
			gi = len(t.Groups)
			groupAt[[2]string{fn, group}] = gi
			t.Groups = append(t.Groups, Group{Name: group})
		}
		if _, seen := samples[k]; !seen {
			t.Groups[gi].Rows = append(t.Groups[gi].Rows, Row{Impl: impl})
		}
		samples[k] = append(samples[k], r)
	}
	for ti := range tables {
		t := &tables[ti]
		var seenUnits []string
		for gi := range t.Groups {
			g := &t.Groups[gi]
			for ri := range g.Rows {
				row := &g.Rows[ri]
				rs := samples[key{t.Func, g.Name, row.Impl}]
				row.Samples = len(rs)
				row.Values = map[string]float64{}
				perUnit := map[string][]float64{}
				for _, r := range rs {
					for _, u := range r.Units {
						if !slices.Contains(seenUnits, u) {
							seenUnits = append(seenUnits, u)
						}
						perUnit[u] = append(perUnit[u], r.Metrics[u])
					}
				}
				for u, vs := range perUnit {
					row.Values[u] = median(vs)
				}
			}
		}
		t.Units = orderUnits(seenUnits, t)
	}
	return tables
}

// leadingUnits come first, in this order, when present; the others follow
// in the order the benchmarks reported them.
var leadingUnits = []string{"ns/op", "cpu-ns/op", "B/op", "allocs/op"}

// orderUnits puts the units of t in display order and drops ns/op when every
// row reports 0 for it: benchmarks that measure one long round report ns/op 0
// because nothing is timed per operation.
func orderUnits(seen []string, t *Table) []string {
	out := columnOrder(seen, leadingUnits)
	allZero := true
	for _, g := range t.Groups {
		for _, r := range g.Rows {
			if v, ok := r.Values["ns/op"]; ok && v != 0 {
				allZero = false
			}
		}
	}
	if allZero {
		out = slices.DeleteFunc(out, func(u string) bool { return u == "ns/op" })
	}
	return out
}

// median returns the median of vs (the mean of the middle two for an even
// count); NaN for none. vs is not modified.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// higherIsBetter lists the units where a larger value is the better one;
// every other unit is a cost.
var higherIsBetter = map[string]bool{
	"hit%": true, "held": true, "hit-ratio": true, "MB/s": true, "ops/s": true,
	"runs/s": true, "jobs/s": true, "cancels/s": true,
}

// Ratios are one row's value of the ratio unit divided by the best peer's
// and by the reference implementation's (go-zero's) value in its group. A
// NaN field means it is undefined: the row or the reference lacks the unit,
// or the divisor is 0.
type Ratios struct {
	ToBest, ToRef float64
}

// ratiosFor computes Ratios for every row of g on unit. The best peer is
// the best value among the rows that are not baselines (reference points
// such as the floor, which are not usable implementations); if every row is
// a baseline, all rows count. ref names the reference implementation.
func ratiosFor(g Group, unit string, baselines []string, ref string) (map[string]Ratios, string) {
	best, bestImpl := math.NaN(), ""
	for pass := 0; pass < 2 && bestImpl == ""; pass++ {
		for _, r := range g.Rows {
			if pass == 0 && slices.Contains(baselines, r.Impl) {
				continue
			}
			v, ok := r.Values[unit]
			if !ok || math.IsNaN(v) {
				continue
			}
			if bestImpl == "" || better(unit, v, best) {
				best, bestImpl = v, r.Impl
			}
		}
	}
	refV := math.NaN()
	for _, r := range g.Rows {
		if r.Impl == ref {
			if v, ok := r.Values[unit]; ok {
				refV = v
			}
		}
	}
	out := map[string]Ratios{}
	for _, r := range g.Rows {
		v, ok := r.Values[unit]
		if !ok {
			v = math.NaN()
		}
		out[r.Impl] = Ratios{ToBest: ratio(v, best), ToRef: ratio(v, refV)}
	}
	return out, bestImpl
}

func better(unit string, a, b float64) bool {
	if higherIsBetter[unit] {
		return a > b
	}
	return a < b
}

// ratio is a/b, NaN when either is NaN or b is 0 (1 when both are 0).
func ratio(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case b == 0 && a == 0:
		return 1
	case b == 0:
		return math.NaN()
	}
	return a / b
}

// ratioUnit returns the first of candidates that some row of t reports.
func ratioUnit(t Table, candidates []string) string {
	for _, c := range candidates {
		if slices.Contains(t.Units, c) {
			return c
		}
	}
	return ""
}
